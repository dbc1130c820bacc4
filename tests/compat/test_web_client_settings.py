"""The web client's settings pages, as people use them in two headless Chromium browsers: Ada, a
member, in her own settings, and the organization's owner in the organization's. Each change is
checked where it lands (the server's state through the API) and where others see it live; what a
member may not change is not offered. Every page is looked at in both themes (contrast, names of
controls, a screenshot)."""

import json
import re

import pytest
import requests

from test_web_client import Browser, quit_checking_policies, webdriver, CHROMIUM, CHROMEDRIVER
from test_web_client_day import PNG, people_site, views_hold_up

try:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select
except ImportError:  # pragma: no cover - the skip below says why
    pass

pytestmark = pytest.mark.skipif(webdriver is None or not CHROMIUM or not CHROMEDRIVER,
                                reason="needs selenium, chromium and chromedriver")


@pytest.fixture(scope="module")
def site():
    with people_site(("lobby",)) as s:
        yield s


@pytest.fixture(scope="module")
def browsers(site):
    ada, owner = Browser(), Browser()
    try:
        ada.login(site.url, "ada@example.com", "ada-password-1")
        owner.login(site.url, site.auth[0], site.owner_password)
        yield ada, owner
    finally:
        quit_checking_policies(ada, owner)


def open_section(browser, site, address):
    browser.driver.get(f"{site.url}/#{address}")
    browser.wait(lambda: browser.finds("#settings-view") and f"#{address}" in browser.driver.current_url
                 and browser.find(".settings-nav a.active").get_attribute("href").endswith(address),
                 "the settings section did not open")


def setting(browser, key):
    return browser.find(f'#settings-view [data-key="{key}"]')


def settings_of(site, auth):
    return site.api_as(auth, "POST", "register", fetch_event_types='["user_settings"]')["user_settings"]


def realm_of(site):
    return site.api("POST", "register", fetch_event_types='["realm"]')


def saved(browser, key):
    """The server took the change: the control's row is marked saved (its visible "Saved" fades
    after a few seconds, so the lasting mark is what is waited on)."""
    browser.wait(lambda: browser.js("return arguments[0].closest('.pref').dataset.state", setting(browser, key)) == "saved",
                 "the change was not saved")


def rows(browser, container):
    """Each row of a table, its cells' texts joined by spaces."""
    return [" ".join(cell.text.replace("\n", " ") for cell in r.find_elements(By.CSS_SELECTOR, "td"))
            for r in browser.finds(f"{container} tbody tr")]


def confirm(browser):
    browser.wait(lambda: browser.find("#confirm-dialog").is_displayed(), "no confirmation was asked")
    browser.find("#confirm-ok").click()
    browser.wait(lambda: not browser.find("#confirm-dialog").is_displayed(), "the confirmation stayed open")


# ---- a member's own settings ---------------------------------------------------------------------

def test_a_member_is_offered_only_what_she_may_change(site, browsers):
    ada, _ = browsers
    ada.click(lambda: ada.find("#open-settings"))
    ada.wait(lambda: ada.finds("#settings-view") and "#settings/profile" in ada.driver.current_url)
    links = [a.get_attribute("href").split("#", 1)[1] for a in ada.finds(".settings-nav a")]
    assert links == ["settings/profile", "settings/account-and-privacy", "settings/preferences", "settings/notifications",
                     "settings/alert-words", "settings/muted-users", "settings/uploaded-files", "settings/your-bots", "organization/user-groups",
                     "organization/invitations", "organization/emoji-settings"], links
    # An administrator's page typed in the address bar shows her profile instead.
    ada.driver.get(f"{site.url}/#organization/users")
    ada.wait(lambda: ada.driver.current_url.endswith("#settings/profile") and ada.find("#settings-section-title").text == "Profile")
    assert not ada.finds("#user-list")
    # ✕ goes back to where she was.
    ada.driver.get(f"{site.url}/#narrow/channel/{site.lobby}")
    ada.wait(lambda: ada.find("#narrow-title").text == "#lobby")
    ada.click(lambda: ada.find("#open-settings"))
    ada.click(lambda: ada.find("#settings-close"))
    ada.wait(lambda: ada.find("#narrow-title").text == "#lobby" and not ada.finds("#settings-view"), "✕ did not go back")
    assert ada.find("#compose").is_displayed()


def test_theme_enter_and_time_format_follow_the_preferences(site, browsers):
    ada, _ = browsers
    open_section(ada, site, "settings/preferences")
    Select(setting(ada, "color_scheme")).select_by_visible_text("Dark")
    saved(ada, "color_scheme")
    assert settings_of(site, site.ada_auth)["color_scheme"] == 2
    ada.wait(lambda: ada.js("return document.documentElement.dataset.theme") == "dark")
    dark = ada.js("return getComputedStyle(document.body).backgroundColor")
    # The page starts in her theme after a reload, whatever the system's.
    ada.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "light"}]})
    ada.driver.refresh()
    ada.wait(lambda: ada.finds("#settings-view"))
    assert ada.js("return getComputedStyle(document.body).backgroundColor") == dark
    ada.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})

    # Ctrl+Enter sends; Enter adds a line.
    Select(setting(ada, "enter_sends")).select_by_visible_text("Ctrl+Enter sends, Enter adds a line")
    saved(ada, "enter_sends")
    ada.driver.get(f"{site.url}/#narrow/channel/{site.lobby}/topic/keys")
    area = ada.wait(lambda: ada.find("#compose-text"))
    area.send_keys("line one", Keys.ENTER, "line two")
    assert area.get_attribute("value") == "line one\nline two"
    assert ada.find("#compose-hint").get_attribute("textContent") == "Ctrl+Enter sends, Enter adds a line."
    area.send_keys(Keys.CONTROL, Keys.ENTER)
    ada.wait(lambda: ada.message("line two"), "Ctrl+Enter did not send")

    # A change made on another device shows at once.
    open_section(ada, site, "settings/preferences")
    site.api_as(site.ada_auth, "PATCH", "settings", enter_sends="true", twenty_four_hour_time="true", color_scheme="1")
    ada.wait(lambda: Select(setting(ada, "twenty_four_hour_time")).first_selected_option.text == "24-hour (17:00)"
             and Select(setting(ada, "enter_sends")).first_selected_option.text.startswith("Enter sends")
             and ada.js("return document.documentElement.dataset.theme") == "",
             "the preferences did not follow a change made elsewhere")
    views_hold_up(ada, "settings-preferences")


