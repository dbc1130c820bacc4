"""Mobile push through Zulip's push notification service, end to end but for Apple and Google:
a stand-in service on loopback (push_bouncer.py: the service's side of the protocol, every
request checked against Zulip's documented shapes), and the test playing zulip-flutter as its
source does at feature level 468 and later (lib/model/push_device.dart, lib/notifications/):
`register_client_device`, then `mobile_push/register` with a fresh secretbox key and a token
sealed for the service.

It checks that the registration reaches the service and comes back as `device` state; that a
direct message to someone away is pushed, encrypted so that only the device opens it, with
Zulip's payload; that reading it elsewhere pushes its removal; the test notification; a
registration the service refuses; and that a service that is down gets the push once it is
back."""

import base64
import hashlib
import json
import os
import pathlib
import random
import tempfile
import time
import uuid

import pytest
from nacl.public import PublicKey, SealedBox

from conftest import RunningServer, api, owner_auth, wait_for
from push_bouncer import Bouncer, open_payload, token_id_of

ORG_ID = str(uuid.uuid4())
ORG_KEY = "k" * 64


@pytest.fixture(scope="module")
def setup():
    bouncer = Bouncer(ORG_ID, ORG_KEY)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        config = tmp / "chronicle.toml"
        config.write_text(
            "[push]\n"
            f'url = "{bouncer.url}"\n'
            f'zulip_org_id = "{ORG_ID}"\n'
            f'zulip_org_key = "{ORG_KEY}"\n'
            "[outgoing]\n"
            'allow = ["127.0.0.1"]\n'
        )
        server = RunningServer(tmp / "data", ["--config", str(config)])
        owner = owner_auth(server)
        people = {}
        for name in ("ada", "ben"):
            answer = api(server, "POST", "/users", auth=owner, data={
                "email": f"{name}@example.com", "password": f"{name}-password-1",
                "full_name": name.capitalize()})
            assert answer.status_code == 200, answer.text
            key = api(server, "POST", "/fetch_api_key", data={
                "username": f"{name}@example.com", "password": f"{name}-password-1"}).json()["api_key"]
            people[name] = (answer.json()["user_id"], (f"{name}@example.com", key))
        yield server, bouncer, people
        server.stop()
        bouncer.stop()


class App:
    """One install of the mobile app, registering as zulip-flutter does."""

    def __init__(self, server, auth, bouncer_public_key, token):
        self.server, self.auth, self.token = server, auth, token
        answer = api(server, "POST", "/register_client_device", auth=auth)
        assert answer.status_code == 200, answer.text
        self.device_id = answer.json()["device_id"]
        self.key = os.urandom(32)
        self.key_id = random.randrange(1 << 32)
        registration = json.dumps({"token_kind": "fcm", "token": token, "timestamp": int(time.time())})
        sealed = SealedBox(PublicKey(base64.b64decode(bouncer_public_key))).encrypt(registration.encode())
        self.answer = api(server, "POST", "/mobile_push/register", auth=auth, data={
            "device_id": str(self.device_id),
            "push_key_id": str(self.key_id),
            "push_key": base64.b64encode(b"\x31" + self.key).decode(),
            "token_kind": "fcm",
            "token_id": token_id_of(token),
            "bouncer_public_key": bouncer_public_key,
            "encrypted_push_registration": base64.b64encode(sealed).decode(),
        })

    def device(self):
        state = api(self.server, "POST", "/register", auth=self.auth,
                    data={"fetch_event_types": '["device"]'}).json()
        return state["devices"][str(self.device_id)]


def pushes_to(bouncer, app):
    """Every payload the service was asked to deliver to `app`, opened with its key."""
    token_id = token_id_of(app.token)
    found = []
    for request in bouncer.notified:
        for item in request["push_requests"]:
            if item["token_id"] == token_id:
                assert item["payload"]["push_key_id"] == app.key_id
                found.append(open_payload(app.key, item["payload"]["encrypted_data"]))
    return found


@pytest.fixture(scope="module")
def ben_app(setup):
    """Ben's app, registered once for the module's tests (the first one looks at it closely)."""
    server, bouncer, people = setup
    app = App(server, people["ben"][1], bouncer.public_key, "fcm-token-ben-1")
    assert app.answer.status_code == 200, app.answer.text
    wait_for(lambda: app.device()["push_token_id"] == token_id_of(app.token), "the registration")
    return app


def test_the_server_says_push_works_and_an_app_registers(setup, ben_app):
    server, bouncer, people = setup
    assert api(server, "GET", "/server_settings").json()["push_notifications_enabled"] is True
    app = ben_app
    device = app.device()
    assert device == {"push_key_id": app.key_id, "push_token_id": token_id_of(app.token),
                      "pending_push_token_id": None,
                      "push_token_last_updated_timestamp": device["push_token_last_updated_timestamp"],
                      "push_registration_error_code": None}
    assert bouncer.registered[token_id_of(app.token)]["token"] == "fcm-token-ben-1"
    assert bouncer.servers == [server.url.split("://")[1]], "the server registered itself"
    # The data directory never holds the key.
    assert not bouncer.failures
    key_text = base64.b64encode(b"\x31" + app.key).decode()
    for path in (server.data_dir).rglob("*"):
        if path.is_file():
            blob = path.read_bytes()
            assert app.key not in blob and key_text.encode() not in blob, path


