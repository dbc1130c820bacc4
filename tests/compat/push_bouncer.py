"""A stand-in for Zulip's push notification service (push.zulipchat.com), which cannot be
reached from here: the service's side of the protocol a self-hosted Zulip server speaks
(`POST /api/v1/remotes/...`, HTTP Basic with the server's UUID and key), checking every request
against the shapes Zulip documents for it (zulip.com/api/register-remote-push-device and
zulip.com/api/mobile-notifications; the remotes operations are not in Zulip's 10.2 OpenAPI
description, so the schemas below are written from those pages), and opening what only the
service can open (the app's sealed registration, with its private key) as the real one would.

Everything it receives is kept for the test to read; `refuse_registrations` makes it answer a
registration with an error code; `down` makes it answer 503."""

import base64
import hashlib
import json
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jsonschema_rs
from nacl.public import PrivateKey, SealedBox

B64 = {"type": "string", "pattern": "^[A-Za-z0-9+/]+={0,2}$"}

# POST remotes/push/e2ee/register: exactly these form fields.
REGISTER_FIELDS = {"realm_uuid", "token_id", "encrypted_push_registration", "bouncer_public_key"}

# The sealed registration the app makes (zulip-flutter's PushRegistration).
REGISTRATION = {
    "type": "object",
    "required": ["token_kind", "token", "timestamp"],
    "additionalProperties": False,
    "properties": {
        "token_kind": {"enum": ["fcm", "apns"]},
        "token": {"type": "string", "minLength": 1, "maxLength": 4096},
        "timestamp": {"type": "integer"},
        "ios_app_id": {"type": "string"},
    },
}

# POST remotes/push/e2ee/notify (JSON).
NOTIFY = {
    "type": "object",
    "required": ["realm_uuid", "push_requests"],
    "additionalProperties": False,
    "properties": {
        "realm_uuid": {"type": "string", "format": "uuid"},
        "push_requests": {
            "type": "array",
            "minItems": 1,
            "items": {
                "oneOf": [
                    {
                        "type": "object",
                        "required": ["token_id", "fcm_priority", "payload"],
                        "additionalProperties": False,
                        "properties": {
                            "token_id": B64,
                            "fcm_priority": {"enum": ["high", "normal"]},
                            "payload": {
                                "type": "object",
                                "required": ["push_key_id", "encrypted_data"],
                                "additionalProperties": False,
                                "properties": {
                                    "push_key_id": {"type": "integer", "minimum": 0, "maximum": 4294967295},
                                    "encrypted_data": B64,
                                },
                            },
                        },
                    },
                    {
                        "type": "object",
                        "required": ["token_id", "http_headers", "payload"],
                        "additionalProperties": False,
                        "properties": {
                            "token_id": B64,
                            "http_headers": {
                                "type": "object",
                                "required": ["apns_priority", "apns_push_type"],
                                "properties": {
                                    "apns_priority": {"enum": [5, 10]},
                                    "apns_push_type": {"enum": ["alert", "background"]},
                                },
                            },
                            "payload": {
                                "type": "object",
                                "required": ["push_key_id", "encrypted_data", "aps"],
                                "properties": {
                                    "push_key_id": {"type": "integer"},
                                    "encrypted_data": B64,
                                    "aps": {"type": "object"},
                                },
                            },
                        },
                    },
                ]
            },
        },
    },
}