def test_notifications_alert_words_and_muted_users(site, browsers):
    ada, _ = browsers
    open_section(ada, site, "settings/notifications")
    box = setting(ada, "enable_offline_email_notifications")
    assert box.is_selected()
    box.click()
    saved(ada, "enable_offline_email_notifications")
    assert settings_of(site, site.ada_auth)["enable_offline_email_notifications"] is False
    Select(setting(ada, "email_notifications_batching_period_seconds")).select_by_visible_text("10 minutes")
    saved(ada, "email_notifications_batching_period_seconds")
    assert settings_of(site, site.ada_auth)["email_notifications_batching_period_seconds"] == 600
    views_hold_up(ada, "settings-notifications")

    open_section(ada, site, "settings/alert-words")
    ada.find("#alert-word").send_keys("pineapple", Keys.ENTER)
    ada.wait(lambda: rows(ada, "#alert-word-list") == ["pineapple Remove"], "the word is not listed")
    assert site.api_as(site.ada_auth, "GET", "users/me/alert_words")["alert_words"] == ["pineapple"]
    ripe = site.api_as(site.bob_auth, "POST", "messages", type="stream", to="lobby", topic="fruit", content="The pineapple is ripe")["id"]
    ada.click(lambda: ada.find('#alert-word-list button[aria-label="Remove pineapple"]'))
    ada.wait(lambda: not ada.finds("#alert-word-list tbody tr"), "the removed word is still listed")
    assert site.api_as(site.ada_auth, "GET", "users/me/alert_words")["alert_words"] == []

    # Bob muted from his card is listed, and unmuted from the list.
    ada.driver.get(f"{site.url}/#narrow/channel/{site.lobby}/topic/fruit")
    ada.wait(lambda: ada.message("ripe"))
    ada.click(lambda: ada.message("ripe").find_element(By.CSS_SELECTOR, ".sender"))
    ada.wait(lambda: ada.find("#user-card").is_displayed(), "Bob's card did not open")
    ada.click(lambda: [b for b in ada.finds("#user-card .card-actions button") if b.text == "Mute"][0])
    ada.wait(lambda: not ada.find("#user-card").is_displayed())
    # His message is hidden behind a click, with his name and picture, as in Zulip.
    row = f'#message-list .msg[data-id="{ripe}"]'
    content = row + " .content"
    ada.wait(lambda: "hidden because you have muted the sender" in ada.find(content).text, "the muted sender's message is shown")
    assert "ripe" not in ada.find(content).text
    assert ada.find(row + " .sender").text == "Muted user"
    assert ada.finds(row + " .muted-avatar") and not ada.finds(row + " img.avatar")
    # He leaves the people list, and a direct message of his own shows nowhere but in his
    # conversation, asked for by name.
    ada.wait(lambda: not [p for p in ada.finds("#people .person .name") if p.text == "Bob"], "Bob is still in the people list")
    ada.driver.get(f"{site.url}/#")
    ada.wait(lambda: ada.find("#narrow-title").text == "All messages" and ada.finds("#message-list .msg"), "All messages is empty")
    aside = site.api_as(site.bob_auth, "POST", "messages", type="direct", to=f"[{site.ada}]", content="psst, about the pineapple")["id"]
    # Events come in order: once this later message is in the list, his has been through too.
    later = site.api_as(site.ada_auth, "POST", "messages", type="stream", to="lobby", topic="fruit", content="After the aside")["id"]
    ada.wait(lambda: ada.finds(f'#message-list .msg[data-id="{later}"]'), "a live message did not arrive")
    assert not ada.finds(f'#message-list .msg[data-id="{aside}"]')
    assert "Bob" not in ada.find("#left .nav.dms").text
    ada.driver.get(f"{site.url}/#narrow/dm/{site.bob}")
    ada.wait(lambda: ada.finds(f'#message-list .msg[data-id="{aside}"]'), "Bob's own conversation does not show his message")
    ada.driver.get(f"{site.url}/#narrow/channel/{site.lobby}/topic/fruit")
    ada.wait(lambda: ada.finds(content + " button"))
    ada.click(lambda: ada.find(content + " button"))
    ada.wait(lambda: "The pineapple is ripe" in ada.find(content).text, "the hidden message did not show when asked")
    assert ada.find(row + " .sender").text == "Bob"
    open_section(ada, site, "settings/muted-users")
    ada.wait(lambda: len(ada.finds("#muted-user-list tbody tr")) == 1 and "Bob" in rows(ada, "#muted-user-list")[0])
    views_hold_up(ada, "settings-muted-users")
    ada.click(lambda: ada.find('#muted-user-list button[aria-label="Unmute Bob"]'))
    ada.wait(lambda: not ada.finds("#muted-user-list tbody tr"), "Bob is still listed as muted")
    muted = site.api_as(site.ada_auth, "POST", "register", fetch_event_types='["muted_users"]')["muted_users"]
    assert muted == []
    ada.wait(lambda: [p for p in ada.finds("#people .person .name") if p.text == "Bob"], "Bob did not come back to the people list")


