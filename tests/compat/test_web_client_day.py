"""The web client through a working day (issue 39), in real headless Chromium browsers: Ada and
Bob (members) and the organization's owner through the API. Catching up (Inbox, Recent
conversations, the unread count in the tab title, date separators, mark as unread, the
selected message and Zulip's hotkeys), fixing (rename, move, resolve and delete, the edit
history, quotes and message links) with what the other person sees live, and the controls that
follow the organization's permissions, live too. Screenshots of each new view in both themes go
to target/web-client-screenshots/, with the contrast and accessible-name checks."""

import json
import pathlib
import tempfile

import pytest
import requests
from conftest import RunningServer

from test_web_client import LOW_CONTRAST, Browser, Site, webdriver, CHROMIUM, CHROMEDRIVER

try:
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select
except ImportError:  # pragma: no cover - the skip below says why
    pass

pytestmark = pytest.mark.skipif(
    webdriver is None or CHROMIUM is None or not pathlib.Path(CHROMEDRIVER).exists(),
    reason="needs selenium, chromium and /usr/bin/chromedriver (Debian: apt-get install chromium chromium-driver)",
)


@pytest.fixture(scope="module")
def site():
    with tempfile.TemporaryDirectory() as tmp:
        server = RunningServer(pathlib.Path(tmp) / "data")
        try:
            s = Site(server)
            s.ada = s.api("POST", "users", email="ada@example.com", password="ada-password-1", full_name="Ada")["user_id"]
            s.bob = s.api("POST", "users", email="bob@example.com", password="bob-password-1", full_name="Bob")["user_id"]
            for name in ("lobby", "design"):
                s.api("POST", "users/me/subscriptions", subscriptions=json.dumps([{"name": name}]))
                s.api("POST", "users/me/subscriptions", subscriptions=json.dumps([{"name": name}]),
                      principals=f"[{s.ada}, {s.bob}]")
            s.lobby = s.api("GET", "get_stream_id", stream="lobby")["stream_id"]
            s.design = s.api("GET", "get_stream_id", stream="design")["stream_id"]
            s.groups = {g["name"]: g["id"] for g in s.api("GET", "user_groups")["user_groups"]}
            s.ada_auth = s.credentials("ada@example.com", "ada-password-1")
            s.bob_auth = s.credentials("bob@example.com", "bob-password-1")
            yield s
        finally:
            server.stop()


@pytest.fixture(scope="module")
def browsers(site):
    ada, bob = Browser(), Browser()
    try:
        ada.login(site.url, "ada@example.com", "ada-password-1")
        bob.login(site.url, "bob@example.com", "bob-password-1")
        yield ada, bob
    finally:
        ada.quit()
        bob.quit()
        for browser in (ada, bob):
            bad = [e for e in browser.log if "Content Security Policy" in e["message"] or "Trusted Type" in e["message"]]
            assert not bad, bad


def post(site, auth, topic, content, stream="lobby"):
    return site.api_as(auth, "POST", "messages", type="stream", to=stream, topic=topic, content=content)["id"]


def open_topic(browser, site, stream_id, topic, near=None):
    hash_ = f"#narrow/channel/{stream_id}/topic/{topic.replace(' ', '.20')}" + (f"/near/{near}" if near else "")
    browser.driver.get(f"{site.url}/{hash_}")
    browser.wait(lambda: browser.finds("#narrow-title") and browser.find("#narrow-title").text.endswith(topic))


def keys(browser, *sequence):
    ActionChains(browser.driver).send_keys(*sequence).perform()


def row(browser, message_id):
    found = browser.finds(f'#message-list .msg[data-id="{message_id}"]')
    return found[0] if found else None


def menu_items(browser, message_id):
    """Opens the message's actions menu and returns the labels it offers."""
    browser.hover_action(browser.wait(lambda: row(browser, message_id)), "Message actions")
    browser.wait(lambda: browser.find("#popup-menu").is_displayed(), "the message menu did not open")
    return [item.text for item in browser.finds('#popup-menu [role="menuitem"]')]


def choose(browser, message_id, label):
    items = menu_items(browser, message_id)
    assert label in items, items
    for item in browser.finds('#popup-menu [role="menuitem"]'):
        if item.text == label:
            item.click()
            return


def group_heads(browser):
    """Each group head of the message list as (its conversation, its date)."""
    return [(" › ".join(a.text for a in h.find_elements(By.CSS_SELECTOR, "a")), h.find_element(By.CSS_SELECTOR, ".group-date").text)
            for h in browser.finds("#message-list .group-head")]


