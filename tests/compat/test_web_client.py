"""The browser client (`src/http/web/`) in two real headless Chromium browsers: Ada and Bob log
in through the form and talk through the channel, reactions, edits, direct messages, typing
notices and search, all live. Screenshots of the main screens go to
target/web-client-screenshots/; the layout is checked by element geometry; and the security
promises are checked in the browser (HttpOnly session cookie, no CSP or Trusted Types
violations, a cross-site form post refused)."""

import base64
import hashlib
import hmac
import http.server
import pathlib
import shutil
import socket
import tempfile
import threading
import time

import pytest
import requests

from conftest import ROOT, RunningServer

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select, WebDriverWait
except ImportError:  # pragma: no cover - the skip below says why
    webdriver = None

CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SHOTS = ROOT / "target" / "web-client-screenshots"
WAIT = 15

pytestmark = pytest.mark.skipif(
    webdriver is None or CHROMIUM is None or not pathlib.Path(CHROMEDRIVER).exists(),
    reason="needs selenium, chromium and /usr/bin/chromedriver (Debian: apt-get install chromium chromium-driver)",
)


# Every visible piece of text against its effective background (WCAG 2 contrast: 4.5, or 3 for
# large text); returns the pieces that fall short.
LOW_CONTRAST = r"""
const parse = (c) => { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return null; const p = m[1].split(",").map(Number); return {r:p[0],g:p[1],b:p[2],a:p.length>3?p[3]:1}; };
const lum = ({r,g,b}) => { const f = (v) => { v/=255; return v <= 0.03928 ? v/12.92 : Math.pow((v+0.055)/1.055, 2.4); }; return 0.2126*f(r)+0.7152*f(g)+0.0722*f(b); };
function background(el) {
  const layers = [];
  for (let n = el; n; n = n.parentElement) { const c = parse(getComputedStyle(n).backgroundColor); if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; } }
  let out = {r:255,g:255,b:255};
  for (const c of layers.reverse()) out = {r: c.r*c.a + out.r*(1-c.a), g: c.g*c.a + out.g*(1-c.a), b: c.b*c.a + out.b*(1-c.a)};
  return out;
}
const results = [];
for (const el of document.querySelectorAll("body *")) {
  if (!el.offsetParent && getComputedStyle(el).position !== "fixed") continue;
  const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
  if (!own) continue;
  const style = getComputedStyle(el);
  if (style.visibility === "hidden" || Number(style.opacity) === 0) continue;
  const fg = parse(style.color); const bg = background(el);
  const a = fg.a; const blended = {r: fg.r*a+bg.r*(1-a), g: fg.g*a+bg.g*(1-a), b: fg.b*a+bg.b*(1-a)};
  const l1 = lum(blended), l2 = lum(bg);
  const ratio = (Math.max(l1,l2)+0.05)/(Math.min(l1,l2)+0.05);
  const size = parseFloat(style.fontSize), bold = Number(style.fontWeight) >= 700;
  const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
  if (ratio < need) results.push(`${el.tagName.toLowerCase()}.${el.className} "${el.textContent.trim().slice(0,30)}" ${ratio.toFixed(2)} < ${need}`);
}
return results;
"""


# ---- fixtures -----------------------------------------------------------------------------------

class Site:
    """The server, the admin's API credentials, and the people and channel of the scenario."""

    def __init__(self, server):
        self.server = server
        self.url = server.url
        config = dict(line.split("=", 1) for line in server.zuliprc.read_text().splitlines() if "=" in line)
        self.auth = (config["email"], config["key"])

    def api(self, method, path, **data):
        return self.api_as(self.auth, method, path, **data)

    def api_as(self, auth, method, path, **data):
        answer = requests.request(method, f"{self.url}/api/v1/{path}", auth=auth, timeout=15,
                                  **({"params": data} if method == "GET" else {"data": data})).json()
        assert answer["result"] == "success", answer
        return answer

    def credentials(self, email, password):
        """The (email, API key) pair of a person, fetched with their password."""
        answer = requests.post(f"{self.url}/api/v1/fetch_api_key", data={"username": email, "password": password},
                               timeout=15).json()
        assert answer["result"] == "success", answer
        return (email, answer["api_key"])