# The page's Notification and document.hidden, recorded: headless Chromium shows no desktop
# notifications, so the test keeps what the client asked the browser to show.
RECORD_NOTIFICATIONS = """
window.__notes = [];
window.Notification = class { constructor(title, options) { window.__notes.push([title, options.body]); } };
window.Notification.permission = "granted";
Object.defineProperty(document, "hidden", { configurable: true, get: () => true });
"""


def test_each_channel_notifies_as_set(site, browsers):
    """Ada turns desktop notifications on for #lobby alone: a message there notifies her, with
    its words; set back to the defaults (off), the next does not; a direct message does, with
    its words. A sound is chosen from three."""
    ada, _ = browsers
    open_section(ada, site, "settings/notifications")
    desktop = lambda: ada.find('#channel-notifications input[aria-label="Desktop notifications for #lobby"]')  # noqa: E731
    ada.wait(lambda: desktop() and not desktop().is_selected(), "the channel's box does not show the default (off)")
    ada.click(desktop)
    # (As a client that tells an unset setting from a set one sees it.)
    own = lambda: next(s for s in site.api_as(site.ada_auth, "POST", "register", fetch_event_types='["subscription"]',  # noqa: E731
                                              client_capabilities='{"notification_settings_null": true}')["subscriptions"]
                       if s["name"] == "lobby")
    ada.wait(lambda: own()["desktop_notifications"] is True, "the channel's setting did not reach the server")
    ada.wait(lambda: ada.finds('#channel-notifications button[aria-label="Default notifications for #lobby"]'))
    Select(setting(ada, "notification_sound")).select_by_visible_text("Ding")
    saved(ada, "notification_sound")
    assert settings_of(site, site.ada_auth)["notification_sound"] == "ding"
    views_hold_up(ada, "settings-notifications-channels")

    ada.js(RECORD_NOTIFICATIONS)
    notes = lambda: ada.js("return window.__notes")  # noqa: E731
    site.api_as(site.bob_auth, "POST", "messages", type="stream", to="lobby", topic="ring", content="Lunch is **ready**")
    ada.wait(lambda: notes() == [["Bob wrote in #lobby › ring", "Lunch is ready"]], f"no notification for #lobby: {notes()}")
    ada.click(lambda: ada.find('#channel-notifications button[aria-label="Default notifications for #lobby"]'))
    ada.wait(lambda: not own()["desktop_notifications"], "Default did not set the channel back")
    ada.wait(lambda: not desktop().is_selected() and not ada.finds('#channel-notifications button[aria-label="Default notifications for #lobby"]'))
    site.api_as(site.bob_auth, "POST", "messages", type="stream", to="lobby", topic="ring", content="Second call")
    site.api_as(site.bob_auth, "POST", "messages", type="direct", to=f"[{site.ada}]", content="Just you")
    ada.wait(lambda: len(notes()) == 2, f"the direct message did not notify: {notes()}")
    assert notes()[1] == ["Bob sent you a direct message", "Just you"], notes()
    ada.driver.refresh()


def test_profile_avatar_fields_api_key_password_and_bots(site, browsers, tmp_path):
    ada, _ = browsers
    field = site.api("POST", "realm/profile_fields", name="Team", field_type="1", hint="Where you work")["id"]
    open_section(ada, site, "settings/profile")
    # The avatar.
    before = ada.find(".settings-avatar").get_attribute("src")
    picture = tmp_path / "me.png"
    picture.write_bytes(PNG)
    ada.find("#avatar-file").send_keys(str(picture))
    ada.wait(lambda: ada.find(".settings-avatar").get_attribute("src") != before, "the new avatar is not shown")
    assert site.api("GET", f"users/{site.ada}")["user"]["avatar_url"] != before
    # A custom profile field, saved as it changes.
    team = ada.wait(lambda: setting(ada, str(field)))
    team.send_keys("Compilers", Keys.TAB)
    ada.wait(lambda: site.api("GET", f"users/{site.ada}", include_custom_profile_fields="true")["user"]["profile_data"]
             .get(str(field), {}).get("value") == "Compilers", "the profile field was not saved")
    views_hold_up(ada, "settings-profile")

    # The API key after the password; a wrong one says so and does not log her out.
    open_section(ada, site, "settings/account-and-privacy")
    ada.find("#api-key-password").send_keys("not-my-password", Keys.ENTER)
    ada.wait(lambda: ada.find("#api-key-form .form-error").is_displayed(), "a wrong password was not refused")
    assert "/login/" not in ada.driver.current_url
    password = ada.find("#api-key-password")
    password.clear()
    password.send_keys("ada-password-1", Keys.ENTER)
    key = ada.wait(lambda: ada.find("#api-key-value").text)
    assert key == site.ada_auth[1]
    views_hold_up(ada, "settings-account")

    # The password.
    open_section(ada, site, "settings/profile")
    form = ada.find("#password-form")
    inputs = form.find_elements(By.CSS_SELECTOR, "input[type=password]")
    inputs[0].send_keys("wrong-one-1")
    inputs[1].send_keys("ada-password-2")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    ada.wait(lambda: "Wrong password" in form.find_element(By.CSS_SELECTOR, ".form-error").text)
    inputs[0].clear()
    inputs[0].send_keys("ada-password-1")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    # It ends her sessions, this one too: the login page says why.
    ada.wait(lambda: "/login/" in ada.driver.current_url and "password has been changed" in ada.find("#login-error").text,
             "the password change did not lead to the login page")
    assert site.credentials("ada@example.com", "ada-password-2")[1] == key
    ada.login(site.url, "ada@example.com", "ada-password-2")

    # A bot: created, its key shown, deactivated.
    open_section(ada, site, "settings/your-bots")
    ada.find("#bot-name").send_keys("Helper")
    ada.find("#bot-short-name").send_keys("helper")
    ada.find("#bot-form button[type=submit]").click()
    ada.wait(lambda: any("Helper" in r for r in rows(ada, "#bot-list")), "the new bot is not listed")
    bot = next(u for u in site.api("GET", "users")["members"] if u["full_name"] == "Helper")
    assert bot["bot_owner_id"] == site.ada and bot["bot_type"] == 1
    ada.wait(lambda: site.api("GET", f"bots/{bot['user_id']}/api_key")["api_key"] in ada.find("#bot-key").text)
    views_hold_up(ada, "settings-bots")
    ada.click(lambda: ada.find('#bot-list button[aria-label="Deactivate Helper"]'))
    confirm(ada)
    ada.wait(lambda: not ada.finds("#bot-list tbody tr"), "the deactivated bot is still listed")
    assert site.api("GET", f"users/{bot['user_id']}")["user"]["is_active"] is False


