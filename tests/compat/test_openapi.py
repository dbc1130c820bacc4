"""Fuzzes a server of its own against `schema/openapi.yaml` with the schemathesis CLI.

The run mutates the organization heavily (channels, users, settings), so it does not share the
suite's `server` fixture. It is bounded: a few examples per operation, a per-request timeout,
and a short long-poll heartbeat so `GET /events` never waits long.

This file is also the run's schemathesis hooks module (`SCHEMATHESIS_HOOKS`): the hooks at the
bottom register only when schemathesis loads the file, not when pytest collects it.
"""

import base64
import configparser
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "schema" / "openapi.yaml"
SCHEMATHESIS = pathlib.Path(sys.executable).with_name("schemathesis")

# Operations left out of the fuzz run (they stay in the document). Regenerating the owner's
# API key would lock the run out of its own credentials for every later request, and so would
# the owner deactivating their own account (once the fuzzing has made a second owner).
# Deactivating the owner by id is not excluded as an operation but filtered out by the
# `filter_case` hook below, so `DELETE /users/{user_id}` is still fuzzed for everyone else.
EXCLUDED_OPERATION_IDS = ["regenerate-api-key", "deactivate-own-user"]

CHECKS = [
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    # Methods a path does not serve get 405 with `Allow` (described in the document's info).
    "unsupported_method",
]

# Bounds: about a minute on two cores for some 200 operations (the coverage phase's boundary
# values take 40 s of it whatever the number of examples; the fuzzing phase took 38 s at 10
# examples an operation). Positive and negative data (`--mode all`), a fixed seed so that a
# failure can be replayed, one worker (the server has two cores of its own to use).
MAX_EXAMPLES = 6
REQUEST_TIMEOUT_SECS = 10
SEED = 20251124


def run_schemathesis(url, email, api_key, workdir):
    command = [
        str(SCHEMATHESIS),
        "run",
        str(SCHEMA),
        "--url",
        url,
        "--auth",
        f"{email}:{api_key}",
        "--checks",
        ",".join(CHECKS),
        "--mode",
        "all",
        "--phases",
        "examples,coverage,fuzzing",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--request-timeout",
        str(REQUEST_TIMEOUT_SECS),
        "--seed",
        str(SEED),
        "--workers",
        "1",
        "--no-shrink",
        "--suppress-health-check",
        "all",
    ]
    for operation_id in EXCLUDED_OPERATION_IDS:
        command += ["--exclude-operation-id", operation_id]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": str(pathlib.Path(__file__).resolve())}
    # In a scratch directory: the CLI keeps its caches (.hypothesis, .schemathesis) in the
    # working directory.
    return subprocess.run(
        command, env=env, cwd=workdir, capture_output=True, text=True, timeout=600
    )


def summarize(output):
    """Operations tested, test cases generated and failures, from the CLI's summary."""

    def number(pattern):
        match = re.search(pattern, output)
        return int(match.group(1)) if match else 0

    return (
        number(r"Tested: (\d+)"),
        number(r"(\d+) generated"),
        number(r"(\d+) unique failures?"),
    )


class Api:
    """A few authenticated calls, for the seed data."""

    def __init__(self, url, email, api_key):
        self.url = url
        token = base64.b64encode(f"{email}:{api_key}".encode()).decode()
        self.headers = {"Authorization": f"Basic {token}"}

    def call(self, method, path, body=b"", content_type="application/x-www-form-urlencoded"):
        request = urllib.request.Request(
            self.url + "/api/v1" + path,
            data=body,
            method=method,
            headers={**self.headers, "Content-Type": content_type},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)

    def form(self, method, path, **params):
        encoded = {
            k: v if isinstance(v, str) else json.dumps(v) for k, v in params.items()
        }
        return self.call(method, path, urllib.parse.urlencode(encoded).encode())


