"""Sign-in through a real LDAP directory: OpenLDAP's slapd (Debian's package), started by the test
on loopback with a small directory, and Chronicle configured for it in its configuration file.

It checks sign-in by username and by email with the directory's password (and that a wrong one,
or a filter hidden in the login, gets nothing), the account made at a first sign-in with its
role and synced group from the directory, `chronicle ldap-sync` renaming, deactivating people
locked in the directory (FreeIPA's nsAccountLock, Active Directory's userAccountControl) and
reactivating them when unlocked, the guard against a sync that would deactivate most people,
the directory stopped (sign-in through it says so; keys and Chronicle's own passwords still
work), and that no password the test used ever reaches the data directory."""

import base64
import os
import pathlib
import shutil
import socket
import struct
import subprocess
import zlib

import pytest
import requests

from conftest import ROOT, RunningServer, free_port, wait_for

SLAPD = shutil.which("slapd") or ("/usr/sbin/slapd" if pathlib.Path("/usr/sbin/slapd").exists() else None)
SLAPADD = shutil.which("slapadd") or "/usr/sbin/slapadd"
LDAPMODIFY = shutil.which("ldapmodify")
BASE = "dc=example,dc=com"
ROOT_DN = f"cn=admin,{BASE}"
ROOT_PW = "root-pw-7f3a"
SERVICE_PW = "service-pw-91c2"
PASSWORDS = {"alice": "alice-pw-e5d1", "bob": "bob-pw-0b77", "carol": "carol-pw-4a90"}

# nsAccountLock as FreeIPA defines it, userAccountControl as Active Directory does, on an
# auxiliary class of the test's own so that OpenLDAP's people can carry them.
LOCK_SCHEMA = """
attributetype ( 2.16.840.1.113730.3.1.610 NAME 'nsAccountLock'
  SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.4.8 NAME 'userAccountControl'
  SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
objectclass ( 1.3.6.1.4.1.55555.1.1 NAME 'chronicleTestLockable' AUXILIARY
  MAY ( nsAccountLock $ userAccountControl ) )
"""


def png(side, rgb):
    """A PNG of one colour, written here (the directory's photo)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + bytes(rgb) * side for _ in range(side))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def person(uid, name, mail, photo=None, phone=None):
    lines = f"""dn: uid={uid},ou=people,{BASE}
objectClass: inetOrgPerson
objectClass: chronicleTestLockable
uid: {uid}
cn: {name}
sn: {name.split()[-1]}
mail: {mail}
userPassword: {PASSWORDS[uid]}
"""
    if photo:
        lines += f"jpegPhoto:: {base64.b64encode(photo).decode()}\n"
    if phone:
        lines += f"telephoneNumber: {phone}\n"
    return lines


DIRECTORY = f"""dn: {BASE}
objectClass: dcObject
objectClass: organization
o: Example
dc: example

dn: ou=people,{BASE}
objectClass: organizationalUnit
ou: people

dn: ou=groups,{BASE}
objectClass: organizationalUnit
ou: groups

dn: ou=services,{BASE}
objectClass: organizationalUnit
ou: services

dn: cn=chronicle,ou=services,{BASE}
objectClass: organizationalRole
objectClass: simpleSecurityObject
cn: chronicle
userPassword: {SERVICE_PW}

{person("alice", "Alice Anderson", "alice@example.com", png(120, (200, 40, 90)), "+1 555 0100")}
{person("bob", "Bob Brown", "bob@example.com")}
{person("carol", "Carol Clark", "carol@example.com")}
dn: cn=admins,ou=groups,{BASE}
objectClass: groupOfNames
cn: admins
member: uid=alice,ou=people,{BASE}