# ---- the organization's settings -------------------------------------------------------------------

def test_organization_settings_and_permissions(site, browsers):
    ada, owner = browsers
    open_section(owner, site, "organization/organization-profile")
    name = setting(owner, "name")
    # (Typed over as a person does: WebDriver's clear() would itself save an empty name.)
    name.send_keys(Keys.CONTROL, "a")
    name.send_keys("Chronicle Labs", Keys.TAB)
    saved(owner, "name")
    assert requests.get(f"{site.url}/api/v1/server_settings", timeout=15).json()["realm_name"] == "Chronicle Labs"
    # A value the server refuses: the control goes back to the saved one and says why.
    name.send_keys(Keys.CONTROL, "a")
    name.send_keys(Keys.DELETE, Keys.TAB)
    owner.wait(lambda: name.get_attribute("value") == "Chronicle Labs" and "cannot be blank" in owner.find("#toast").text,
               "a refused name was kept")
    views_hold_up(owner, "organization-profile")

    open_section(owner, site, "organization/organization-settings")
    Select(setting(owner, "message_content_edit_limit_seconds")).select_by_visible_text("1 hour")
    saved(owner, "message_content_edit_limit_seconds")
    assert realm_of(site)["realm_message_content_edit_limit_seconds"] == 3600
    setting(owner, "enable_read_receipts").click()
    saved(owner, "enable_read_receipts")
    assert realm_of(site)["realm_enable_read_receipts"] is False
    views_hold_up(owner, "organization-settings")

    # Ada may add emoji until the owner gives that to administrators.
    open_section(ada, site, "organization/emoji-settings")
    ada.wait(lambda: ada.finds("#emoji-form"))
    open_section(owner, site, "organization/organization-permissions")
    Select(setting(owner, "can_add_custom_emoji_group")).select_by_visible_text("Administrators and owners")
    saved(owner, "can_add_custom_emoji_group")
    admins = next(g["id"] for g in site.api("GET", "user_groups")["user_groups"] if g["name"] == "role:administrators")
    assert realm_of(site)["realm_can_add_custom_emoji_group"] == admins
    views_hold_up(owner, "organization-permissions")
    open_section(ada, site, "organization/emoji-settings")
    ada.wait(lambda: not ada.finds("#emoji-form") and "does not let you" in ada.find(".settings-section").text)
    Select(setting(owner, "can_add_custom_emoji_group")).select_by_visible_text("Members")
    saved(owner, "can_add_custom_emoji_group")