# The plaintext payloads zulip-flutter reads (api_docs/mobile-notifications.md).
COMMON = {
    "type": {"enum": ["message", "remove", "test"]},
    "realm_url": {"type": "string"},
    "realm_name": {"type": "string"},
    "user_id": {"type": "integer"},
}
MESSAGE = {
    "type": "object",
    "required": ["type", "realm_url", "user_id", "message_id", "time", "content", "sender_id",
                 "sender_full_name", "sender_avatar_url", "recipient_type"],
    "additionalProperties": False,
    "properties": {
        **COMMON,
        "message_id": {"type": "integer"},
        "time": {"type": "integer"},
        "content": {"type": "string"},
        "sender_id": {"type": "integer"},
        "sender_full_name": {"type": "string"},
        "sender_avatar_url": {"type": "string", "pattern": "^https?://"},
        "recipient_type": {"enum": ["channel", "direct"]},
        "channel_id": {"type": "integer"},
        "channel_name": {"type": "string"},
        "topic": {"type": "string"},
        "recipient_user_ids": {"type": "array", "items": {"type": "integer"}},
        "mentioned_user_group_id": {"type": "integer"},
        "mentioned_user_group_name": {"type": "string"},
    },
}
REMOVE = {
    "type": "object",
    "required": ["type", "realm_url", "user_id", "message_ids"],
    "additionalProperties": False,
    "properties": {**COMMON, "message_ids": {"type": "array", "items": {"type": "integer"}}},
}
TEST = {
    "type": "object",
    "required": ["type", "realm_url", "user_id", "time"],
    "additionalProperties": False,
    "properties": {**COMMON, "time": {"type": "integer"}},
}


def check(schema, instance, what):
    errors = [str(e) for e in jsonschema_rs.validator_for(schema).iter_errors(instance)]
    if errors:
        raise ValueError(f"{what} does not match Zulip's API: {errors}")


def token_id_of(token):
    return base64.b64encode(hashlib.sha256(token.encode()).digest()[:8]).decode()


