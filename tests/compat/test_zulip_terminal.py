"""zulip-term 0.7.0, unchanged, in a real terminal (tmux) against Chronicle: it starts, shows the
user's channels and messages, and displays a message someone else sends while it runs."""

import os
import pathlib
import shutil
import subprocess
import sys
import time

import pytest
import requests
import zulip

ZULIP_TERM = pathlib.Path(sys.executable).parent / "zulip-term"
# A tmux server of our own. Its environment must not carry pytest's variables: zulip-term turns
# its background threads off when it sees PYTEST_CURRENT_TEST (a hook for its own test suite).
TMUX = ["tmux", "-L", "chronicle-compat"]
CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}


def pane(session):
    return subprocess.run(
        TMUX + ["capture-pane", "-t", session, "-p"], capture_output=True, text=True, check=True
    ).stdout


def wait_for(session, text, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        screen = pane(session)
        if text in screen:
            return screen
        time.sleep(0.5)
    raise AssertionError(f"{text!r} never appeared on screen:\n{pane(session)}")


@pytest.mark.skipif(shutil.which("tmux") is None or not ZULIP_TERM.exists(), reason="needs tmux and zulip-term")
def test_zulip_term_shows_channels_and_live_messages(server):
    owner = zulip.Client(config_file=str(server.zuliprc))
    created = owner.call_endpoint(
        url="channels/create", method="POST", request={"name": "terminal-room", "subscribers": [1]}
    )
    assert created["result"] == "success", created
    sent = owner.send_message(
        {"type": "stream", "to": "terminal-room", "topic": "greetings", "content": "Written before start"}
    )
    assert sent["result"] == "success", sent

    session = "chronicle-zt"
    subprocess.run(TMUX + ["kill-server"], capture_output=True, env=CLEAN_ENV)
    subprocess.run(
        # zulip-term writes zulip-terminal-tracebacks.log into its working directory: the
        # server's temporary folder, not the checkout.
        TMUX
        + ["new-session", "-d", "-s", session, "-c", str(server.data_dir.parent), "-x", "200", "-y", "50"]
        + [f"{ZULIP_TERM} -c {server.zuliprc}"],
        check=True,
        env=CLEAN_ENV,
    )
    try:
        screen = wait_for(session, "Written before start")
        assert "terminal-room" in screen

        # Someone else writes while the client runs; the long-poll delivers it.
        owner.create_user({"email": "zt-peer@example.com", "password": "peer-password", "full_name": "Peer Person"})
        key = requests.post(
            f"{server.url}/api/v1/fetch_api_key",
            data={"username": "zt-peer@example.com", "password": "peer-password"},
            timeout=15,
        ).json()["api_key"]
        peer = zulip.Client(email="zt-peer@example.com", api_key=key, site=server.url)
        assert peer.add_subscriptions(streams=[{"name": "terminal-room"}])["result"] == "success"
        assert peer.send_message(
            {"type": "stream", "to": "terminal-room", "topic": "greetings", "content": "Live from a peer"}
        )["result"] == "success"
        screen = wait_for(session, "Live from a peer")
        assert "Peer Person" in screen
    finally:
        subprocess.run(TMUX + ["kill-server"], capture_output=True)
