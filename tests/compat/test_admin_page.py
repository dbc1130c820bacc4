"""The audit page (`/admin/`) in a real browser: headless Chromium (Debian's `chromium`) signs
in, lists the log, opens one event and shows the change it caused and the state as of it."""

import pathlib
import shutil
import subprocess
import tempfile

import pytest
import requests

from conftest import RunningServer

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(*args):
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,900",
         "--virtual-time-budget=8000", *args],
        capture_output=True, text=True, timeout=120,
    )


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/test.sh installs it)")
def test_audit_page_shows_an_event_its_change_and_the_state():
    with tempfile.TemporaryDirectory() as tmp:
        server = RunningServer(pathlib.Path(tmp) / "data")
        try:
            config = dict(line.split("=", 1) for line in server.zuliprc.read_text().splitlines() if "=" in line)
            auth = (config["email"], config["key"])
            created = requests.post(
                f"{server.url}/api/v1/users", auth=auth, timeout=15,
                data={"email": "ivy@example.com", "password": "ivy-password", "full_name": "Ivy"},
            ).json()
            assert created["result"] == "success", created
            renamed = requests.patch(
                f"{server.url}/api/v1/users/{created['user_id']}", auth=auth, timeout=15,
                data={"full_name": "Ivy Oak"},
            ).json()
            assert renamed["result"] == "success", renamed
            last = requests.get(f"{server.url}/api/v1/admin/events", auth=auth, timeout=15,
                                params={"type": "UserChanged"}).json()["events"][-1]["seq"]
            url = f"{server.url}/admin/#email={auth[0]}&key={auth[1]}&seq={last}"

            dom = chromium("--dump-dom", url)
            assert dom.returncode == 0, dom.stderr
            html = dom.stdout
            assert f"Event {last}: UserChanged" in html, html[:2000]
            assert "RealmCreated" in html and "UserCreated" in html
            assert "/users/1/full_name" in html and "Ivy Oak" in html
            # Secrets stay redacted in the browser too; the key left the address bar.
            assert '"[redacted]"' in html
            assert auth[1] not in html

            shot = pathlib.Path(tmp) / "audit.png"
            taken = chromium(f"--screenshot={shot}", url)
            assert taken.returncode == 0, taken.stderr
            png = shot.read_bytes()
            assert png[:8] == b"\x89PNG\r\n\x1a\n"
            # A rendered page of text, tables and colour compresses far worse than a blank one
            # (about 5 KB at this size).
            assert len(png) > 40_000, len(png)

            # Without credentials the page asks for them and the API refuses.
            login = chromium("--dump-dom", f"{server.url}/admin/")
            assert 'id="login"' in login.stdout and 'id="login" hidden' not in login.stdout
            refused = requests.get(f"{server.url}/api/v1/admin/events", timeout=15)
            assert refused.status_code == 401
        finally:
            server.stop()