@pytest.fixture(scope="module")
def site():
    with tempfile.TemporaryDirectory() as tmp:
        server = RunningServer(pathlib.Path(tmp) / "data")
        try:
            s = Site(server)
            # Enter sends in these tests (Zulip's default for new people is Ctrl+Enter): set as
            # the organization's default before anyone joins.
            s.api("PATCH", "realm/user_settings_defaults", enter_sends="true")
            s.ada = s.api("POST", "users", email="ada@example.com", password="ada-password-1", full_name="Ada")["user_id"]
            s.bob = s.api("POST", "users", email="bob@example.com", password="bob-password-1", full_name="Bob")["user_id"]
            s.api("POST", "users/me/subscriptions", subscriptions='[{"name": "lobby", "description": "Talk"}]',
                  principals=f"[{s.ada}, {s.bob}]")
            yield s
        finally:
            server.stop()


class Browser:
    def __init__(self, width=1280, height=860):
        self.profile = tempfile.TemporaryDirectory()
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                    "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--window-size={width},{height}", f"--user-data-dir={self.profile.name}"]:
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.log = []

    def quit(self):
        self.collect_log()
        self.driver.quit()
        self.profile.cleanup()

    def collect_log(self):
        self.log += self.driver.get_log("browser")

    def wait(self, condition, message="", timeout=WAIT):
        # Live updates replace message rows, so an element found a moment ago may be gone: look again.
        return WebDriverWait(self.driver, timeout, ignored_exceptions=[StaleElementReferenceException]).until(
            lambda d: condition(), message)

    def click(self, finder):
        """Clicks what `finder` returns, finding it again if a live update replaced it."""
        def attempt():
            finder().click()
            return True
        self.wait(attempt, "could not click")

    def find(self, css):
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def finds(self, css):
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def login(self, url, email, password):
        self.driver.get(f"{url}/login/")
        self.find("#username").send_keys(email)
        self.find("#password").send_keys(password)
        self.find("form button[type=submit]").click()
        self.wait(lambda: self.finds(".nav-item") and self.finds(".people .person"), "the app did not load")

    def sidebar_item(self, label):
        for item in self.finds("#left .nav-item"):
            if item.find_element(By.CSS_SELECTOR, ".label").text == label:
                return item
        return None

    def badge(self, label):
        item = self.sidebar_item(label)
        badges = item.find_elements(By.CSS_SELECTOR, ".badge") if item else []
        return badges[0].text if badges else "0"

    def message(self, text):
        for node in self.finds("#message-list .msg"):
            if text in node.find_element(By.CSS_SELECTOR, ".content").text:
                return node
        return None

    def hover_action(self, finder, label):
        """Hovers over the message row `finder` returns and clicks its action `label`, all of it
        again if a live update redrew the row meanwhile (a reaction, an edit or a flag does)."""
        def attempt():
            message = finder()
            if message is None:
                return False
            ActionChains(self.driver).move_to_element(message).perform()
            button = message.find_element(By.CSS_SELECTOR, f'.msg-actions [aria-label="{label}"]')
            if not button.is_displayed():
                return False
            button.click()
            return True
        self.wait(attempt, f"{label} did not show on hover")

    def compose(self, text, enter=True):
        area = self.find("#compose-text")
        area.send_keys(text)
        if enter:
            area.send_keys(Keys.ENTER)

    def contrast_holds(self, label):
        """Every visible text keeps WCAG AA contrast (looked at again until a colour transition
        ends); fails naming the pieces that fall short."""
        found = []

        def none_low():
            found[:] = self.js(LOW_CONTRAST)
            return not found
        try:
            self.wait(none_low)
        except TimeoutException:
            pytest.fail(f"low contrast in {label}: {found}")

    def shot(self, name):
        SHOTS.mkdir(parents=True, exist_ok=True)
        path = SHOTS / f"{name}.png"
        self.driver.save_screenshot(str(path))
        png = path.read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n", name
        return png


@pytest.fixture(scope="module")
def browsers(site):
    ada, bob = Browser(), Browser()
    try:
        yield ada, bob
    finally:
        quit_checking_policies(ada, bob)


def quit_checking_policies(*browsers):
    """Closes the browsers; none of their consoles may hold a CSP or Trusted Types violation."""
    for browser in browsers:
        browser.quit()
    for browser in browsers:
        bad = [e for e in browser.log if "Content Security Policy" in e["message"] or "Trusted Type" in e["message"]]
        assert not bad, bad


# ---- the scenario (the tests run in file order and build on each other) ---------------------------

def test_login_page_and_login(site, browsers):
    ada, bob = browsers
    ada.driver.get(f"{site.url}/login/?error=invalid")
    ada.wait(lambda: ada.find("#login-error").is_displayed())
    assert "Wrong email or password" in ada.find("#login-error").text
    # A rendered login card compresses far worse than an empty page (a few KB).
    assert len(ada.shot("login")) > 15_000
    ada.login(site.url, "ada@example.com", "ada-password-1")
    bob.login(site.url, "bob@example.com", "bob-password-1")
    bob.credentials = site.credentials("bob@example.com", "bob-password-1")
    assert "sessionid" not in bob.js("return document.cookie")
    assert "csrftoken" in bob.js("return document.cookie")