# A 1x1 PNG, for the custom emoji of the seed data.
PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def seed(api):
    """What the document's examples name, so that the run reaches past "no such ..." answers.
    Ids follow from the order: channels 1-3, users 2-4 and the bot 5, messages 1-5, groups
    9-10, linkifiers 1-2, profile fields 1-2, folder 1, invitations 1-4 and the custom emoji
    `party_parrot` (1.png). The examples that delete or deactivate use the spare ones (channel
    3, user 4, message 5, group 10, linkifier 2, field 2, invitations 3 and 4)."""
    for name in ("general", "dev", "archive-me"):
        api.form("POST", "/channels/create", name=name, subscribers=[1])
    for name in ("alice", "bob", "carol"):
        api.form(
            "POST", "/users",
            email=f"{name}@example.com", password="a long password", full_name=name.title(),
        )
    api.form(
        "POST", "/users/me/subscriptions",
        subscriptions=[{"name": "general"}], principals=[2, 3], send_new_subscription_messages=False,
    )
    api.form("POST", "/bots", full_name="Seed bot", short_name="seed")
    for n in range(3):
        api.form("POST", "/messages", type="stream", to="general", topic="greetings", content=f"hi {n}")
    api.form("POST", "/messages", type="direct", to=[2], content="hello Alice")
    api.form("POST", "/messages", type="stream", to="general", topic="scratch", content="delete me")
    for name in ("seeded", "spare"):
        api.form("POST", "/user_groups/create", name=name, description="Seed data", members=[1, 2])
    for host in ("tracker", "wiki"):
        api.form(
            "POST", "/realm/filters",
            pattern=f"{host[0]}#(?P<id>[0-9]+)", url_template=f"https://{host}.example.com/{{id}}",
        )
    for name in ("Phone number", "Team"):
        api.form("POST", "/realm/profile_fields", field_type=1, name=name)
    api.form("POST", "/channel_folders/create", name="Engineering", description="Seed data")
    for email in ("friend@example.com", "other@example.com"):
        api.form("POST", "/invites", invitee_emails=email, stream_ids=[1])
        api.form("POST", "/invites/multiuse", stream_ids=[1])
    boundary = "chronicle-seed-boundary"
    body = (
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"p.png\"\r\n"
        f"Content-Type: image/png\r\n\r\n"
    ).encode() + PIXEL_PNG + f"\r\n--{boundary}--\r\n".encode()
    api.call("POST", "/realm/emoji/party_parrot", body, f"multipart/form-data; boundary={boundary}")


def test_openapi_document_matches_the_server(capsys):
    from conftest import RunningServer

    with tempfile.TemporaryDirectory() as tmp:
        running = RunningServer(
            pathlib.Path(tmp) / "data",
            extra_args=[
                "--rate-limit-user", "0",
                "--rate-limit-ip", "0",
                "--rate-limit-logins", "0",
                "--heartbeat-secs", "1",
            ],
        )
        try:
            rc = configparser.ConfigParser()
            rc.read(running.zuliprc)
            email, api_key = rc["api"]["email"], rc["api"]["key"]
            seed(Api(running.url, email, api_key))
            result = run_schemathesis(running.url, email, api_key, tmp)
        finally:
            running.stop()
        operations, examples, failures = summarize(result.stdout)
        # The CLI's report shows with the failure; the counts always, past pytest's capture.
        print(result.stdout[-8000:])
        print(result.stderr[-3000:], file=sys.stderr)
        with capsys.disabled():
            print(
                f"\nschemathesis: {operations} operations, {examples} examples,"
                f" {failures} failures"
            )
        assert result.returncode == 0, "schemathesis found failures (see the output above)"


if __name__ == "_schemathesis_hooks":
    import schemathesis

    # The first account of a new organization: the owner the run authenticates as.
    OWNER_ID = 1

    def _json_fields(case):
        """Form fields the document marks `contentType: application/json`."""
        body = case.operation.definition.raw.get("requestBody") or {}
        media = (body.get("content") or {}).get(case.media_type or "") or {}
        return {
            name
            for name, encoding in (media.get("encoding") or {}).items()
            if "application/json" in str(encoding.get("contentType", ""))
        }

    # Bodies already encoded, by id (kept alive so that an id is never reused): a case may be
    # sent more than once, and its fields must be encoded once.
    _ENCODED = {}

    @schemathesis.hook
    def before_call(context, case, kwargs):
        # Schemathesis sends form fields of lists and objects as repeated keys; the document
        # (like Zulip's) says these fields carry JSON text, so encode them as such.
        body = case.body
        if case.media_type != "application/x-www-form-urlencoded" or not isinstance(body, dict):
            return
        if _ENCODED.get(id(body)) is body:
            return
        _ENCODED[id(body)] = body
        for name in _json_fields(case):
            if name in body:
                body[name] = json.dumps(body[name])

    @schemathesis.hook
    def filter_case(context, case):
        # Never deactivate the owner whose credentials the run uses.
        operation = case.operation
        if operation.method.upper() == "DELETE" and operation.path == "/api/v1/users/{user_id}":
            return str((case.path_parameters or {}).get("user_id")) != str(OWNER_ID)
        return True
