"""The server's wall clock jumps under load: back an hour, then forward a day.

libfaketime (Debian's libfaketime, which the suite installs) shifts the clock the server reads
by an offset kept in a file the test rewrites while four clients keep sending; the monotonic
clock, which timeouts and expiries run on, is left alone. The log must keep its order: message
timestamps never go backwards in id order, the step back is recorded in the log with the wall
time, and after a restart on a clock a day behind the log nothing goes backwards either.
"""

import json
import pathlib
import subprocess
import threading
import time

import pytest
import requests

from conftest import RunningServer, api, chronicle_binary, owner_auth, wait_for

FAKETIME = pathlib.Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1")

pytestmark = pytest.mark.skipif(not FAKETIME.exists(), reason="libfaketime is not installed")

HOUR_MS = 3600 * 1000
DAY_MS = 24 * HOUR_MS


def set_offset(path, offset):
    """Sets the clock's offset as one rename, so that libfaketime never reads a half-written file."""
    written = path.with_suffix(".new")
    written.write_text(offset + "\n")
    written.replace(path)


class Senders:
    """Four clients sending messages until stopped; the ids acknowledged."""

    def __init__(self, server, auth):
        self.acknowledged = []
        self.refused = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [
            threading.Thread(target=self.send, args=(server, auth, n), daemon=True) for n in range(4)
        ]
        for thread in self.threads:
            thread.start()

    def send(self, server, auth, n):
        session = requests.Session()
        i = 0
        while not self.stopping.is_set():
            i += 1
            answer = session.post(
                f"{server.url}/api/v1/messages", auth=auth, timeout=30,
                data={"type": "stream", "to": "clock", "topic": f"sender {n}",
                      "content": f"message {i} from sender {n}"},
            ).json()
            with self.lock:
                if answer["result"] == "success":
                    self.acknowledged.append(answer["id"])
                else:
                    self.refused.append(answer)

    def count(self):
        with self.lock:
            return len(self.acknowledged)

    def wait_for_more(self, n):
        start = self.count()
        wait_for(lambda: self.count() >= start + n, f"{n} more acknowledged sends")

    def stop(self):
        self.stopping.set()
        for thread in self.threads:
            thread.join(30)


def clock_events(server, auth):
    answer = api(server, "GET", "/admin/events", auth=auth,
                 params={"type": "ClockWentBack", "limit": 100}).json()
    assert answer["result"] == "success", answer
    return answer["events"]


def all_messages(server, auth):
    answer = api(server, "GET", "/messages", auth=auth, params={
        "anchor": "oldest", "num_before": 0, "num_after": 5000, "apply_markdown": "false",
        "narrow": json.dumps([{"operator": "channel", "operand": "clock"}]),
    }).json()
    assert answer["result"] == "success", answer
    return [(m["id"], m["timestamp"]) for m in answer["messages"]]


def send_one(server, auth, content):
    answer = api(server, "POST", "/messages", auth=auth, data={
        "type": "stream", "to": "clock", "topic": "alone", "content": content}).json()
    assert answer["result"] == "success", answer
    return answer["id"]


def timestamp_of(server, auth, message_id):
    answer = api(server, "GET", f"/messages/{message_id}", auth=auth).json()
    assert answer["result"] == "success", answer
    return answer["message"]["timestamp"]


def test_the_log_keeps_its_order_when_the_clock_steps_back_an_hour_then_forward_a_day(tmp_path):
    offset = tmp_path / "faketime"
    set_offset(offset, "+0")
    faked = {
        "LD_PRELOAD": str(FAKETIME),
        "FAKETIME_TIMESTAMP_FILE": str(offset),
        "FAKETIME_NO_CACHE": "1",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    }
    data = tmp_path / "data"
    # Four clients at full speed are far over Zulip's 200 requests a minute.
    unlimited = ["--rate-limit-user", "0"]
    server = RunningServer(data, extra_args=unlimited, env=faked)
    auth = owner_auth(server)
    made = api(server, "POST", "/users/me/subscriptions", auth=auth,
               data={"subscriptions": json.dumps([{"name": "clock"}])}).json()
    assert made["result"] == "success", made
    # An invitation valid for two days, made before the jumps.
    invite = api(server, "POST", "/invites/multiuse", auth=auth,
                 data={"invite_expires_in_minutes": 2 * 24 * 60}).json()
    assert invite["result"] == "success", invite

    senders = Senders(server, auth)
    try:
        senders.wait_for_more(50)
        real_ms = time.time() * 1000
        set_offset(offset, "-1h")
        # The writer notices the step at its next batch and records it in the log.
        wait_for(lambda: clock_events(server, auth), "the step back recorded in the log")
        senders.wait_for_more(50)
        set_offset(offset, "+1d")
        wait_for(lambda: timestamp_of(server, auth, send_one(server, auth, "later"))
                 > time.time() + 23 * 3600, "timestamps a day ahead")
        senders.wait_for_more(50)
    finally:
        senders.stop()
    assert senders.refused == [], senders.refused[:3]

    # Every acknowledged message is there, and timestamps never go backwards in id order.
    kept = all_messages(server, auth)
    ids = [m for m, _ in kept]
    assert set(senders.acknowledged) <= set(ids)
    assert ids == sorted(ids)
    stamps = [t for _, t in kept]
    backwards = [(a, b) for a, b in zip(kept, kept[1:]) if b[1] < a[1]]
    assert backwards == [], backwards[:5]
    assert stamps[-1] - stamps[0] > 23 * 3600

    # The step back is in the log: the wall time the writer read, and the time it kept.
    (step,) = clock_events(server, auth)
    event = step["payload"]
    assert abs(event["wall_ms"] - (real_ms - HOUR_MS)) < 10 * 60 * 1000, event
    assert event["log_ms"] - event["wall_ms"] > HOUR_MS - 60 * 1000, event

    # A day later on the server's clock, the two-day invitation still opens its form.
    joined = requests.get(invite["invite_link"], timeout=30)
    assert joined.status_code == 200
    assert "expired" not in joined.text

    # A restart on the true clock, now a day behind the log: nothing goes backwards, and the
    # step is recorded again.
    server.stop()
    server = RunningServer(data, extra_args=unlimited)
    try:
        before = stamps[-1]
        after = send_one(server, auth, "after the restart")
        assert timestamp_of(server, auth, after) >= before
        assert len(clock_events(server, auth)) == 2
    finally:
        server.stop()
    verified = subprocess.run([chronicle_binary(), "verify", "--data-dir", str(data)],
                              capture_output=True, text=True, timeout=120)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "chain: intact" in verified.stdout, verified.stdout