class Bouncer:
    def __init__(self, org_id, org_key):
        self.org_id = org_id
        self.org_key = org_key
        self.key = PrivateKey.generate()
        self.public_key = base64.b64encode(bytes(self.key.public_key)).decode()
        self.registered = {}  # token_id -> registration
        self.notified = []  # (push request, its push_requests) in order
        self.failures = []  # requests refused as malformed
        self.refuse_registrations = None
        self.servers = []  # hostnames registered
        self.realms = set()  # realm UUIDs the server told of
        self.down = False
        bouncer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def answer(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                try:
                    status, answer = bouncer.handle(self.path, self.headers, body)
                except ValueError as error:
                    bouncer.failures.append(str(error))
                    status, answer = 400, {"result": "error", "msg": str(error), "code": "BAD_REQUEST"}
                self.answer(status, answer)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()

    def authenticated(self, headers):
        expected = base64.b64encode(f"{self.org_id}:{self.org_key}".encode()).decode()
        return headers.get("Authorization") == f"Basic {expected}"

    def handle(self, path, headers, body):
        if self.down:
            return 503, {"result": "error", "msg": "down"}
        if not headers.get("User-Agent", "").startswith("ZulipServer/"):
            raise ValueError("no ZulipServer/ user agent")
        if path == "/api/v1/remotes/server/register":
            return self.register_server(dict(urllib.parse.parse_qsl(body.decode(), strict_parsing=True)))
        if not self.authenticated(headers):
            return 401, {"result": "error", "msg": "Zulip server auth failure", "code": "UNAUTHORIZED"}
        if path == "/api/v1/remotes/server/analytics":
            return self.analytics(dict(urllib.parse.parse_qsl(body.decode(), strict_parsing=True)))
        if path == "/api/v1/remotes/push/e2ee/register":
            return self.register(dict(urllib.parse.parse_qsl(body.decode(), strict_parsing=True)))
        if path == "/api/v1/remotes/push/e2ee/notify":
            if headers.get("Content-Type") != "application/json":
                raise ValueError("notify is JSON")
            return self.notify(json.loads(body))
        raise ValueError(f"unexpected path {path}")

    def register_server(self, form):
        """`register_server` (no credentials): Zulip's checks on the fields."""
        if set(form) != {"zulip_org_id", "zulip_org_key", "hostname", "contact_email"}:
            raise ValueError(f"server/register fields {sorted(form)}")
        if str(uuid.UUID(form["zulip_org_id"], version=4)) != form["zulip_org_id"]:
            raise ValueError("zulip_org_id is not a UUID4")
        if len(form["zulip_org_key"]) != 64 or "@" not in form["contact_email"]:
            raise ValueError("bad zulip_org_key or contact_email")
        if (form["zulip_org_id"], form["zulip_org_key"]) != (self.org_id, self.org_key):
            return 400, {"result": "error", "msg": "key mismatch", "code": "INVALID_ZULIP_SERVER"}
        created = not self.servers
        self.servers.append(form["hostname"])
        return 200, {"result": "success", "msg": "", "created": created}

    def analytics(self, form):
        """`server/analytics`: the realms this server serves (JSON in form fields)."""
        for name in ("realm_counts", "installation_counts", "realmauditlog_rows", "realms"):
            if not isinstance(json.loads(form[name]), list):
                raise ValueError(f"{name} is not a JSON list")
        for realm in json.loads(form["realms"]):
            for name in ("id", "uuid", "uuid_owner_secret", "host", "url", "name", "org_type",
                         "date_created", "deactivated", "is_system_bot_realm",
                         "authentication_methods"):
                if name not in realm:
                    raise ValueError(f"realm without {name}")
            self.realms.add(realm["uuid"])
        return 200, {"result": "success", "msg": "", "realms": {
            uuid_: {"can_push": True, "expected_end_timestamp": None} for uuid_ in self.realms}}

    def register(self, form):
        if set(form) != REGISTER_FIELDS:
            raise ValueError(f"register fields {sorted(form)}")
        if self.refuse_registrations:
            code = self.refuse_registrations
            return 400, {"result": "error", "msg": "refused", "code": code}
        if form["bouncer_public_key"] != self.public_key:
            return 400, {"result": "error", "msg": "Invalid bouncer_public_key",
                         "code": "INVALID_BOUNCER_PUBLIC_KEY"}
        sealed = base64.b64decode(form["encrypted_push_registration"], validate=True)
        registration = json.loads(SealedBox(self.key).decrypt(sealed))
        check(REGISTRATION, registration, "the sealed registration")
        if token_id_of(registration["token"]) != form["token_id"]:
            return 400, {"result": "error", "msg": "Invalid encrypted_push_registration",
                         "code": "BAD_REQUEST"}
        if time.time() - registration["timestamp"] > 86400:
            return 400, {"result": "error", "msg": "Request expired", "code": "REQUEST_EXPIRED"}
        if form["realm_uuid"] not in self.realms:
            return 403, {"result": "error", "msg": "Organization not registered",
                         "code": "MISSING_REMOTE_REALM"}
        self.registered[form["token_id"]] = {**registration, "realm_uuid": form["realm_uuid"]}
        return 200, {"result": "success", "msg": ""}

    def notify(self, request):
        check(NOTIFY, request, "the notify request")
        android = apple = 0
        for item in request["push_requests"]:
            registration = self.registered.get(item["token_id"])
            if registration is None or registration["realm_uuid"] != request["realm_uuid"]:
                raise ValueError("a push to a token this service never registered")
            if registration["token_kind"] == "apns":
                apple += 1
            else:
                android += 1
        self.notified.append(request)
        return 200, {"result": "success", "msg": "", "apple_successfully_sent_count": apple,
                     "android_successfully_sent_count": android, "delete_token_ids": []}


def open_payload(push_key, encrypted_data):
    """What a device opens, as zulip-flutter does: nonce, then libsodium's secretbox."""
    from nacl.secret import SecretBox
    data = base64.b64decode(encrypted_data, validate=True)
    payload = json.loads(SecretBox(push_key).decrypt(data[24:], data[:24]))
    schema = {"message": MESSAGE, "remove": REMOVE, "test": TEST}[payload["type"]]
    check(schema, payload, f"the {payload['type']} payload")
    return payload
