"""Missed-message emails through a real SMTP server: aiosmtpd (PyPI), started by the test on
loopback with STARTTLS and a login required, its certificate from a CA the test makes and
Chronicle is configured to trust (`[mail]` in the configuration file, the password from a
file named by an environment variable); and replies by email through Chronicle's own gateway
listener (`[email_gateway]`), spoken to with Python's smtplib.

It checks that a direct message to someone away arrives after their batching period, once,
with plain-text and HTML parts, Zulip's subject, a link that opens the conversation and a
one-click unsubscribe that works; that the organization can hide message content; that a relay
that is down is retried and the email arrives once after it is back; that a reply to the email
appears in the conversation from the right person, without the quoted text, and a forged one is
refused; that mail to a channel's address (with an attachment) becomes a message from the email
gateway bot; that unknown addresses are refused at RCPT; and that the relay's password reaches
neither the data directory nor the server's log."""

import datetime
import email
import email.policy
import ipaddress
import pathlib
import re
import smtplib
import ssl
from email.message import EmailMessage
import tempfile
import time

import pytest
import requests
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from conftest import RunningServer, api, free_port, owner_auth, wait_for

RELAY_USER = "chronicle"
RELAY_PASSWORD = "relay-pw-5c1e9a"


def certificates(directory: pathlib.Path):
    """A CA and a certificate for 127.0.0.1 it signed: (CA file, certificate file, key file)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Chronicle test mail CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    files = (directory / "ca.pem", directory / "relay.pem", directory / "relay.key")
    files[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    files[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return files


class Inbox:
    """What the relay received, and the logins it accepted."""

    def __init__(self):
        self.mails = []
        self.logins = []

    async def handle_DATA(self, server, session, envelope):
        self.mails.append(email.message_from_bytes(envelope.content, policy=email.policy.default))
        return "250 OK"

    def authenticate(self, server, session, envelope, mechanism, auth_data):
        ok = isinstance(auth_data, LoginPassword) and (
            auth_data.login.decode(),
            auth_data.password.decode(),
        ) == (RELAY_USER, RELAY_PASSWORD)
        if ok:
            self.logins.append(auth_data.login.decode())
        return AuthResult(success=ok)


class Relay:
    """aiosmtpd on a fixed loopback port, STARTTLS and a login required; it can be stopped and
    started again on the same port (a relay that is down for a while)."""

    def __init__(self, port, cert, key):
        self.port = port
        self.inbox = Inbox()
        self.tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.tls.load_cert_chain(cert, key)
        self.controller = None

    def start(self):
        self.controller = Controller(
            self.inbox,
            hostname="127.0.0.1",
            port=self.port,
            tls_context=self.tls,
            require_starttls=True,
            authenticator=self.inbox.authenticate,
            auth_required=True,
            auth_require_tls=True,
        )
        self.controller.start()

    def stop(self):
        self.controller.stop()


@pytest.fixture(scope="module")
def setup(monkeypatch_module):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        ca, cert, key = certificates(tmp)
        relay = Relay(free_port(), cert, key)
        relay.start()
        password_file = tmp / "relay-password"
        password_file.write_text(RELAY_PASSWORD + "\n")
        config = tmp / "chronicle.toml"
        gateway_port = free_port()
        config.write_text(
            "[email_gateway]\n"
            f'listen = "127.0.0.1:{gateway_port}"\n'
            'domain = "chat.test"\n'
            "[mail]\n"
            f'smtp_url = "smtp+starttls://127.0.0.1:{relay.port}"\n'
            f'smtp_username = "{RELAY_USER}"\n'
            f'ca_file = "{ca}"\n'
            'from_address = "notifications@chronicle.test"\n'
        )
        monkeypatch_module.setenv("CHRONICLE_MAIL_SMTP_PASSWORD_FILE", str(password_file))
        server = RunningServer(tmp / "data", ["--config", str(config)])
        owner = owner_auth(server)
        people = {}
        for name in ("ada", "ben"):
            answer = api(
                server,
                "POST",
                "/users",
                auth=owner,
                data={
                    "email": f"{name}@example.com",
                    "password": f"{name}-password-1",
                    "full_name": name.capitalize() + " Lovelace",
                },
            )
            assert answer.status_code == 200, answer.text
            key = api(
                server,
                "POST",
                "/fetch_api_key",
                data={"username": f"{name}@example.com", "password": f"{name}-password-1"},
            ).json()["api_key"]
            people[name] = (answer.json()["user_id"], (f"{name}@example.com", key))
        # Ben is away (no client) and wants his emails within a second.
        answer = api(
            server,
            "PATCH",
            "/settings",
            auth=people["ben"][1],
            data={"email_notifications_batching_period_seconds": "1"},
        )
        assert answer.status_code == 200, answer.text
        server.gateway_port = gateway_port
        yield server, relay, people, owner
        server.stop()
        relay.stop()


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def send_dm(server, sender, to_id, text):
    answer = api(server, "POST", "/messages", auth=sender, data={
        "type": "direct", "to": f"[{to_id}]", "content": text})
    assert answer.status_code == 200, answer.text
    return answer.json()["id"]


def notifier(server, owner):
    dump = api(server, "GET", "/admin/projections", auth=owner).json()["projections"]
    return dump.get("notifications") or {}


def wait_settled(server, owner):
    """Waits until the notifier has nothing pending or queued (asking twice a second, well
    within the owner's rate limit)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        state = notifier(server, owner)
        if state.get("pending") == {} and state.get("queued_emails") == []:
            return
        time.sleep(0.5)
    raise AssertionError(f"the notifier did not settle: {notifier(server, owner)}")


def mails_saying(relay, text):
    found = []
    for mail in relay.inbox.mails:
        plain = mail.get_body(preferencelist=("plain",)).get_content()
        if text in plain:
            found.append(mail)
    return found


def test_a_direct_message_reaches_someone_away_by_email_once(setup):
    server, relay, people, owner = setup
    ada, (ben_id, ben) = people["ada"][1], people["ben"]
    sent = time.time()
    message_id = send_dm(server, ada, ben_id, "Are we still on for Thursday?")
    wait_for(lambda: mails_saying(relay, "still on for Thursday"), "the email at the relay")
    arrived = time.time()
    # Message times are whole seconds: due at the sending second's start plus the period.
    wait_settled(server, owner)
    [mail] = mails_saying(relay, "still on for Thursday")
    assert arrived >= int(sent) + 1, "not before the batching period"
    assert RELAY_USER in relay.inbox.logins, "the relay's login was used"
    assert mail["To"] == "Ben Lovelace <ben@example.com>"
    assert mail["From"].addresses[0].addr_spec == "notifications@chronicle.test"
    assert mail["Subject"] == "DMs with Ada Lovelace"
    assert mail["Message-ID"].startswith("<chronicle.")
    html = mail.get_body(preferencelist=("html",)).get_content()
    assert "Are we still on for Thursday?" in html
    # The HTML part's link opens the conversation in the web client.
    links = re.findall(r'href="([^"]+#narrow/dm/[^"]+)"', html)
    assert links, html
    page, _, fragment = links[0].partition("#")
    assert page.rstrip("/") == server.url
    assert fragment.endswith(f"/near/{message_id}")
    assert requests.get(page, timeout=30).status_code == 200
    # One click from the mail reader (RFC 8058) turns these emails off.
    unsubscribe = mail["List-Unsubscribe"].strip("<>")
    assert mail["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    answer = requests.post(unsubscribe, data={"List-Unsubscribe": "One-Click"},
                           allow_redirects=False, timeout=30)
    assert answer.status_code == 303, answer.text
    settings = api(server, "POST", "/register", auth=ben,
                   data={"fetch_event_types": '["user_settings"]'}).json()["user_settings"]
    assert settings["enable_offline_email_notifications"] is False
    answer = api(server, "PATCH", "/settings", auth=ben,
                 data={"enable_offline_email_notifications": "true"})
    assert answer.status_code == 200, answer.text


def test_the_organization_can_keep_message_content_out_of_emails(setup):
    server, relay, people, owner = setup
    ada, (ben_id, _) = people["ada"][1], people["ben"]
    answer = api(server, "PATCH", "/realm", auth=owner,
                 data={"message_content_allowed_in_email_notifications": "false"})
    assert answer.status_code == 200, answer.text
    try:
        before = len(relay.inbox.mails)
        send_dm(server, ada, ben_id, "the launch code is 0000")
        wait_for(lambda: len(relay.inbox.mails) > before, "the email at the relay")
        mail = relay.inbox.mails[-1]
        assert mail["Subject"] == "New messages"
        for part in ("plain", "html"):
            text = mail.get_body(preferencelist=(part,)).get_content()
            assert "launch code" not in text
            assert "Ada Lovelace" in text, "who wrote is said"
    finally:
        api(server, "PATCH", "/realm", auth=owner,
            data={"message_content_allowed_in_email_notifications": "true"})


def test_a_relay_that_is_down_gets_the_email_once_it_is_back(setup):
    server, relay, people, owner = setup
    ada, (ben_id, _) = people["ada"][1], people["ben"]
    relay.stop()
    try:
        send_dm(server, ada, ben_id, "Sent while the relay was down")
        wait_for(lambda: "the mail relay did not take an email"
                 in server.log_path.read_text(), "the server to find the relay down")
        assert not mails_saying(relay, "while the relay was down")
    finally:
        relay.start()
    wait_for(lambda: mails_saying(relay, "while the relay was down"), "the email after the relay is back",
             seconds=60)
    wait_settled(server, owner)
    assert len(mails_saying(relay, "while the relay was down")) == 1
    assert notifier(server, owner)["emails_given_up"] == 0


def mail_to_gateway(server, sender, to, subject, text, attachment=None):
    """An email handed to Chronicle's gateway listener, as a mail server would."""
    mail = EmailMessage()
    mail["From"] = sender
    mail["To"] = to
    mail["Subject"] = subject
    mail.set_content(text)
    if attachment:
        name, data = attachment
        mail.add_attachment(data, maintype="text", subtype="plain", filename=name)
    with smtplib.SMTP("127.0.0.1", server.gateway_port, timeout=30) as smtp:
        smtp.send_message(mail)


def messages_with(server, auth, narrow):
    answer = api(server, "GET", "/messages", auth=auth, params={
        "anchor": "newest", "num_before": "20", "num_after": "0", "narrow": narrow,
        "apply_markdown": "false"})
    assert answer.status_code == 200, answer.text
    return answer.json()["messages"]


def test_a_reply_to_the_email_lands_in_the_conversation_and_a_forged_one_does_not(setup):
    server, relay, people, owner = setup
    (ada_id, ada), (ben_id, ben) = people["ada"], people["ben"]
    send_dm(server, ada, ben_id, "Shall we move the review to Friday?")
    wait_for(lambda: mails_saying(relay, "review to Friday"), "the email at the relay")
    [mail] = mails_saying(relay, "review to Friday")
    reply_to = mail["Reply-To"].addresses[0].addr_spec
    assert reply_to.startswith("mm") and reply_to.endswith("@chat.test"), reply_to
    quoted = "\n".join("> " + line for line in
                       mail.get_body(preferencelist=("plain",)).get_content().splitlines())
    # Someone else who learned the address: refused while still on the line.
    with pytest.raises(smtplib.SMTPDataError) as refused:
        mail_to_gateway(server, "mallory@evil.test", reply_to, "Re: " + mail["Subject"],
                        "Friday is cancelled")
    assert refused.value.smtp_code == 550
    assert b"Forged sender" in refused.value.smtp_error
    mail_to_gateway(server, "Ben Lovelace <ben@example.com>", reply_to, "Re: " + mail["Subject"],
                    "Friday works for me.\n\nOn Sun, 29 Nov 2026, Chronicle wrote:\n" + quoted)
    conversation = messages_with(server, ada, json_narrow([["dm", [ben_id]]]))
    assert conversation[-1]["sender_id"] == ben_id
    assert conversation[-1]["content"] == "Friday works for me."
    assert not any("cancelled" in m["content"] for m in conversation)


def json_narrow(terms):
    import json
    return json.dumps([{"operator": op, "operand": operand} for op, operand in terms])


def test_mail_to_a_channel_address_becomes_a_message_from_the_gateway_bot(setup):
    server, _relay, people, owner = setup
    ada = people["ada"][1]
    answer = api(server, "POST", "/users/me/subscriptions", auth=ada,
                 data={"subscriptions": '[{"name": "mailroom"}]'})
    assert answer.status_code == 200, answer.text
    channel_id = api(server, "GET", "/get_stream_id", auth=ada,
                     params={"stream": "mailroom"}).json()["stream_id"]
    answer = api(server, "GET", f"/streams/{channel_id}/email_address", auth=ada)
    assert answer.status_code == 200, answer.text
    address = answer.json()["email"]
    assert address.startswith("mailroom.") and address.endswith(".show-sender@chat.test"), address
    mail_to_gateway(server, "Grace Hopper <grace@navy.test>", address, "Fwd: Quarterly numbers",
                    "Numbers attached.\n--\nGrace", attachment=("numbers.txt", b"Q1 42\n"))
    [message] = messages_with(server, ada, json_narrow([["channel", "mailroom"]]))[-1:]
    assert message["subject"] == "Quarterly numbers"
    assert message["sender_email"] == "emailgateway@zulip.com"
    assert message["content"].startswith("**From:** Grace Hopper <grace@navy.test>\n\nNumbers attached.")
    assert "Grace\n" not in message["content"], "the signature is cut"
    link = re.search(r"\[numbers.txt\]\((/user_uploads/[^)]+)\)", message["content"])
    assert link, message["content"]
    download = requests.get(server.url + link.group(1), auth=ada, timeout=30)
    assert download.content == b"Q1 42\n"
    # An address that is not one, or made up: refused at RCPT.
    for bad in ("nobody@chat.test", address.replace("mailroom.", "mailroom.x"), "a@elsewhere.test"):
        with pytest.raises(smtplib.SMTPRecipientsRefused):
            mail_to_gateway(server, "grace@navy.test", bad, "hello", "hi")


def test_the_relay_password_stays_out_of_the_data_directory_and_the_log(setup):
    server, _relay, _people, _owner = setup
    assert RELAY_PASSWORD not in server.log_path.read_text()
    for path in server.data_dir.rglob("*"):
        if path.is_file():
            assert RELAY_PASSWORD.encode() not in path.read_bytes(), path