def test_channels_groups_users_and_invitations(site, browsers):
    ada, owner = browsers
    site.api("POST", "users/me/subscriptions", subscriptions=json.dumps([{"name": "ops"}]))
    ops = site.api("GET", "get_stream_id", stream="ops")["stream_id"]
    open_section(owner, site, "organization/channels")
    owner.click(lambda: owner.find('#channel-admin-list button[aria-label="Edit #ops"]'))
    description = owner.wait(lambda: setting(owner, "description"))
    description.send_keys("Operations", Keys.TAB)
    saved(owner, "description")
    assert site.api("GET", f"streams/{ops}")["stream"]["description"] == "Operations"
    Select(owner.find("#channel-add-member")).select_by_visible_text("Bob")
    owner.find("#channel-editor form button[type=submit]").click()
    owner.wait(lambda: any("Bob" in r for r in rows(owner, "#channel-editor")), "Bob is not listed as subscribed")
    assert site.bob in site.api("GET", f"streams/{ops}/members")["subscribers"]
    views_hold_up(owner, "organization-channels")
    owner.click(lambda: owner.find('#channel-editor button[aria-label="Unsubscribe Bob from #ops"]'))
    owner.wait(lambda: not any("Bob" in r for r in rows(owner, "#channel-editor")), "Bob is still listed")
    assert site.bob not in site.api("GET", f"streams/{ops}/members")["subscribers"]
    owner.click(lambda: [b for b in owner.finds("#channel-editor button") if b.text == "Archive the channel"][0])
    confirm(owner)
    owner.wait(lambda: not owner.finds('#channel-admin-list button[aria-label="Edit #ops"]'), "the archived channel is still listed")

    # A user group, made by the owner, seen by Ada live.
    open_section(ada, site, "organization/user-groups")
    open_section(owner, site, "organization/user-groups")
    owner.find("#group-name").send_keys("reviewers")
    owner.find("#group-description").send_keys("They review")
    owner.find("#group-form button[type=submit]").click()
    owner.wait(lambda: owner.finds("#group-add-member"), "the new group's editor did not open")
    Select(owner.find("#group-add-member")).select_by_visible_text("Ada")
    owner.find("#group-editor form button[type=submit]").click()
    ada.wait(lambda: any(r.startswith("reviewers They review 2") for r in rows(ada, "#group-list")),
             "Ada does not see the new group with its two members")
    views_hold_up(owner, "organization-user-groups")

    # Users: a role, a deactivation and a reactivation.
    open_section(owner, site, "organization/users")
    Select(owner.wait(lambda: owner.find('#user-list select[aria-label="Role of Bob"]'))).select_by_visible_text("Moderator")
    owner.wait(lambda: site.api("GET", f"users/{site.bob}")["user"]["role"] == 300, "the role did not change")
    views_hold_up(owner, "organization-users")
    owner.click(lambda: owner.find('#user-list button[aria-label="Deactivate Bob"]'))
    confirm(owner)
    owner.wait(lambda: owner.finds('#user-list button[aria-label="Reactivate Bob"]'), "Bob is not shown deactivated")
    assert site.api("GET", f"users/{site.bob}")["user"]["is_active"] is False
    owner.click(lambda: owner.find('#user-list button[aria-label="Reactivate Bob"]'))
    owner.wait(lambda: owner.finds('#user-list button[aria-label="Deactivate Bob"]'), "Bob is not shown active again")
    assert site.api("GET", f"users/{site.bob}")["user"]["is_active"] is True

    # Invitations: by email, and a link; one revoked.
    open_section(owner, site, "organization/invitations")
    owner.find("#invite-emails").send_keys("newcomer@example.com")
    owner.find("#invite-form button[type=submit]").click()
    owner.wait(lambda: any("newcomer@example.com" in r for r in rows(owner, "#invite-list")), "the invitation is not listed")
    owner.find("#invite-make-link").click()
    link = owner.wait(lambda: owner.find("#invite-link code").text)
    assert link.startswith(site.url) and "/join/" in link
    owner.wait(lambda: len(owner.finds("#invite-list tbody tr")) == 2)
    invites = site.api("GET", "invites")["invites"]
    assert sorted(i["is_multiuse"] for i in invites) == [False, True]
    views_hold_up(owner, "organization-invitations")
    owner.click(lambda: owner.find('#invite-list button[aria-label="Revoke the invitation to newcomer@example.com"]'))
    owner.wait(lambda: len(owner.finds("#invite-list tbody tr")) == 1, "the revoked invitation is still listed")
    assert [i["is_multiuse"] for i in site.api("GET", "invites")["invites"]] == [True]


def test_default_channels(site, browsers):
    """The owner makes a channel one every new member joins, from the page; a change made
    through the API shows at once; one removed on the page leaves the list and the server's. (A
    member is not offered the page: the first test's list of her sections.)"""
    _, owner = browsers
    site.api("POST", "users/me/subscriptions", subscriptions=json.dumps([{"name": "welcome"}, {"name": "random"}]))
    welcome = site.api("GET", "get_stream_id", stream="welcome")["stream_id"]
    random = site.api("GET", "get_stream_id", stream="random")["stream_id"]
    defaults = lambda: {s["stream_id"] for s in site.api("GET", "default_streams")["default_streams"]}
    open_section(owner, site, "organization/default-channels-list")
    listed = lambda: [r.split(" ")[0] for r in rows(owner, "#default-channel-list")]
    owner.wait(lambda: "#welcome" in [o.text for o in owner.finds("#default-channel-add option")], "#welcome is not offered")
    Select(owner.find("#default-channel-add")).select_by_visible_text("#welcome")
    owner.click(lambda: owner.find("#default-channel-form button[type=submit]"))
    owner.wait(lambda: "#welcome" in listed(), "the new default channel is not listed")
    assert welcome in defaults()
    assert "#welcome" not in [o.text for o in owner.finds("#default-channel-add option")]
    site.api("POST", "default_streams", stream_id=random)
    owner.wait(lambda: "#random" in listed(), "a default channel added through the API did not show")
    views_hold_up(owner, "organization-default-channels")
    owner.click(lambda: owner.find('#default-channel-list button[aria-label="Remove #welcome from the default channels"]'))
    owner.wait(lambda: "#welcome" not in listed(), "the removed channel is still listed")
    assert welcome not in defaults() and random in defaults()