def test_a_message_is_pushed_encrypted_and_taken_away_when_read(setup, ben_app):
    server, bouncer, people = setup
    app = ben_app
    (ada_id, ada), (ben_id, ben) = people["ada"], people["ben"]
    answer = api(server, "POST", "/messages", auth=ada, data={
        "type": "direct", "to": f"[{ben_id}]", "content": "Are you **free** at 3?"})
    message_id = answer.json()["id"]
    wait_for(lambda: any(p["type"] == "message" and p["message_id"] == message_id
                         for p in pushes_to(bouncer, app)), "the push")
    [push] = [p for p in pushes_to(bouncer, app) if p.get("message_id") == message_id]
    assert push["content"] == "Are you free at 3?"
    assert push["sender_id"] == ada_id and push["sender_full_name"] == "Ada"
    assert push["recipient_type"] == "direct"
    assert push["recipient_user_ids"] == sorted([ada_id, ben_id])
    assert push["user_id"] == ben_id and push["realm_url"] == server.url
    # Read on another client: the notification is taken away.
    api(server, "POST", "/messages/flags", auth=ben,
        data={"messages": f"[{message_id}]", "op": "add", "flag": "read"})
    wait_for(lambda: any(p["type"] == "remove" and message_id in p["message_ids"]
                         for p in pushes_to(bouncer, app)), "the removal")
    assert not bouncer.failures, bouncer.failures


def test_the_test_notification_and_its_errors(setup, ben_app):
    server, bouncer, people = setup
    app = ben_app
    ben = people["ben"][1]
    answer = api(server, "POST", "/mobile_push/e2ee/test_notification", auth=ben,
                 data={"device_id": str(app.device_id)})
    assert answer.status_code == 200, answer.text
    assert any(p["type"] == "test" for p in pushes_to(bouncer, app))
    answer = api(server, "POST", "/mobile_push/e2ee/test_notification", auth=ben,
                 data={"device_id": "999"})
    assert answer.status_code == 400
    assert answer.json()["code"] == "NO_ACTIVE_PUSH_DEVICE"
    bouncer.down = True
    try:
        answer = api(server, "POST", "/mobile_push/test_notification", auth=ben)
        assert answer.status_code == 502
        assert answer.json()["code"] == "INTERNAL_SERVER_ERROR_ON_BOUNCER"
    finally:
        bouncer.down = False


def test_a_refused_registration_shows_on_the_device(setup):
    server, bouncer, people = setup
    ada = people["ada"][1]
    bouncer.refuse_registrations = "REQUEST_EXPIRED"
    try:
        app = App(server, ada, bouncer.public_key, "fcm-token-ada-1")
        assert app.answer.status_code == 200, app.answer.text
        wait_for(lambda: app.device()["push_registration_error_code"] == "REQUEST_EXPIRED",
                 "the refusal")
    finally:
        bouncer.refuse_registrations = None
    # Registering again after a failure is allowed, and works.
    again = api(server, "POST", "/mobile_push/register", auth=ada, data={
        "device_id": str(app.device_id), "push_key_id": "7",
        "push_key": base64.b64encode(b"\x31" + os.urandom(32)).decode()})
    assert again.status_code == 200, again.text
    answer = api(server, "POST", "/mobile_push/register", auth=ada, data={"device_id": "12345"})
    assert answer.status_code == 400 and answer.json()["msg"] == "Invalid `device_id`"
    answer = api(server, "POST", "/mobile_push/register", auth=ada,
                 data={"device_id": str(app.device_id), "push_key_id": "1", "push_key": "AAAA"})
    assert answer.json()["msg"] == "Invalid `push_key`"


def test_a_service_that_is_down_gets_the_push_once_it_is_back(setup, ben_app):
    server, bouncer, people = setup
    app = ben_app
    ada, (ben_id, _) = people["ada"][1], people["ben"]
    bouncer.down = True
    try:
        answer = api(server, "POST", "/messages", auth=ada, data={
            "type": "direct", "to": f"[{ben_id}]", "content": "while the service was down"})
        message_id = answer.json()["id"]
        wait_for(lambda: "the push service did not take a push" in server.log_path.read_text(),
                 "the server to find the service down")
    finally:
        bouncer.down = False
    wait_for(lambda: any(p.get("message_id") == message_id for p in pushes_to(bouncer, app)),
             "the push after the service is back", seconds=60)
    assert len([p for p in pushes_to(bouncer, app) if p.get("message_id") == message_id]) == 1