dn: cn=engineering,ou=groups,{BASE}
objectClass: groupOfNames
cn: engineering
member: uid=alice,ou=people,{BASE}
member: uid=bob,ou=people,{BASE}
"""


def make_certificates(tmp: pathlib.Path):
    """A CA of the test's own and a certificate it signed for 127.0.0.1 (openssl's CLI)."""
    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=tmp)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "2", "-subj", "/CN=Chronicle test CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=127.0.0.1")
    (tmp / "ext.cnf").write_text(
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf")
    os.chmod(tmp / "server.key", 0o644)
    return tmp / "ca.pem"


class Slapd:
    def __init__(self, tmp: pathlib.Path, tls=False):
        self.tmp = tmp
        (tmp / "db").mkdir(parents=True)
        (tmp / "lock.schema").write_text(LOCK_SCHEMA)
        self.ca = make_certificates(tmp) if tls else None
        tls_lines = [
            f"TLSCACertificateFile {tmp / 'ca.pem'}",
            f"TLSCertificateFile {tmp / 'server.pem'}",
            f"TLSCertificateKeyFile {tmp / 'server.key'}",
        ] if tls else []
        self.conf = tmp / "slapd.conf"
        self.conf.write_text(
            "\n".join(
                [
                    "include /etc/ldap/schema/core.schema",
                    "include /etc/ldap/schema/cosine.schema",
                    "include /etc/ldap/schema/inetorgperson.schema",
                    f"include {tmp / 'lock.schema'}",
                    *tls_lines,
                    "modulepath /usr/lib/ldap",
                    "moduleload back_mdb",
                    f"pidfile {tmp / 'slapd.pid'}",
                    "database mdb",
                    "maxsize 10485760",
                    f'suffix "{BASE}"',
                    f'rootdn "{ROOT_DN}"',
                    f"rootpw {ROOT_PW}",
                    f"directory {tmp / 'db'}",
                    "access to attrs=userPassword by anonymous auth by * none",
                    "access to * by * read",
                    "",
                ]
            )
        )
        (tmp / "directory.ldif").write_text(DIRECTORY)
        subprocess.run(
            [SLAPADD, "-f", str(self.conf), "-l", str(tmp / "directory.ldif")],
            check=True,
            capture_output=True,
        )
        self.port = free_port()
        self.url = f"ldap://127.0.0.1:{self.port}"
        self.tls_port = free_port() if tls else None
        self.ldaps_url = f"ldaps://127.0.0.1:{self.tls_port}" if tls else None
        self.process = None
        self.start()

    def start(self):
        self.log = open(self.tmp / "slapd.log", "a")
        listen = self.url + "/" + (f" {self.ldaps_url}/" if self.ldaps_url else "")
        # -d keeps slapd in the foreground, so the test owns the process.
        self.process = subprocess.Popen(
            [SLAPD, "-f", str(self.conf), "-h", listen, "-d", "0"],
            stdout=self.log,
            stderr=self.log,
        )

        def answers(port):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return True
            except OSError:
                return False

        for port in filter(None, [self.port, self.tls_port]):
            wait_for(lambda: answers(port), "slapd to listen")

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)
        self.log.close()

    def modify(self, ldif: str):
        subprocess.run(
            [LDAPMODIFY, "-x", "-H", self.url, "-D", ROOT_DN, "-w", ROOT_PW],
            input=ldif,
            text=True,
            check=True,
            capture_output=True,
        )


def api(server, method, path, auth=None, **kwargs):
    return requests.request(method, f"{server.url}/api/v1{path}", auth=auth, timeout=30, **kwargs)


def fetch_api_key(server, username, password):
    return api(server, "POST", "/fetch_api_key", data={"username": username, "password": password})


def owner_auth(server):
    lines = dict(
        line.split("=", 1) for line in server.zuliprc.read_text().splitlines() if "=" in line
    )
    return (lines["email"].strip(), lines["key"].strip())


def ldap_sync(server):
    binary = os.environ.get("CHRONICLE_BIN", str(ROOT / "target" / "debug" / "chronicle"))
    return subprocess.run(
        [binary, "ldap-sync", "--data-dir", str(server.data_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def user_by_email(server, email):
    answer = api(server, "GET", f"/users/{email}", auth=owner_auth(server))
    assert answer.status_code == 200, answer.text
    return answer.json()["user"]


@pytest.mark.skipif(
    SLAPD is None or LDAPMODIFY is None,
    reason="slapd and ldap-utils are not installed (scripts/test.sh installs them)",
)
def test_sign_in_and_sync_through_an_openldap_directory(tmp_path):
    slapd = Slapd(tmp_path / "ldap")
    config = tmp_path / "chronicle.toml"
    config.write_text(
        f"""
[auth]
password = true