def test_emoji_linkifiers_profile_fields_and_exports(site, browsers, tmp_path):
    ada, owner = browsers
    # Custom emoji: the owner adds one; Ada sees it; the owner deletes it.
    open_section(ada, site, "organization/emoji-settings")
    open_section(owner, site, "organization/emoji-settings")
    picture = tmp_path / "party.png"
    picture.write_bytes(PNG)
    owner.find("#emoji-name").send_keys("party")
    owner.find("#emoji-file").send_keys(str(picture))
    owner.find("#emoji-form button[type=submit]").click()
    ada.wait(lambda: any(r.startswith("party") for r in [r.strip() for r in rows(ada, "#emoji-list")]), "Ada does not see the new emoji")
    assert "party" in {e["name"] for e in site.api("GET", "realm/emoji")["emoji"].values() if not e["deactivated"]}
    views_hold_up(owner, "organization-emoji")
    owner.click(lambda: owner.find('#emoji-list button[aria-label="Delete :party:"]'))
    confirm(owner)
    ada.wait(lambda: not ada.finds("#emoji-list tbody tr"), "Ada still sees the deleted emoji")

    # A linkifier, used by the next message.
    open_section(owner, site, "organization/linkifier-settings")
    pattern, template = owner.finds("#linkifier-form input")
    pattern.send_keys("#(?P<id>[0-9]+)")
    template.send_keys("https://tracker.example.com/{id}")
    owner.find("#linkifier-form button[type=submit]").click()
    owner.wait(lambda: len(owner.finds("#linkifier-list tbody tr")) == 1, "the linkifier is not listed")
    sent = site.api("POST", "messages", type="stream", to="lobby", topic="links", content="see #42")["id"]
    rendered = site.api("GET", f"messages/{sent}")["message"]["content"]
    assert 'href="https://tracker.example.com/42"' in rendered, rendered
    views_hold_up(owner, "organization-linkifiers")

    # A custom profile field of options.
    open_section(owner, site, "organization/profile-field-settings")
    form = owner.find("#profile-field-form")
    inputs = form.find_elements(By.CSS_SELECTOR, "input")
    inputs[0].send_keys("Office")
    Select(form.find_element(By.CSS_SELECTOR, "select")).select_by_visible_text("List of options")
    form.find_element(By.CSS_SELECTOR, "textarea").send_keys("Paris\nLima")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    owner.wait(lambda: any(r.startswith("Office List of options") for r in rows(owner, "#profile-field-list")), "the field is not listed")
    office = next(f for f in site.api("GET", "realm/profile_fields")["custom_fields"] if f["name"] == "Office")
    assert sorted(c["text"] for c in json.loads(office["field_data"]).values()) == ["Lima", "Paris"]
    views_hold_up(owner, "organization-profile-fields")

    # A data export, listed with its file once made.
    open_section(owner, site, "organization/data-exports-admin")
    owner.find("#export-form button[type=submit]").click()
    owner.wait(lambda: owner.finds("#export-list a[href]"), "the export has no file to download", timeout=60)
    made = site.api("GET", "export/realm")["exports"]
    assert len(made) == 1 and owner.find("#export-list a[href]").get_attribute("href") == made[0]["export_url"]
    views_hold_up(owner, "organization-exports")


def upload(site, auth, name, data):
    answer = requests.post(f"{site.url}/api/v1/user_uploads", auth=auth, timeout=15, files={"file": (name, data)}).json()
    assert answer["result"] == "success", answer
    return answer["url"]


def test_uploaded_files(site, browsers):
    """Ada's uploaded files: each with the message that links it (a link that opens that
    message), its size; one uploaded meanwhile shows at once; one deleted on the page is gone
    from the server's list; the space used is the organization's."""
    ada, _ = browsers
    notes = upload(site, site.ada_auth, "notes.txt", b"hello")
    sent = site.api_as(site.ada_auth, "POST", "messages", type="stream", to="lobby", topic="files",
                       content=f"the [notes]({notes})")["id"]
    open_section(ada, site, "settings/uploaded-files")
    ada.wait(lambda: any(r.startswith("notes.txt") for r in rows(ada, "#upload-list")), "the upload is not listed")
    row = next(r for r in rows(ada, "#upload-list") if r.startswith("notes.txt"))
    assert f"Message {sent}" in row and row.endswith(" 5 B Delete"), row
    used = site.api_as(site.ada_auth, "GET", "attachments")["upload_space_used"]
    assert ada.find("#upload-space").text == f"Your organization's uploads take {used} B.", ada.find("#upload-space").text
    upload(site, site.ada_auth, "draft.txt", b"draft words")
    ada.wait(lambda: any(r.startswith("draft.txt ") and r.endswith(" No message 11 B Delete") for r in rows(ada, "#upload-list")),
             "a new upload did not show live")
    views_hold_up(ada, "settings-uploaded-files")
    ada.click(lambda: ada.find('#upload-list button[aria-label="Delete draft.txt"]'))
    confirm(ada)
    ada.wait(lambda: not any(r.startswith("draft.txt") for r in rows(ada, "#upload-list")), "the deleted file is still listed")
    assert [a["name"] for a in site.api_as(site.ada_auth, "GET", "attachments")["attachments"]] == ["notes.txt"]
    # The message link opens that message alone.
    ada.click(lambda: ada.find(f'#upload-list a[href="#narrow/id/{sent}"]'))
    ada.wait(lambda: [m.get_attribute("data-id") for m in ada.finds("#message-list .msg")] == [str(sent)],
             "the message link did not open the message")