def test_live_message_unread_count_and_read_on_sight(site, browsers):
    ada, bob = browsers
    # Bob reads elsewhere, so the message stays unread until he opens the channel.
    bob.click(lambda: bob.sidebar_item("Starred"))
    bob.wait(lambda: bob.find("#narrow-title").text == "Starred messages")
    ada.click(lambda: ada.sidebar_item("lobby"))
    ada.wait(lambda: ada.find("#narrow-title").text == "#lobby")
    ada.find("#compose-topic").send_keys("greetings")
    ada.compose("Hello Bob, the plan is ready")
    ada.wait(lambda: ada.message("the plan is ready"), "Ada's own message did not appear")

    bob.wait(lambda: bob.badge("lobby") == "1", "Bob's lobby count did not reach 1")
    bob.click(lambda: bob.sidebar_item("lobby"))
    bob.wait(lambda: bob.message("the plan is ready"), "Bob did not see the message")
    bob.wait(lambda: bob.badge("lobby") == "0", "the count did not drop when Bob saw the message")


def test_reply_reaction_and_edit(site, browsers):
    ada, bob = browsers
    # `r` fills compose with the conversation of the last message.
    bob.find("#messages").click()
    ActionChains(bob.driver).send_keys("r").perform()
    bob.wait(lambda: bob.find("#compose-topic").get_attribute("value") == "greetings")
    bob.compose("Hi Ada, sounds good")
    ada.wait(lambda: ada.message("sounds good"), "Ada did not see Bob's reply")

    bob.hover_action(lambda: bob.message("the plan is ready"), "Add reaction")
    bob.wait(lambda: bob.find("#emoji-picker").is_displayed())
    bob.find("#emoji-search").send_keys("thumbs_up")
    bob.wait(lambda: bob.finds('#emoji-grid button[aria-label="+1"]'), "the picker found no thumbs up")
    assert len(bob.shot("emoji-picker")) > 30_000
    bob.find('#emoji-grid button[aria-label="+1"]').click()
    ada.wait(lambda: [r.find_element(By.CSS_SELECTOR, ".count").text for r in
                      ada.message("the plan is ready").find_elements(By.CSS_SELECTOR, ".reaction:not(.add)")]
             == ["1"], "no reaction counted once at Ada's")
    bob.wait(lambda: bob.finds(".reaction.mine"), "Bob's own reaction is not marked as his")
    # Opened again, the picker shows its categories: first the popular ones, the one Bob just
    # used leading; a category button shows that Unicode group.
    bob.hover_action(lambda: bob.message("sounds good"), "Add reaction")
    bob.wait(lambda: bob.find("#emoji-picker").is_displayed())
    grid = lambda: [b.get_attribute("aria-label") for b in bob.finds("#emoji-grid button")]  # noqa: E731
    bob.wait(lambda: grid()[:3] == ["+1", "tada", "smile"], f"the popular emoji are not first: {grid()[:6]}")
    assert bob.find('#emoji-tabs button[aria-pressed="true"]').get_attribute("aria-label") == "Popular and recently used"
    bob.click(lambda: bob.find('#emoji-tabs button[aria-label="Animals & nature"]'))
    bob.wait(lambda: "octopus" in grid() and "+1" not in grid(), "the category did not show its emoji")
    ActionChains(bob.driver).send_keys(Keys.ESCAPE).perform()
    bob.wait(lambda: not bob.find("#emoji-picker").is_displayed(), "Esc did not close the picker")

    ada.hover_action(lambda: ada.message("the plan is ready"), "Edit")
    area = ada.wait(lambda: ada.finds(".edit-area") and ada.find(".edit-area"))
    ada.wait(lambda: area.get_attribute("value") == "Hello Bob, the plan is ready")
    area.send_keys(Keys.CONTROL, "a")
    area.send_keys("Hello Bob, the pineapple plan is ready", Keys.ENTER)
    bob.wait(lambda: bob.message("pineapple plan"), "Bob did not see the edit")
    bob.wait(lambda: "(edited)" in bob.message("pineapple plan").text, "the edit is not marked")