def titles(browser):
    return [title for title, _ in group_heads(browser)]


def focused_message(browser):
    return browser.js("return Number(document.activeElement?.closest?.('.msg')?.dataset.id || 0)")


def views_hold_up(browser, name):
    """A screenshot in both themes, enough contrast in each, a name for every visible control."""
    # An open modal dialog leaves the page behind it inert, and nameless to a screen reader.
    scope = "dialog[open] " if browser.finds("dialog[open]") else ""
    controls = [e for e in browser.finds(", ".join(scope + c for c in ("button", "a[href]", "input:not([type=hidden])", "select", "textarea")))
                if e.is_displayed()]
    nameless = [e.get_attribute("outerHTML")[:120] for e in controls if not (e.accessible_name or "").strip()]
    assert not nameless, nameless
    for theme in ("light", "dark"):
        browser.driver.execute_cdp_cmd("Emulation.setEmulatedMedia",
                                       {"features": [{"name": "prefers-color-scheme", "value": theme}]})
        found = []

        def none_low():
            found[:] = browser.js(LOW_CONTRAST)
            return not found
        try:
            browser.wait(none_low)
        except TimeoutException:
            pytest.fail(f"low contrast in {name}, {theme} theme: {found}")
        assert len(browser.shot(f"{name}-{theme}")) > 10_000
    browser.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


# ---- catching up ---------------------------------------------------------------------------------

def test_inbox_recent_conversations_and_the_tab_title(site, browsers):
    _, bob = browsers
    owner = site.auth
    # In the Inbox nothing is read on sight: Bob waits there while the messages come.
    bob.driver.get(f"{site.url}/#inbox")
    bob.wait(lambda: bob.find("#narrow-title").text == "Inbox")
    post(site, owner, "plans", "Plans for the week")
    post(site, owner, "plans", "Second item of the plans")
    site.api("POST", "messages", type="private", to=f"[{site.bob}]", content="A word in private")
    sections = lambda: {s.find_element(By.CSS_SELECTOR, ".inbox-head :is(a, span:not(.badge))").text: s  # noqa: E731
                        for s in bob.finds(".inbox-section")}
    bob.wait(lambda: set(sections()) == {"Direct messages", "#lobby"}, "the Inbox lacks a conversation")
    rows = lambda name: [r.text.split("\n") for r in sections()[name].find_elements(By.CSS_SELECTOR, ".inbox-row")]  # noqa: E731
    assert rows("#lobby") == [["plans", "2"]]
    owner_name = site.api("GET", "users/me")["full_name"]
    assert rows("Direct messages") == [[owner_name, "1"]]
    # The tab's title leads with the unread count.
    bob.wait(lambda: bob.driver.title.startswith("(3) Inbox"), f"title {bob.driver.title!r}")
    # Live: a new topic comes in at the top of its channel.
    post(site, owner, "fresh", "Something fresh")
    bob.wait(lambda: [r[0] for r in rows("#lobby")] == ["fresh", "plans"], "a live message did not reach the Inbox")
    bob.wait(lambda: bob.driver.title.startswith("(4) "))
    # A channel folds away and back.
    toggle = sections()["#lobby"].find_element(By.CSS_SELECTOR, "button")
    toggle.click()
    bob.wait(lambda: not rows("#lobby"), "the channel did not fold")
    assert sections()["#lobby"].find_element(By.CSS_SELECTOR, "button").get_attribute("aria-expanded") == "false"
    views_hold_up(bob, "inbox")
    bob.click(lambda: sections()["#lobby"].find_element(By.CSS_SELECTOR, "button"))
    bob.wait(lambda: rows("#lobby"))

    # Recent conversations: newest first, who took part, unread counts; a new message moves its
    # conversation to the top.
    bob.click(lambda: bob.sidebar_item("Recent conversations"))
    bob.wait(lambda: bob.find("#narrow-title").text == "Recent conversations")
    def table():
        """Each row as [channel, conversation, unread count, participants]."""
        out = []
        for r in bob.finds(".recent-table tbody tr"):
            cells = r.find_elements(By.CSS_SELECTOR, "td")
            badge = cells[1].find_elements(By.CSS_SELECTOR, ".badge")
            out.append([cells[0].text, cells[1].find_element(By.CSS_SELECTOR, "a").text,
                        badge[0].text if badge else "0", cells[2].text])
        return out
    bob.wait(lambda: len(table()) >= 3, "Recent conversations did not load")
    first, second, third = bob.wait(lambda: table()[:3])
    assert first == ["#lobby", "fresh", "1", owner_name], first
    assert second == ["Direct message", owner_name, "1", owner_name], second
    assert third == ["#lobby", "plans", "2", owner_name], third
    post(site, site.ada_auth, "plans", "Ada joins the plans")
    bob.wait(lambda: table()[0] == ["#lobby", "plans", "3", f"Ada, {owner_name}"], "the live message did not move its topic up")
    views_hold_up(bob, "recent")

    # A row opens its conversation, whose group head names the day.
    bob.click(lambda: next(a for a in bob.finds(".recent-table a") if a.text == "plans"))
    bob.wait(lambda: bob.find("#narrow-title").text == "#lobby › plans")
    bob.wait(lambda: bob.message("Ada joins the plans"))
    assert [date for _, date in group_heads(bob)] == ["Today"], group_heads(bob)