def test_linkifiers_and_profile_fields_edited_in_place_and_reordered(site, browsers):
    """(After the test above that adds the linkifier and the Office field.) The owner edits a
    linkifier and a field where they are listed, and moves them up the order; the options the
    field kept keep their keys, so people's choices stay."""
    _, owner = browsers
    site.api("POST", "realm/filters", pattern="T(?P<id>[0-9]+)", url_template="https://tasks.example.com/{id}")
    open_section(owner, site, "organization/linkifier-settings")
    owner.wait(lambda: len(owner.finds("#linkifier-list tbody tr")) == 2, "the new linkifier is not listed")
    owner.click(lambda: owner.find('#linkifier-list button[aria-label="Edit the linkifier #(?P<id>[0-9]+)"]'))
    template = owner.find("#linkifier-edit-template")
    template.clear()
    template.send_keys("https://issues.example.com/{id}")
    views_hold_up(owner, "organization-linkifier-editor")
    owner.click(lambda: owner.find("#linkifier-editor button[type=submit]"))
    owner.wait(lambda: not owner.finds("#linkifier-editor") and any("https://issues.example.com/{id}" in r for r in rows(owner, "#linkifier-list")),
               "the edited linkifier is not listed")
    listed = lambda: [(l["pattern"], l["url_template"]) for l in site.api("GET", "realm/linkifiers")["linkifiers"]]
    assert listed() == [("#(?P<id>[0-9]+)", "https://issues.example.com/{id}"), ("T(?P<id>[0-9]+)", "https://tasks.example.com/{id}")]
    owner.click(lambda: owner.find('#linkifier-list button[aria-label="Move T(?P<id>[0-9]+) up"]'))
    owner.wait(lambda: rows(owner, "#linkifier-list")[0].startswith("T(?P"), "the linkifier did not move up")
    assert [p for p, _ in listed()] == ["T(?P<id>[0-9]+)", "#(?P<id>[0-9]+)"]

    fields = lambda: site.api("GET", "realm/profile_fields")["custom_fields"]
    office = next(f for f in fields() if f["name"] == "Office")
    before = json.loads(office["field_data"])
    site.api("POST", "realm/profile_fields", name="Desk", field_type=1, hint="")
    open_section(owner, site, "organization/profile-field-settings")
    owner.wait(lambda: any(r.startswith("Desk") for r in rows(owner, "#profile-field-list")), "the new field is not listed")
    names = lambda: [f["name"] for f in fields()]  # noqa: E731
    assert names()[-2:] == ["Office", "Desk"], names()
    owner.click(lambda: owner.find('#profile-field-list button[aria-label="Edit the field Office"]'))
    name = owner.find("#field-edit-name")
    name.clear()
    name.send_keys("Office city")
    owner.find("#field-edit-options").send_keys("\nOslo")
    owner.find("#field-edit-summary").click()
    owner.click(lambda: owner.find("#profile-field-editor button[type=submit]"))
    owner.wait(lambda: any(r.startswith("Office city") for r in rows(owner, "#profile-field-list")), "the renamed field is not listed")
    office = next(f for f in fields() if f["id"] == office["id"])
    after = json.loads(office["field_data"])
    assert office["name"] == "Office city" and office.get("display_in_profile_summary") is True, office
    assert {k: v["text"] for k, v in after.items() if v["text"] != "Oslo"} == {k: v["text"] for k, v in before.items()}
    assert sorted(v["text"] for v in after.values()) == ["Lima", "Oslo", "Paris"]
    owner.click(lambda: owner.find('#profile-field-list button[aria-label="Move Desk up"]'))
    owner.wait(lambda: rows(owner, "#profile-field-list")[-1].startswith("Office city"), "the field did not move up")
    assert names()[-2:] == ["Desk", "Office city"], names()


def test_channel_folders_and_allowed_domains(site, browsers):
    """The owner makes a channel folder and puts #lobby in it: Ada's sidebar gets the section at
    once, renamed when the folder is; a folder is archived once no channel is in it. The allowed
    email domains are added, changed and removed on the organization's settings page."""
    ada, owner = browsers
    open_section(owner, site, "organization/channel-folders")
    owner.find("#folder-name").send_keys("Projects")
    owner.find("#folder-description").send_keys("Work in progress")
    owner.click(lambda: owner.find("#channel-folder-form button[type=submit]"))
    owner.wait(lambda: any(r.startswith("Projects Work in progress 0") for r in rows(owner, "#channel-folder-list")), "the folder is not listed")
    folder = next(f for f in site.api("GET", "channel_folders")["channel_folders"] if f["name"] == "Projects")
    views_hold_up(owner, "organization-channel-folders")

    open_section(owner, site, "organization/channels")
    owner.click(lambda: owner.find('#channel-admin-list button[aria-label="Edit #lobby"]'))
    Select(setting(owner, "folder_id")).select_by_visible_text("Projects")
    saved(owner, "folder_id")
    assert site.api("GET", f"streams/{site.lobby}")["stream"]["folder_id"] == folder["id"]
    ada.driver.get(f"{site.url}/#narrow/channel/{site.lobby}")
    sections = lambda: [h.text for h in ada.finds("#left .side-sub")]  # noqa: E731
    ada.wait(lambda: "PROJECTS" in [s.upper() for s in sections()], f"Ada's sidebar has no Projects section")

    open_section(owner, site, "organization/channel-folders")
    owner.click(lambda: owner.find('#channel-folder-list button[aria-label="Edit the folder Projects"]'))
    name = owner.find("#folder-edit-name")
    name.clear()
    name.send_keys("Ongoing")
    owner.click(lambda: owner.find("#channel-folder-editor button[type=submit]"))
    ada.wait(lambda: "ONGOING" in [s.upper() for s in sections()], "the renamed folder did not reach Ada's sidebar")
    # A folder with channels is not archived (Zulip's rule), in the server's words.
    archive = lambda: owner.find('#channel-folder-list button[aria-label="Archive the folder Ongoing"]')  # noqa: E731
    owner.click(archive)
    owner.wait(lambda: "remove all the channels from this folder" in owner.find("#toast").text, "the refusal was not said")
    open_section(owner, site, "organization/channels")
    owner.click(lambda: owner.find('#channel-admin-list button[aria-label="Edit #lobby"]'))
    Select(setting(owner, "folder_id")).select_by_visible_text("No folder")
    saved(owner, "folder_id")
    ada.wait(lambda: "ONGOING" not in [s.upper() for s in sections()], "a channel taken out of the folder stayed in its section")
    open_section(owner, site, "organization/channel-folders")
    owner.click(archive)
    owner.wait(lambda: any(r.startswith("Ongoing (archived)") for r in rows(owner, "#channel-folder-list")), "the folder is not shown archived")
    assert next(f for f in site.api("GET", "channel_folders", include_archived="true")["channel_folders"] if f["id"] == folder["id"])["is_archived"]

    open_section(owner, site, "organization/organization-settings")
    owner.find("#realm-domain-name").send_keys("example.com")
    owner.find("#realm-domain-subdomains").click()
    owner.click(lambda: owner.find("#realm-domain-form button[type=submit]"))
    owner.wait(lambda: [r.split(" ")[0] for r in rows(owner, "#realm-domain-list")] == ["example.com"], "the domain is not listed")
    domains = lambda: site.api("GET", "realm/domains")["domains"]
    assert domains() == [{"domain": "example.com", "allow_subdomains": True}]
    owner.click(lambda: owner.find('#realm-domain-list input[aria-label="Allow subdomains of example.com"]'))
    owner.wait(lambda: domains() == [{"domain": "example.com", "allow_subdomains": False}], "the change did not reach the server")
    owner.wait(lambda: not owner.find('#realm-domain-list input[aria-label="Allow subdomains of example.com"]').is_selected())
    setting(owner, "emails_restricted_to_domains").click()
    saved(owner, "emails_restricted_to_domains")
    assert realm_of(site)["realm_emails_restricted_to_domains"] is True
    views_hold_up(owner, "organization-settings-domains")
    setting(owner, "emails_restricted_to_domains").click()
    saved(owner, "emails_restricted_to_domains")
    site.api("POST", "realm/domains", domain="example.org", allow_subdomains="false")
    owner.wait(lambda: [r.split(" ")[0] for r in rows(owner, "#realm-domain-list")] == ["example.com", "example.org"],
               "a domain added through the API did not show")
    owner.click(lambda: owner.find('#realm-domain-list button[aria-label="Remove the domain example.org"]'))
    owner.wait(lambda: [r.split(" ")[0] for r in rows(owner, "#realm-domain-list")] == ["example.com"], "the removed domain is still listed")
    assert [d["domain"] for d in domains()] == ["example.com"]