def test_typing_notice_and_direct_message(site, browsers):
    ada, bob = browsers
    ada.compose("I am still typ", enter=False)
    bob.wait(lambda: "Ada is typing" in bob.find("#typing").text, "Bob saw no typing notice")
    # Five seconds without a change send "stopped" (the notice would otherwise last the server's
    # 45 s); typing again starts it again.
    bob.wait(lambda: bob.find("#typing").text == "", "the notice stayed while Ada was idle", timeout=12)
    area = ada.find("#compose-text")
    area.send_keys("ing")
    bob.wait(lambda: "Ada is typing" in bob.find("#typing").text, "typing again did not show the notice")
    area.send_keys(Keys.CONTROL, "a")
    area.send_keys(Keys.DELETE)
    bob.wait(lambda: bob.find("#typing").text == "", "the typing notice did not go away")

    ada.click(lambda: next(p for p in ada.finds("#people .person") if p.text.startswith("Bob")))
    ada.wait(lambda: ada.find("#narrow-title").text == "Bob")
    # A name in the page title is set in a bidirectional isolate, so that a right-to-left
    # override inside a name cannot reorder the rest of the title.
    assert ada.driver.title == "\u2068Bob\u2069 · Chronicle", repr(ada.driver.title)
    ada.wait(lambda: ada.find("#dm-fields").is_displayed())
    ada.compose("A secret for Bob")
    bob.wait(lambda: bob.sidebar_item("Ada") and bob.badge("Ada") == "1", "no DM conversation in Bob's sidebar")
    bob.click(lambda: bob.sidebar_item("Ada"))
    bob.wait(lambda: bob.message("A secret for Bob"), "Bob did not see the DM")


def test_search(site, browsers):
    _, bob = browsers
    box = bob.find("#search")
    box.send_keys("pineapple", Keys.ENTER)
    bob.wait(lambda: bob.find("#narrow-title").text == "Search results")
    bob.wait(lambda: bob.message("pineapple plan"), "search did not find the message")
    assert not bob.message("sounds good")


def test_layout_and_screenshots(site, browsers):
    ada, bob = browsers
    ada.click(lambda: ada.sidebar_item("lobby"))
    ada.wait(lambda: ada.message("sounds good"))
    left, middle, compose = (ada.find(css).rect for css in ("#left", "#messages", "#compose"))
    assert left["x"] + left["width"] <= middle["x"] + 1
    assert compose["y"] >= middle["y"] + middle["height"] - 1
    assert compose["y"] + compose["height"] <= ada.js("return innerHeight") + 1
    assert ada.js("return document.documentElement.scrollWidth <= innerWidth")
    assert len(ada.shot("app")) > 40_000

    bob.driver.set_window_size(390, 844)
    bob.wait(lambda: bob.js("return innerWidth") <= 400)
    assert not bob.find("#left").is_displayed()
    assert bob.js("return document.documentElement.scrollWidth <= innerWidth")
    assert len(bob.shot("phone")) > 10_000
    bob.find("#toggle-left").click()
    bob.wait(lambda: bob.find("#left").is_displayed())
    assert bob.find("#left").rect["width"] <= 390
    assert len(bob.shot("phone-sidebar")) > 10_000
    bob.click(lambda: bob.sidebar_item("lobby"))
    bob.wait(lambda: not bob.find("#left").is_displayed(), "choosing a channel did not close the panel")
    bob.driver.set_window_size(1280, 860)