[ldap]
url = "{slapd.url}"
bind_dn = "cn=chronicle,ou=services,{BASE}"
bind_password = "{SERVICE_PW}"
user_base = "ou=people,{BASE}"
group_base = "ou=groups,{BASE}"
admin_group = "cn=admins,ou=groups,{BASE}"
synced_groups = ["engineering"]
profile_fields = {{ "Phone" = "telephoneNumber" }}
sync_every_secs = 0
deactivate_missing = true
timeout_secs = 3
"""
    )
    server = RunningServer(tmp_path / "data", extra_args=["--config", str(config)])
    try:
        settings = api(server, "GET", "/server_settings").json()
        assert settings["authentication_methods"]["ldap"] is True
        assert settings["authentication_methods"]["password"] is True
        assert settings["email_auth_enabled"] is True
        assert settings["require_email_format_usernames"] is False
        # The organization has a "Phone" field, which the directory fills.
        made = api(server, "POST", "/realm/profile_fields", auth=owner_auth(server),
                   data={"name": "Phone", "field_type": "1"})
        assert made.status_code == 200, made.text
        phone_field = str(made.json()["id"])

        def phone_of(email):
            user = api(server, "GET", f"/users/{email}", auth=owner_auth(server),
                       params={"include_custom_profile_fields": "true"}).json()["user"]
            return user.get("profile_data", {}).get(phone_field, {}).get("value")

        # Alice signs in by her directory username; her account is made with the role her
        # group gives and the synced group she is in.
        answer = fetch_api_key(server, "alice", PASSWORDS["alice"])
        assert answer.status_code == 200, answer.text
        alice = answer.json()
        assert alice["email"] == "alice@example.com"
        me = api(server, "GET", "/users/me", auth=(alice["email"], alice["api_key"])).json()
        assert me["full_name"] == "Alice Anderson"
        assert me["role"] == 200
        # Her address is the directory's to change, not hers (the sync finds people by it).
        moved = api(server, "PATCH", "/settings", auth=(alice["email"], alice["api_key"]),
                    data={"email": "alice@elsewhere.example.com"})
        assert (moved.status_code, moved.json()["msg"]) == (400, "Your address is managed by your organization's directory."), moved.text
        # Her directory photo is her avatar (the generated one is version 1), her phone number
        # her "Phone".
        assert me["avatar_url"].endswith("?version=2"), me["avatar_url"]
        assert phone_of("alice@example.com") == "+1 555 0100"
        register = api(
            server, "POST", "/register", auth=(alice["email"], alice["api_key"]),
            data={"fetch_event_types": '["realm_user_groups","realm"]'},
        ).json()
        assert register["realm_authentication_methods"]["LDAP"]["enabled"] is True
        engineering = [g for g in register["realm_user_groups"] if g["name"] == "engineering"]
        assert len(engineering) == 1 and engineering[0]["members"] == [alice["user_id"]]

        # By email too, and the same account; a wrong password or a filter in the login
        # gets nothing, with Zulip's answer.
        again = fetch_api_key(server, "alice@example.com", PASSWORDS["alice"]).json()
        assert again["user_id"] == alice["user_id"] and again["api_key"] == alice["api_key"]
        for login, password in [("alice", "wrong"), ("alice", ""), ("*", PASSWORDS["alice"]),
                                ("nobody", PASSWORDS["alice"])]:
            refused = fetch_api_key(server, login, password)
            assert refused.status_code in (400, 401), (login, refused.text)
            if password:
                assert refused.json()["code"] == "AUTHENTICATION_FAILED", (login, refused.text)

        bob = fetch_api_key(server, "bob", PASSWORDS["bob"]).json()
        assert bob["result"] == "success", bob
        bob_user = user_by_email(server, "bob@example.com")
        assert bob_user["role"] == 400

        # The directory changes: Alice is renamed, Bob locked the FreeIPA way. A sync follows.
        slapd.modify(
            f"dn: uid=alice,ou=people,{BASE}\nchangetype: modify\nreplace: cn\ncn: Alice Smith\n"
            f"-\nreplace: telephoneNumber\ntelephoneNumber: +1 555 0199\n\n"
            f"dn: uid=bob,ou=people,{BASE}\nchangetype: modify\nadd: nsAccountLock\nnsAccountLock: TRUE\n"
        )
        synced = ldap_sync(server)
        assert synced.returncode == 0, synced.stderr
        assert "1 deactivated" in synced.stdout and "1 renamed" in synced.stdout, synced.stdout
        # The same photo is the same avatar: nothing to change.
        assert "0 new avatars" in synced.stdout, synced.stdout
        # The owner made at the first start is not in the directory: kept, being the last owner.
        assert "1 kept active" in synced.stdout, synced.stdout
        assert user_by_email(server, "alice@example.com")["full_name"] == "Alice Smith"
        assert "1 with new profile values" in synced.stdout, synced.stdout
        assert phone_of("alice@example.com") == "+1 555 0199"
        assert user_by_email(server, "bob@example.com")["is_active"] is False
        locked = fetch_api_key(server, "bob", PASSWORDS["bob"])
        assert locked.json()["code"] == "USER_DEACTIVATED", locked.text
        # His key stopped working with his account.
        assert api(server, "GET", "/users/me", auth=(bob["email"], bob["api_key"])).status_code == 401

        # Unlocked, he comes back at the next sync; Carol, locked the Active Directory way
        # (ACCOUNTDISABLE), cannot make an account.
        slapd.modify(
            f"dn: uid=bob,ou=people,{BASE}\nchangetype: modify\ndelete: nsAccountLock\n\n"
            f"dn: uid=carol,ou=people,{BASE}\nchangetype: modify\nadd: userAccountControl\nuserAccountControl: 514\n"
        )
        synced = ldap_sync(server)
        assert synced.returncode == 0 and "1 reactivated" in synced.stdout, synced.stdout
        assert user_by_email(server, "bob@example.com")["is_active"] is True
        carol = fetch_api_key(server, "carol", PASSWORDS["carol"])
        assert carol.json()["code"] == "USER_DEACTIVATED", carol.text

        # A sync that would deactivate most people (Alice and Bob of three) stops, says so and
        # changes nothing.
        slapd.modify(
            f"dn: uid=alice,ou=people,{BASE}\nchangetype: modify\nadd: nsAccountLock\nnsAccountLock: TRUE\n\n"
            f"dn: uid=bob,ou=people,{BASE}\nchangetype: modify\nadd: nsAccountLock\nnsAccountLock: TRUE\n"
        )
        refused = ldap_sync(server)
        assert refused.returncode != 0
        assert "would deactivate 2 of the 3 active people" in refused.stderr, refused.stderr
        assert user_by_email(server, "alice@example.com")["is_active"] is True
        assert user_by_email(server, "bob@example.com")["is_active"] is True

        # The directory stops: signing in through it says so; keys and Chronicle's own
        # passwords go on working.
        owner = owner_auth(server)
        created = api(server, "POST", "/users", auth=owner, data={
            "email": "dana@example.com", "password": "dana-local-pw", "full_name": "Dana Local"})
        assert created.status_code == 200, created.text
        slapd.stop()
        down = fetch_api_key(server, "alice", PASSWORDS["alice"])
        assert down.status_code == 503, down.text
        assert down.json()["msg"] == (
            "The organization's directory cannot be reached; try again in a moment."
        )
        assert api(server, "GET", "/users/me", auth=(alice["email"], alice["api_key"])).status_code == 200
        assert fetch_api_key(server, "dana@example.com", "dana-local-pw").status_code == 200
        down_sync = ldap_sync(server)
        assert down_sync.returncode != 0 and "could not run" in down_sync.stderr
    finally:
        server.stop()
        slapd.stop()
    # No password the test used, nor the service account's, is anywhere in the data directory.
    secrets = [*PASSWORDS.values(), SERVICE_PW, "dana-local-pw"]
    for path in (tmp_path / "data").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for secret in secrets:
                assert secret.encode() not in data, f"{secret} found in {path}"
    log = (tmp_path / "server.log").read_text()
    for secret in secrets:
        assert secret not in log


@pytest.mark.skipif(
    SLAPD is None or shutil.which("openssl") is None,
    reason="slapd and openssl are not installed (scripts/test.sh installs slapd)",
)
@pytest.mark.parametrize("mode", ["ldaps", "starttls"])
def test_the_directory_is_reached_over_tls_and_its_certificate_checked(tmp_path, mode):
    slapd = Slapd(tmp_path / "ldap", tls=True)
    url = slapd.ldaps_url if mode == "ldaps" else slapd.url
    def serve(name, ca_line):
        config = tmp_path / f"{name}.toml"
        config.write_text(
            f"""
[ldap]
url = "{url}"
starttls = {"true" if mode == "starttls" else "false"}
{ca_line}
user_base = "ou=people,{BASE}"
timeout_secs = 3
"""
        )
        return RunningServer(tmp_path / name, extra_args=["--config", str(config)])

    try:
        # Checked against the organization's CA: signing in works.
        server = serve("trusting", f'ca_file = "{slapd.ca}"')
        try:
            answer = fetch_api_key(server, "bob", PASSWORDS["bob"])
            assert answer.status_code == 200, answer.text
            assert answer.json()["email"] == "bob@example.com"
        finally:
            server.stop()
        # Against the system's CAs, which never signed it: no password is sent, sign-in fails.
        server = serve("untrusting", "")
        try:
            answer = fetch_api_key(server, "bob", PASSWORDS["bob"])
            assert answer.status_code == 503, answer.text
        finally:
            server.stop()
        assert "certificate" in (tmp_path / "server.log").read_text().lower()
    finally:
        slapd.stop()