def test_a_channel_administrator_gets_its_settings(site, browsers):
    """Made an administrator of #lobby (its can_administer_channel_group), Ada is offered the
    Channels section at once, listing #lobby alone, and changes its description there."""
    ada, _ = browsers
    open_section(ada, site, "settings/profile")
    nav = lambda: [a.get_attribute("href").split("#", 1)[1] for a in ada.finds(".settings-nav a")]
    assert "organization/channels" not in nav()
    site.api("PATCH", f"streams/{site.lobby}",
             can_administer_channel_group=json.dumps({"new": {"direct_members": [site.ada], "direct_subgroups": []}}))
    ada.wait(lambda: "organization/channels" in nav(), "the Channels section was not offered")
    open_section(ada, site, "organization/channels")
    ada.wait(lambda: [r.split(" ")[0] for r in rows(ada, "#channel-admin-list")] == ["#lobby"], "she is offered other channels")
    ada.click(lambda: ada.find('#channel-admin-list button[aria-label="Edit #lobby"]'))
    description = setting(ada, "description")
    description.clear()
    description.send_keys("Where we meet", Keys.TAB)
    saved(ada, "description")
    assert site.api("GET", f"streams/{site.lobby}")["stream"]["description"] == "Where we meet"


def confirmation_link(site, since):
    """The newest address-change link in the server's outbox (no mail relay is configured), of
    the mails beyond the first `since`."""
    outbox = site.server.data_dir / "outbox"
    mails = sorted(p for p in outbox.glob("*email-change-*")) if outbox.exists() else []
    if len(mails) <= since:
        return None
    found = re.search(r"(https?://\S+/accounts/confirm_new_email/\S+/)", mails[-1].read_text())
    return found.group(1) if found else None


def test_an_address_changed_from_the_profile(site, browsers):
    """(Last: Ada's address changes.) Ada asks for a new address on her profile; nothing changes
    until the link mailed to it is opened, and then her profile shows it at once."""
    ada, _ = browsers
    open_section(ada, site, "settings/profile")
    assert ada.find("#my-email").text == "ada@example.com"
    ada.click(lambda: ada.find("#change-email"))
    ada.find("#new-email").send_keys("ada@new.example.com")
    views_hold_up(ada, "settings-profile-email")
    ada.click(lambda: ada.find("#email-form button[type=submit]"))
    ada.wait(lambda: ada.finds("#email-sent") and "ada@new.example.com" in ada.find("#email-sent").text, "no link was promised")
    link = ada.wait(lambda: confirmation_link(site, 0), "no confirmation link was mailed")
    assert ada.find("#my-email").text == "ada@example.com"
    assert "Your address is changed" in requests.get(link, timeout=15).text
    ada.wait(lambda: ada.find("#my-email").text == "ada@new.example.com", "the new address did not show")
    # Back, by the same way, for anything that runs after.
    renamed = ("ada@new.example.com", site.ada_auth[1])
    site.api_as(renamed, "PATCH", "settings", email="ada@example.com")
    link = ada.wait(lambda: confirmation_link(site, 1), "no second confirmation link was mailed")
    assert "Your address is changed" in requests.get(link, timeout=15).text
    ada.wait(lambda: ada.find("#my-email").text == "ada@example.com")