def test_hotkeys_names_and_dark_theme(site, browsers):
    ada, _ = browsers
    ada.click(lambda: ada.sidebar_item("lobby"))
    ada.wait(lambda: ada.message("sounds good"))
    keys = lambda key: ActionChains(ada.driver).send_keys(key).perform()  # noqa: E731
    focused = lambda: ada.js("return document.activeElement.id")  # noqa: E731
    ada.find("#messages").click()
    keys("/")
    ada.wait(lambda: focused() == "search", "/ did not focus the search box")
    keys(Keys.ESCAPE)
    ada.wait(lambda: focused() != "search", "Esc did not leave the search box")
    keys("x")
    ada.wait(lambda: ada.find("#mode-dm").get_attribute("aria-pressed") == "true", "x did not start a direct message")
    keys(Keys.ESCAPE)
    ada.find("#messages").click()
    keys("c")
    ada.wait(lambda: ada.find("#mode-stream").get_attribute("aria-pressed") == "true", "c did not start a channel message")
    keys(Keys.ESCAPE)

    # Every control a person can reach has a name a screen reader can say.
    controls = [e for e in ada.finds("button, a[href], input:not([type=hidden]), select, textarea, [tabindex='0']")
                if e.is_displayed()]
    assert len(controls) > 20
    nameless = [e.get_attribute("outerHTML")[:120] for e in controls if not (e.accessible_name or "").strip()]
    assert not nameless, nameless

    # Text keeps enough contrast, in the light theme and in the dark one, which follows the
    # system setting (a colour transition may still be running: look again until it ends).
    ada.contrast_holds("the light theme")
    light = ada.js("return getComputedStyle(document.body).backgroundColor")
    ada.driver.execute_cdp_cmd("Emulation.setEmulatedMedia",
                               {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    try:
        ada.contrast_holds("the dark theme")
        dark = ada.js("return getComputedStyle(document.body).backgroundColor")
        channels = [int(c) for c in dark[dark.index("(") + 1:dark.index(")")].split(",")[:3]]
        assert light != dark and max(channels) < 80, (light, dark)
        assert len(ada.shot("app-dark")) > 40_000
    finally:
        ada.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


def test_older_messages_load_on_scroll_and_an_attached_file_opens(site, browsers, tmp_path):
    ada, _ = browsers
    # Sixty messages in a topic: more than one page of fifty.
    for i in range(60):
        site.api("POST", "messages", type="stream", to="lobby", topic="history", content=f"old message {i}")
    lobby = site.api("GET", "get_stream_id", stream="lobby")["stream_id"]
    ada.driver.get(f"{site.url}/#narrow/channel/{lobby}/topic/history")
    ada.wait(lambda: len(ada.finds("#message-list .msg")) == 50, "the first page is not fifty messages")
    assert not ada.message("old message 9 ") and ada.message("old message 59")
    ada.js("document.getElementById('messages').scrollTop = 0")
    ada.wait(lambda: len(ada.finds("#message-list .msg")) == 60, "scrolling up did not load the older page")
    ada.wait(lambda: ada.finds(".history-start"), "the start of the topic is not marked")

    notes = tmp_path / "notes.txt"
    notes.write_text("minutes of the meeting")
    ada.find("#compose-file").send_keys(str(notes))
    ada.wait(lambda: "notes.txt" in ada.find("#compose-text").get_attribute("value"), "no link in compose")
    ada.find("#compose-text").send_keys(Keys.ENTER)
    link = ada.wait(lambda: ada.finds("#message-list .msg .content a[href*='/user_uploads/']"))[0]
    # The browser opens the file with its session (no API key in the page).
    fetched = ada.driver.execute_async_script(
        "fetch(arguments[0], {credentials: 'same-origin'}).then(r => r.text().then(t => arguments[1]([r.status, t])))",
        link.get_attribute("href"))
    assert fetched == [200, "minutes of the meeting"], fetched


def test_a_muted_topic_leaves_all_messages(site, browsers):
    _, bob = browsers
    lobby = site.api("GET", "get_stream_id", stream="lobby")["stream_id"]
    bob.driver.get(f"{site.url}/#narrow/channel/{lobby}/topic/greetings")
    select = bob.wait(lambda: bob.find('select[aria-label^="Topic notifications"]'))
    Select(select).select_by_value("1")
    bob.wait(lambda: "dim" in bob.sidebar_item("greetings").get_attribute("class"), "the muted topic is not dimmed")
    bob.click(lambda: bob.sidebar_item("Starred"))
    bob.wait(lambda: bob.find("#narrow-title").text == "Starred messages")
    # A known start: what Bob read a moment ago may still be on its way to the server (and the
    # badge is redrawn meanwhile), so the count is not read but made zero, on the server, and the
    # badge is waited on until it says so. In the Starred view nothing new is read on sight.
    site.api_as(bob.credentials, "POST", "mark_all_as_read")
    bob.wait(lambda: bob.badge("All messages") == "0", "marking all as read did not clear the count")
    site.api("POST", "messages", type="stream", to="lobby", topic="greetings", content="muted chatter")
    site.api("POST", "messages", type="stream", to="lobby", topic="news", content="loud news")
    bob.wait(lambda: bob.badge("All messages") == "1", "All messages counted a muted topic")
    bob.click(lambda: bob.sidebar_item("All messages"))
    bob.wait(lambda: bob.message("loud news"), "the other topic's message is not in All messages")
    assert not bob.message("muted chatter")
    bob.driver.get(f"{site.url}/#narrow/channel/{lobby}/topic/greetings")
    bob.wait(lambda: bob.message("muted chatter"), "the muted topic's own view does not show it")


def test_settings_sessions_and_channels(site, browsers):
    ada, bob = browsers
    # A name and a status set in Bob's settings reach Ada's people list live.
    bob.click(lambda: bob.find("#open-settings"))
    bob.wait(lambda: bob.find("#settings-view").is_displayed() and "#settings/profile" in bob.driver.current_url)
    name = bob.wait(lambda: bob.find("#full-name"))
    name.clear()
    name.send_keys("Robert")
    bob.find("#name-form button[type=submit]").click()
    status = bob.find("#status-text")
    status.send_keys("On a train")
    bob.find("#status-form button[type=submit]").click()
    ada.wait(lambda: any(p.find_element(By.CSS_SELECTOR, ".name").text == "Robert" for p in ada.finds("#people .person")),
             "Ada does not see Bob's new name")
    ada.wait(lambda: any("On a train" in p.text for p in ada.finds("#people .person")), "Ada does not see Bob's status")

    # A second session of Bob's (another browser) is listed and ended from the settings.
    other = requests.Session()
    signed_in = other.post(f"{site.url}/login/", data={"username": "bob@example.com", "password": "bob-password-1"},
                           headers={"Origin": site.url, "User-Agent": "Bob's other laptop"}, allow_redirects=False)
    assert signed_in.status_code == 303 and "sessionid" in other.cookies
    assert other.get(f"{site.url}/json/users/me").status_code == 200
    bob.find("#settings-close").click()
    bob.wait(lambda: not bob.finds("#settings-view"), "closing the settings left them open")
    bob.click(lambda: bob.find("#open-settings"))
    bob.click(lambda: bob.find('.settings-nav a[href="#settings/account-and-privacy"]'))
    end = bob.wait(lambda: bob.finds('#sessions button[aria-label="End the session of Bob\'s other laptop"]'))[0]
    end.click()
    bob.wait(lambda: not bob.finds('#sessions button[aria-label^="End the session"]'), "the ended session is still listed")
    assert other.get(f"{site.url}/json/users/me").status_code == 401
    bob.find("#settings-close").click()

    # Ada creates a channel, leaves it and joins it again from the channel browser.
    ada.click(lambda: ada.find('#left button[aria-label="Browse and create channels"]'))
    ada.wait(lambda: ada.find("#channels-dialog").is_displayed())
    ada.find("#new-channel-name").send_keys("design")
    ada.find("#create-channel button[type=submit]").click()
    ada.wait(lambda: ada.find("#narrow-title").text == "#design", "the new channel did not open")
    ada.wait(lambda: ada.sidebar_item("design"), "the new channel is not in the sidebar")
    ada.click(lambda: ada.find('#left button[aria-label="Browse and create channels"]'))
    leave = ada.wait(lambda: ada.finds('#channel-browser button[aria-label="Unsubscribe from design"]'))[0]
    leave.click()
    ada.wait(lambda: not ada.sidebar_item("design"), "unsubscribing left the channel in the sidebar")
    join = ada.wait(lambda: ada.finds('#channel-browser button[aria-label="Subscribe to design"]'))[0]
    join.click()
    ada.wait(lambda: ada.sidebar_item("design"), "subscribing again did not bring the channel back")
    ada.find("#channels-dialog .close").click()


class EvilPage(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_cross_site_form_post_is_refused(site, browsers, tmp_path):
    _, bob = browsers
    (tmp_path / "evil.html").write_text(
        f"""<!doctype html><form id="f" method="post" action="{site.url}/json/messages">
        <input name="type" value="stream"><input name="to" value="lobby"><input name="topic" value="pwned">
        <input name="content" value="forged by another site"></form>
        <button id="go">Win a prize</button><script src="evil.js"></script>""")
    (tmp_path / "evil.js").write_text("document.getElementById('go').onclick = () => document.getElementById('f').submit();")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    handler = lambda *a, **k: EvilPage(*a, directory=str(tmp_path), **k)  # noqa: E731
    evil = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    try:
        bob.driver.get(f"http://localhost:{port}/evil.html")
        bob.find("#go").click()
        bob.wait(lambda: bob.driver.current_url.startswith(site.url), "the form did not post")
    finally:
        evil.shutdown()
    found = site.api("GET", "messages", anchor="newest", num_before=50, num_after=0,
                     narrow='[{"operator": "channel", "operand": "lobby"}]')["messages"]
    assert not [m for m in found if "forged" in m["content"]]
    bob.driver.get(site.url + "/")
    bob.wait(lambda: bob.finds(".nav-item"))


def test_the_composer_goes_where_the_reader_looks(site, browsers):
    ada, _ = browsers
    # A channel whose name comes first in the list, so that "the first channel" and "the one
    # being read" differ.
    site.api("POST", "users/me/subscriptions", subscriptions='[{"name": "aardvarks"}]', principals=f"[{site.ada}]")
    lobby = site.api("GET", "get_stream_id", stream="lobby")["stream_id"]
    aardvarks = site.api("GET", "get_stream_id", stream="aardvarks")["stream_id"]
    ada.wait(lambda: ada.sidebar_item("aardvarks"), "the new channel is not in Ada's list")
    ada.click(lambda: ada.sidebar_item("lobby"))
    ada.wait(lambda: ada.find("#narrow-title").text == "#lobby")
    # After a reload the box is addressed to the channel being read, and says so.
    ada.driver.refresh()
    ada.wait(lambda: ada.find("#narrow-title").text == "#lobby", "the reload lost the narrow")
    ada.wait(lambda: ada.find("#compose-stream").get_attribute("value") == str(lobby),
             "after a reload the compose box is not addressed to the channel being read")
    assert ada.find("#compose-text").get_attribute("placeholder").startswith("Message #lobby")
    ada.find("#compose-topic").send_keys("after reload")
    ada.compose("Sent where I was reading")
    ada.wait(lambda: ada.message("Sent where I was reading"), "the message did not appear where Ada reads")
    sent = site.api_as(site.credentials("ada@example.com", "ada-password-1"), "GET", "messages",
                       anchor="newest", num_before=1, num_after=0, narrow="[]")["messages"][0]
    assert (sent["content"], sent["stream_id"]) == ("<p>Sent where I was reading</p>", lobby)
    # Pointed elsewhere by hand, the box turns back when the reader clicks the channel they read.
    Select(ada.find("#compose-stream")).select_by_value(str(aardvarks))
    ada.wait(lambda: ada.find("#compose-text").get_attribute("placeholder").startswith("Message #aardvarks"))
    ada.click(lambda: ada.sidebar_item("lobby"))
    ada.wait(lambda: ada.find("#compose-stream").get_attribute("value") == str(lobby),
             "clicking the channel being read did not turn the compose box to it")


def test_the_app_loads_after_many_visits_away_and_back(site, browsers):
    ada, _ = browsers
    ada.click(lambda: ada.sidebar_item("lobby"))
    ada.wait(lambda: ada.find("#narrow-title").text == "#lobby")
    app = ada.driver.current_url
    # Each visit away leaves the app's page in the browser's back/forward cache, and each new
    # visit loads it afresh. Cached pages used to keep their long-polls open, until the
    # browser's six connections to the server were taken and the next load hung.
    for visit in range(8):
        ada.driver.get(f"{site.url}/static/web/favicon.svg")
        ada.driver.get(app)
        ada.wait(lambda: ada.finds("#narrow-title") and ada.find("#narrow-title").text == "#lobby",
                 f"the app did not load on visit {visit + 1}")
        ada.wait(lambda: ada.finds(".people .person"), f"the app did not finish loading on visit {visit + 1}")
    # And it hears news live.
    site.api("POST", "messages", type="stream", to="lobby", topic="news", content="still live after the visits")
    ada.wait(lambda: ada.message("still live after the visits"), "no live message after visits away and back")
    # Back through the history, a page restored from the cache polls again too.
    ada.driver.back()
    ada.driver.back()
    ada.wait(lambda: ada.finds("#narrow-title") and ada.find("#narrow-title").text == "#lobby")
    site.api("POST", "messages", type="stream", to="lobby", topic="news", content="heard by a restored page")
    ada.wait(lambda: ada.message("heard by a restored page"), "a page restored from the cache heard nothing")


def test_logout(site, browsers):
    ada, _ = browsers
    ada.find("#logout").click()
    ada.wait(lambda: "/login/" in ada.driver.current_url, "logout did not lead to the login page")
    ada.driver.get(site.url + "/")
    ada.wait(lambda: "/login/" in ada.driver.current_url, "/ did not redirect to the login page")


class Authenticator:
    """An authenticator app (RFC 6238: HMAC-SHA1, 30-second steps, six digits) that never shows
    a step the server has seen used, within the one step of drift the server allows."""

    def __init__(self, secret):
        self.key = base64.b32decode(secret.replace(" ", ""))
        self.last = 0

    def code(self):
        t = time.time()
        if max(self.last + 1, int(t) // 30 - 1) == int(t) // 30 - 1 and t % 30 > 25:
            # The step before is accepted only while the server's clock is in this one: with
            # under 5 s of it left (the browser may take that long to send the code), the code
            # is made after the clock moves on.
            time.sleep(30 - t % 30 + 0.05)
        now = int(time.time()) // 30
        step = max(self.last + 1, now - 1)
        assert step <= now + 1, "no fresh code before the clock moves on"
        self.last = step
        digest = hmac.new(self.key, step.to_bytes(8, "big"), hashlib.sha1).digest()
        offset = digest[19] & 15
        return "%06d" % ((int.from_bytes(digest[offset:offset + 4], "big") & 0x7FFFFFFF) % 1_000_000)


def test_two_factor_set_up_in_the_settings_and_asked_at_login(site):
    site.api("POST", "users", email="cleo@example.com", password="cleo-password-1", full_name="Cleo")
    cleo = Browser()
    try:
        cleo.login(site.url, "cleo@example.com", "cleo-password-1")
        cleo.click(lambda: cleo.find("#open-settings"))
        cleo.click(lambda: cleo.find('.settings-nav a[href="#settings/account-and-privacy"]'))
        cleo.click(lambda: cleo.find('#two-factor button'))
        secret = cleo.wait(lambda: cleo.finds(".two-factor-secret") and cleo.find(".two-factor-secret").text)
        qr = cleo.find("#two-factor img.two-factor-qr")
        cleo.wait(lambda: cleo.js("return arguments[0].complete && arguments[0].naturalWidth", qr) >= 200,
                  "the QR code did not load")
        app = Authenticator(secret)
        cleo.find("#two-factor form input").send_keys(app.code())
        cleo.find("#two-factor form button[type=submit]").click()
        cleo.wait(lambda: len(cleo.finds("#backup-codes li")) == 10, "no backup codes were shown")
        backup = cleo.finds("#backup-codes li")[0].text
        assert len(backup) == 8, backup
        cleo.find("#two-factor button").click()
        cleo.wait(lambda: "10 backup codes left" in cleo.find("#two-factor-state").text)
        cleo.find("#settings-close").click()
        cleo.find("#logout").click()
        cleo.wait(lambda: "/login/" in cleo.driver.current_url)

        # The password, then the code; a wrong code says so and keeps the step.
        cleo.find("#username").send_keys("cleo@example.com")
        cleo.find("#password").send_keys("cleo-password-1")
        cleo.find("form button[type=submit]").click()
        cleo.wait(lambda: cleo.find("#two-factor-form").is_displayed(), "the login did not ask for a code")
        assert not cleo.find("form.login-form").is_displayed()
        cleo.find("#code").send_keys("000000")
        cleo.find("#two-factor-form button[type=submit]").click()
        cleo.wait(lambda: "Invalid token" in cleo.find("#login-error").text, "a wrong code was not refused")
        cleo.find("#code").send_keys(app.code())
        cleo.find("#two-factor-form button[type=submit]").click()
        cleo.wait(lambda: cleo.finds(".nav-item") and cleo.finds(".people .person"), "the app did not load")
        cleo.collect_log()
        bad = [e for e in cleo.log if "Content Security Policy" in e["message"]]
        assert not bad, bad
    finally:
        cleo.quit()


def test_an_administrator_opens_the_audit_page_with_the_session(site):
    owner = Browser()
    try:
        password = (site.server.data_dir / "initial-password").read_text().strip()
        owner.login(site.url, site.auth[0], password)
        owner.click(lambda: owner.find("#open-settings"))
        owner.click(lambda: owner.find('.settings-nav a[href="#settings/account-and-privacy"]'))
        link = owner.wait(lambda: owner.find("#admin-link").is_displayed() and owner.find("#admin-link a"))
        assert link.get_attribute("href").endswith("/admin/")
        owner.driver.get(site.url + "/admin/")
        owner.wait(lambda: "RealmCreated" in owner.find("#events").text, "the audit page did not list the log")
        assert owner.find("#who").text == site.auth[0]
        assert not owner.find("#login").is_displayed()
    finally:
        owner.quit()


def test_the_server_away_and_back(tmp_path):
    """While the server is down the page says it is reconnecting; once it is back the client
    registers again (its queue died with the server) and live messages arrive again."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data = tmp_path / "data"
    server = RunningServer(data, bind=f"127.0.0.1:{port}")
    browser = Browser()
    try:
        site = Site(server)
        site.api("POST", "users", email="cy@example.com", password="cy-password-1", full_name="Cy")
        site.api("POST", "users/me/subscriptions", subscriptions='[{"name": "ops"}]', principals='["cy@example.com"]')
        browser.login(site.url, "cy@example.com", "cy-password-1")
        browser.click(lambda: browser.sidebar_item("ops"))
        browser.wait(lambda: browser.find("#narrow-title").text == "#ops")
        assert not browser.find("#reconnecting").is_displayed()

        server.stop()
        browser.wait(lambda: browser.find("#reconnecting").is_displayed(), "no reconnecting banner while the server is away")
        server = RunningServer(data, bind=f"127.0.0.1:{port}")
        browser.wait(lambda: not browser.find("#reconnecting").is_displayed(), "the banner stayed after the server came back",
                     timeout=40)
        site.api("POST", "messages", type="stream", to="ops", topic="status", content="back online")
        browser.wait(lambda: browser.message("back online"), "no live message after the server came back", timeout=40)
    finally:
        browser.quit()
        server.stop()