def test_date_labels(site, browsers):
    _, bob = browsers
    labels = bob.driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        import("/static/web/js/time.js").then(({ dayLabel }) => {
          const now = new Date(2026, 10, 30, 9, 0);
          const at = (y, m, d, h) => new Date(y, m, d, h).getTime() / 1000;
          done([dayLabel(at(2026, 10, 30, 1), now), dayLabel(at(2026, 10, 29, 23), now),
                dayLabel(at(2026, 10, 2, 12), now), dayLabel(at(2025, 2, 3, 12), now)]);
        });
    """)
    assert labels == ["Today", "Yesterday", "Mon 2 Nov", "3 Mar 2025"], labels


def test_selecting_with_the_keyboard_and_the_shortcut_help(site, browsers):
    _, bob = browsers
    ids = [post(site, site.ada_auth, "keys", f"Keyboard line {n}") for n in range(3)]
    open_topic(bob, site, site.lobby, "keys")
    bob.wait(lambda: bob.message("Keyboard line 2"))
    bob.find("#messages").click()
    keys(bob, Keys.END)
    bob.wait(lambda: focused_message(bob) == ids[2], "End did not select the newest message")
    keys(bob, "k")
    bob.wait(lambda: focused_message(bob) == ids[1], "k did not select the previous message")
    keys(bob, Keys.ARROW_UP)
    bob.wait(lambda: focused_message(bob) == ids[0], "↑ did not select the previous message")
    keys(bob, "j")
    bob.wait(lambda: focused_message(bob) == ids[1], "j did not select the next message")
    # @ replies mentioning the sender; Esc leaves the box, the selection stays where it was.
    keys(bob, "@")
    bob.wait(lambda: bob.find("#compose-text").get_attribute("value") == "@**Ada** ", "@ did not mention the sender")
    bob.find("#compose-text").clear()
    keys(bob, Keys.ESCAPE)
    # U marks the selected message and the later ones unread.
    bob.click(lambda: row(bob, ids[1]))
    keys(bob, "U")
    unread = lambda: site.api_as(site.bob_auth, "GET", "messages", anchor="newest", num_before=10, num_after=0,  # noqa: E731
                                 narrow=json.dumps([{"operator": "channel", "operand": site.lobby},
                                                    {"operator": "topic", "operand": "keys"},
                                                    {"operator": "is", "operand": "unread"}]))["messages"]
    bob.wait(lambda: [m["id"] for m in unread()] == ids[1:], "U did not mark the messages unread")
    bob.wait(lambda: "unread" in row(bob, ids[2]).get_attribute("class"))
    # ? lists the shortcuts.
    bob.find("#messages").click()
    keys(bob, "?")
    bob.wait(lambda: bob.find("#keys-dialog").is_displayed(), "? did not open the shortcut list")
    assert "Select the next message" in bob.find("#keys-dialog").text
    views_hold_up(bob, "shortcuts")
    keys(bob, Keys.ESCAPE)
    bob.wait(lambda: not bob.find("#keys-dialog").is_displayed())
    # q filters the channels; Enter opens the first left.
    keys(bob, "q")
    bob.wait(lambda: bob.js("return document.activeElement.id") == "channel-search", "q did not focus the channel filter")
    keys(bob, "des")
    bob.wait(lambda: [i.text for i in bob.finds("#left .channels .nav-item .label")] == ["design"])
    keys(bob, Keys.ENTER)
    bob.wait(lambda: bob.find("#narrow-title").text == "#design", "Enter did not open the channel left by the filter")
    keys(bob, "w")
    bob.wait(lambda: bob.js("return document.activeElement.id") == "people-filter", "w did not focus the people filter")
    keys(bob, Keys.ESCAPE)


# ---- fixing ----------------------------------------------------------------------------------------

def test_rename_edit_history_resolve_move_and_delete_seen_live(site, browsers):
    ada, bob = browsers
    first = post(site, site.ada_auth, "typo topc", "First draft")
    second = post(site, site.ada_auth, "typo topc", "Second thought")
    bob.driver.get(f"{site.url}/#narrow/channel/{site.lobby}")
    bob.wait(lambda: bob.message("Second thought"))
    open_topic(ada, site, site.lobby, "typo topc")
    ada.wait(lambda: ada.message("Second thought"))

    # Rename the topic from its head: every message goes, Bob's list follows.
    ada.click(lambda: ada.find('.group-head [aria-label="Rename or move topic"]'))
    ada.wait(lambda: ada.find("#move-dialog").is_displayed())
    assert ada.find("#move-topic").get_attribute("value") == "typo topc"
    assert Select(ada.find("#move-mode")).first_selected_option.get_attribute("value") == "change_all"
    views_hold_up(ada, "move-dialog")
    ada.find("#move-topic").clear()
    ada.find("#move-topic").send_keys("typo topic")
    ada.find('#move-form button[type="submit"]').click()
    ada.wait(lambda: not ada.find("#move-dialog").is_displayed(), "the move dialog did not close")
    bob.wait(lambda: "#lobby › typo topic" in titles(bob), "Bob did not see the rename")
    bob.wait(lambda: "#lobby › typo topc" not in titles(bob), "Bob still sees the old topic")

    # Edit the content, then read the history: posted, moved, edited.
    open_topic(ada, site, site.lobby, "typo topic")
    ada.wait(lambda: ada.message("First draft"))
    choose(ada, first, "Edit message")
    area = ada.wait(lambda: ada.find(".edit-area"))
    area.send_keys(Keys.END, ", fixed", Keys.ENTER)
    bob.wait(lambda: bob.message("First draft, fixed"), "Bob did not see the edit")
    ada.wait(lambda: ada.message("First draft, fixed"))
    choose(ada, first, "View edit history")
    ada.wait(lambda: len(ada.finds("#history-list .version")) == 3, "the edit history is not three versions")
    heads = [v.find_element(By.CSS_SELECTOR, ".version-head").text for v in ada.finds("#history-list .version")]
    assert heads[0].startswith("Posted by Ada"), heads
    assert heads[1].startswith("Topic: typo topc → typo topic by Ada"), heads
    assert heads[2].startswith("Edited by Ada"), heads
    assert "First draft, fixed" in ada.finds("#history-list .version")[2].text
    views_hold_up(ada, "edit-history")
    keys(ada, Keys.ESCAPE)
    ada.wait(lambda: not ada.find("#history-dialog").is_displayed())

    # Resolve from the head; Bob sees the check mark in the topic's name.
    ada.click(lambda: ada.find('.group-head [aria-label="Mark as resolved"]'))
    bob.wait(lambda: "#lobby › ✔ typo topic" in titles(bob), "Bob did not see the resolve")
    ada.wait(lambda: ada.find("#narrow-title").text.endswith("typo topic") or ada.finds('.group-head [aria-label="Mark as unresolved"]'))

    # Move one message to another channel: it leaves Bob's view of #lobby.
    open_topic(ada, site, site.lobby, "✔ typo topic")
    ada.wait(lambda: ada.message("Second thought"))
    choose(ada, second, "Move messages")
    ada.wait(lambda: ada.find("#move-dialog").is_displayed())
    assert Select(ada.find("#move-mode")).first_selected_option.get_attribute("value") == "change_one"
    Select(ada.find("#move-channel")).select_by_value(str(site.design))
    ada.find("#move-topic").clear()
    ada.find("#move-topic").send_keys("moved here")
    ada.find('#move-form button[type="submit"]').click()
    bob.wait(lambda: not bob.message("Second thought"), "the moved message stayed in Bob's #lobby")
    moved = site.api_as(site.bob_auth, "GET", f"messages/{second}")["message"]
    assert (moved["stream_id"], moved["subject"]) == (site.design, "moved here")

    # Delete, after a confirmation; gone for Bob too.
    open_topic(ada, site, site.lobby, "✔ typo topic")
    ada.wait(lambda: ada.message("First draft, fixed"))
    choose(ada, first, "Delete message")
    ada.wait(lambda: ada.find("#confirm-dialog").is_displayed())
    views_hold_up(ada, "delete-confirm")
    ada.find("#confirm-ok").click()
    bob.wait(lambda: not bob.message("First draft, fixed"), "Bob still sees the deleted message")
    ada.wait(lambda: not ada.message("First draft, fixed"))


def test_quote_and_a_message_link(site, browsers):
    ada, bob = browsers
    said = post(site, site.bob_auth, "quotes", "Worth quoting\n```\ncode\n```")
    open_topic(ada, site, site.lobby, "quotes")
    ada.wait(lambda: ada.message("Worth quoting"))
    choose(ada, said, "Quote and reply")
    text = lambda: ada.find("#compose-text").get_attribute("value")  # noqa: E731
    ada.wait(lambda: "quote" in text(), "the quote did not reach the compose box")
    link = f"{site.url}/#narrow/channel/{site.lobby}/topic/quotes/near/{said}"
    assert text() == f"@_**Bob|{site.bob}** [said]({link}):\n````quote\nWorth quoting\n```\ncode\n```\n````\n", text()
    ada.find("#compose-text").clear()
    # The link opens the conversation with the message selected.
    many = [post(site, site.ada_auth, "quotes", f"Later line {n}") for n in range(3)]
    bob.driver.get(link)
    bob.wait(lambda: bob.message("Later line 2"))
    bob.wait(lambda: focused_message(bob) == said, "the link did not select its message")
    assert bob.find("#narrow-title").text == "#lobby › quotes"
    assert many


def test_controls_follow_the_organizations_permissions_live(site, browsers):
    _, bob = browsers
    everyone, admins = site.groups["role:everyone"], site.groups["role:administrators"]
    mine = post(site, site.bob_auth, "rules", "Bob's own words")
    theirs = post(site, site.ada_auth, "rules", "Ada's words")
    open_topic(bob, site, site.lobby, "rules")
    bob.wait(lambda: bob.message("Ada's words"))
    # By default a member may edit and delete their own message, and move and resolve topics.
    assert menu_items(bob, mine) == ["Quote and reply", "Copy link to message", "Mark as unread from here", "Edit message",
                                     "Move messages", "Mark topic as resolved", "Delete message"]
    keys(bob, Keys.ESCAPE)
    bob.wait(lambda: not bob.find("#popup-menu").is_displayed(), "Esc did not close the menu")
    # Another's message: neither edited nor deleted by a member.
    assert menu_items(bob, theirs) == ["Quote and reply", "Copy link to message", "Mark as unread from here",
                                       "Move messages", "Mark topic as resolved"]
    keys(bob, Keys.ESCAPE)
    assert bob.finds('.group-head [aria-label="Mark as resolved"]') and bob.finds('.group-head [aria-label="Rename or move topic"]')

    # The owner keeps moving, resolving and deleting to administrators: the controls go, live.
    def realm(**settings):
        site.api("PATCH", "realm", **{k: json.dumps({"new": v}) for k, v in settings.items()})
    try:
        realm(can_move_messages_between_topics_group=admins, can_move_messages_between_channels_group=admins,
              can_resolve_topics_group=admins, can_delete_own_message_group=admins)
        bob.wait(lambda: not bob.finds('.group-head [aria-label="Mark as resolved"]'), "the resolve control stayed")
        assert not bob.finds('.group-head [aria-label="Rename or move topic"]')
        assert menu_items(bob, mine) == ["Quote and reply", "Copy link to message", "Mark as unread from here", "Edit message"]
        keys(bob, Keys.ESCAPE)
        # And the server refuses what is no longer offered.
        answer = requests.delete(f"{site.url}/api/v1/messages/{mine}", auth=site.bob_auth, timeout=15).json()
        assert (answer["result"], answer["msg"]) == ("error", "You don't have permission to delete this message")
        # Resolving comes back to everyone: its control comes back without a reload.
        realm(can_resolve_topics_group=everyone)
        bob.wait(lambda: bob.finds('.group-head [aria-label="Mark as resolved"]'), "the resolve control did not come back")
    finally:
        realm(can_move_messages_between_topics_group=everyone, can_move_messages_between_channels_group=site.groups["role:members"],
              can_resolve_topics_group=everyone, can_delete_own_message_group=everyone)
    views_hold_up(bob, "topic-controls")
