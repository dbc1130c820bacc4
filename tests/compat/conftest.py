"""Starts a real `chronicle serve` on port 0 in a temporary data directory for the suite."""

import os
import pathlib
import re
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse

import pytest
import requests

ROOT = pathlib.Path(__file__).resolve().parents[2]


def free_port():
    """A loopback port nothing listens on now (for a process the test starts)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(condition, what, seconds=30):
    """Waits until `condition()` holds, checking every 50 ms; fails naming `what`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def chronicle_binary():
    """The binary under test (`CHRONICLE_BIN`, else the debug build)."""
    return os.environ.get("CHRONICLE_BIN", str(ROOT / "target" / "debug" / "chronicle"))


class RunningServer:
    def __init__(self, data_dir: pathlib.Path, extra_args=(), bind="127.0.0.1:0", env=None):
        binary = chronicle_binary()
        self.data_dir = data_dir
        # The server's log, kept beside the data directory for failure reports.
        self.log_path = data_dir.parent / "server.log"
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [binary, "serve", "--data-dir", str(data_dir), "--bind", bind, *extra_args],
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env={**os.environ, "RUST_LOG": "info,actix_web::middleware::logger=info", **(env or {})},
        )
        self.url = None
        self.metrics_url = None
        ready = threading.Event()

        def read_stdout():
            for line in self.process.stdout:
                metrics = re.match(r"Metrics on (\S+)", line)
                if metrics:
                    self.metrics_url = metrics.group(1)
                match = re.match(r"Chronicle listening on (\S+)", line)
                if match:
                    self.url = match.group(1)
                    ready.set()

        threading.Thread(target=read_stdout, daemon=True).start()
        if not ready.wait(60):
            self.process.kill()
            raise RuntimeError("chronicle did not start")
        self.zuliprc = data_dir / "zuliprc"

    def stop(self):
        self.process.terminate()
        assert self.process.wait(30) == 0
        self.log.close()


def api(server, method, path, auth=None, **kwargs):
    """A request to the server's API (`/api/v1` + `path`)."""
    return requests.request(method, f"{server.url}/api/v1{path}", auth=auth, timeout=30, **kwargs)


def owner_auth(server):
    """The owner's email and API key, from the zuliprc the server wrote."""
    lines = dict(
        line.split("=", 1) for line in server.zuliprc.read_text().splitlines() if "=" in line
    )
    return (lines["email"].strip(), lines["key"].strip())


def error_of(answer):
    """The login page's error code a redirect names."""
    location = answer.headers["location"]
    return urllib.parse.parse_qs(urllib.parse.urlparse(location).query).get("error", [None])[0]


def otp_decrypt(encrypted, otp):
    """The mobile app's decoding: the hex digits XORed with the pad's, read as ASCII."""
    digits = "".join(format(int(a, 16) ^ int(b, 16), "x") for a, b in zip(encrypted, otp))
    return bytes.fromhex(digits).decode()


@pytest.fixture(scope="session")
def server():
    with tempfile.TemporaryDirectory() as tmp:
        running = RunningServer(pathlib.Path(tmp) / "data")
        yield running
        running.stop()
