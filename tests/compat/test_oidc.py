"""Single sign-on through a real OpenID provider: the `oidc-provider` package from npm (OpenID
Certified), run by node on loopback with its development login pages, driven through the whole
authorization code flow by the test as a browser would be.

It checks what `server_settings` offers, a first sign-in that makes the account with its role
and synced group from the groups claim, the mobile app's flow (the `zulip://` redirect's key,
decrypted as the app does, works), a rotated provider key (the provider restarts with a new one),
a tampered ID token and a foreign `state` refused, the provider stopped (the sign-in says so,
passwords still work), the sign-in audit, and that the client secret reaches neither the data
directory nor the server's log."""

import json
import os
import pathlib
import re
import shutil
import subprocess
import urllib.parse

import pytest
import requests

from conftest import RunningServer, api, error_of, free_port, otp_decrypt, owner_auth, wait_for

OIDC_DIR = pathlib.Path(__file__).parent / "oidc"
NODE = shutil.which("node")
CLIENT_SECRET = "client-secret-6d1f0b"
ACCOUNTS = {
    "dana": {"email": "dana@example.com", "email_verified": True, "name": "Dana Diaz",
             "groups": ["/chat-admins", "/design"]},
    "evan": {"email": "evan@example.com", "email_verified": True,
             "given_name": "Evan", "family_name": "Edwards", "groups": []},
    "fay": {"email": "fay@example.com", "email_verified": False, "name": "Fay Fox"},
    "gus": {"email": "gus@elsewhere.org", "email_verified": True, "name": "Gus Green"},
    "hal": {"email": "hal@example.com", "name": "Hal Hughes"},
}


class OpenIdProvider:
    def __init__(self, tmp: pathlib.Path, redirect_uri: str):
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.redirect_uri = redirect_uri
        self.log_path = tmp / "provider.log"
        self.process = None
        self.start()

    def start(self):
        self.log = open(self.log_path, "a")
        self.process = subprocess.Popen(
            [NODE, str(OIDC_DIR / "provider.mjs")],
            stdout=self.log,
            stderr=self.log,
            env={**os.environ, "PORT": str(self.port), "CLIENT_SECRET": CLIENT_SECRET,
                 "REDIRECT_URI": self.redirect_uri, "ACCOUNTS": json.dumps(ACCOUNTS)},
        )

        def answers():
            try:
                return requests.get(f"{self.issuer}/.well-known/openid-configuration",
                                    timeout=2).status_code == 200
            except requests.RequestException:
                return False

        wait_for(answers, "the OpenID provider to answer")

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)
        self.log.close()

    def tamper(self, on):
        requests.get(f"{self.issuer}/test/tamper", params={"on": "1" if on else "0"}, timeout=5)


def sign_in(server, login, path="/accounts/login/social/oidc", params=None):
    """Follows a sign-in from Chronicle's button through the provider's login and consent pages
    and back, as a browser; answers the session and the last answer (not followed when it
    leaves for zulip://)."""
    browser = requests.Session()
    url = server.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
    for _ in range(20):
        answer = browser.get(url, allow_redirects=False, timeout=30)
        if answer.status_code in (302, 303):
            location = urllib.parse.urljoin(url, answer.headers["location"])
            if location.startswith("zulip://") or location.startswith(server.url + "/login/") \
                    or location == server.url + "/":
                return browser, answer
            url = location
            continue
        forms = re.findall(r'<form[^>]*action="([^"]+)"[^>]*>(.*?)</form>', answer.text, re.S)
        assert forms, f"no form at {url}: {answer.status_code} {answer.text[:300]}"
        action, body = forms[0]
        fields = dict(re.findall(r'name="([^"]+)"(?:[^>]*value="([^"]*)")?', body))
        if "login" in fields:
            fields.update({"login": login, "password": "anything"})
        posted = browser.post(urllib.parse.urljoin(url, action), data=fields,
                              allow_redirects=False, timeout=30)
        assert posted.status_code in (302, 303), posted.text[:300]
        url = urllib.parse.urljoin(url, posted.headers["location"])
    raise AssertionError("the sign-in did not end")


@pytest.mark.skipif(
    NODE is None or not (OIDC_DIR / "node_modules" / "oidc-provider").exists(),
    reason="node and oidc-provider are not installed (scripts/test.sh installs them)",
)
def test_sign_in_through_an_openid_provider(tmp_path):
    port = free_port()
    chronicle_url = f"http://127.0.0.1:{port}"
    provider = OpenIdProvider(tmp_path, f"{chronicle_url}/complete/oidc/")
    config = tmp_path / "chronicle.toml"
    config.write_text(
        f"""
external_url = "{chronicle_url}"

[outgoing]
allow = ["127.0.0.1"]

[oidc.corp]
issuer = "{provider.issuer}"
client_id = "chronicle"
client_secret = "{CLIENT_SECRET}"
display_name = "Corp SSO"
create_users = true
groups_claim = "groups"
admin_group = "chat-admins"
synced_groups = ["design"]
timeout_secs = 3
"""
    )
    server = RunningServer(tmp_path / "data", extra_args=["--config", str(config)],
                           bind=f"127.0.0.1:{port}")
    try:
        settings = api(server, "GET", "/server_settings").json()
        assert settings["authentication_methods"]["openid connect"] is True
        assert settings["external_authentication_methods"] == [{
            "name": "oidc:corp", "display_name": "Corp SSO", "display_icon": None,
            "login_url": "/accounts/login/social/oidc",
            "signup_url": "/accounts/register/social/oidc",
        }]

        # Dana's first sign-in makes her account: her name, the role her group gives, the
        # synced group she is in; the browser then holds a session that opens the app.
        browser, answer = sign_in(server, "dana")
        assert answer.headers["location"] in ("/", server.url + "/"), answer.headers["location"]
        app = browser.get(server.url + "/", allow_redirects=False, timeout=30)
        assert app.status_code == 200 and "login" not in app.url
        dana = api(server, "GET", "/users/dana@example.com", auth=owner_auth(server)).json()["user"]
        assert dana["full_name"] == "Dana Diaz"
        assert dana["role"] == 200
        groups = api(server, "GET", "/user_groups", auth=owner_auth(server)).json()["user_groups"]
        design = [g for g in groups if g["name"] == "design"]
        assert len(design) == 1 and design[0]["members"] == [dana["user_id"]]

        # The mobile app's flow ends in its redirect; the key decrypts as the app decrypts it
        # and works.
        otp = os.urandom(32).hex()
        _, answer = sign_in(server, "evan", params={"mobile_flow_otp": otp})
        location = answer.headers["location"]
        assert location.startswith("zulip://login?"), location
        query = urllib.parse.parse_qs(urllib.parse.urlparse(location).query)
        assert query["email"] == ["evan@example.com"]
        assert query["realm"] == [chronicle_url]
        key = otp_decrypt(query["otp_encrypted_api_key"][0], otp)
        me = api(server, "GET", "/users/me", auth=("evan@example.com", key)).json()
        assert me["full_name"] == "Evan Edwards" and me["role"] == 400

        # The provider rotates its key (it restarts with a new one): the next sign-in works,
        # the keys fetched again.
        provider.stop()
        provider.start()
        _, answer = sign_in(server, "dana")
        assert answer.headers["location"] in ("/", server.url + "/"), answer.headers["location"]

        # A tampered ID token is refused, and nobody is signed in as the address it claims.
        provider.tamper(True)
        _, answer = sign_in(server, "dana")
        assert error_of(answer) == "sso_refused"
        provider.tamper(False)
        missing = api(server, "GET", "/users/mallory@example.com", auth=owner_auth(server))
        assert missing.status_code == 400

        # While the organization admits only its own domain, a first sign-in from another
        # makes no account; people already in sign in as before.
        owner = owner_auth(server)
        assert api(server, "POST", "/realm/domains", auth=owner,
                   data={"domain": "example.com", "allow_subdomains": "false"}).status_code == 200
        assert api(server, "PATCH", "/realm", auth=owner,
                   data={"emails_restricted_to_domains": "true"}).status_code == 200
        _, answer = sign_in(server, "gus")
        assert error_of(answer) == "sso_domain"
        assert api(server, "GET", "/users/gus@elsewhere.org", auth=owner).status_code == 400
        _, answer = sign_in(server, "dana")
        assert answer.headers["location"] in ("/", server.url + "/"), answer.headers["location"]

        # An address the provider has not verified gets no account.
        _, answer = sign_in(server, "fay")
        assert error_of(answer) == "sso_no_address"

        # ...nor one whose token does not say the address was verified (accounts are matched
        # by address).
        _, answer = sign_in(server, "hal")
        assert error_of(answer) == "sso_no_address"

        # An answer that is not this browser's sign-in is refused: no sign-in in progress here,
        # or another state than the one this browser left with, or another issuer (RFC 9207).
        stranger = requests.get(f"{server.url}/complete/oidc/",
                                params={"code": "x", "state": "forged"},
                                allow_redirects=False, timeout=30)
        assert error_of(stranger) == "sso_expired"
        browser = requests.Session()
        leaving = browser.get(f"{server.url}/accounts/login/social/oidc", allow_redirects=False,
                              timeout=30)
        cookie = leaving.headers["set-cookie"]
        assert "HttpOnly" in cookie and "Path=/complete/" in cookie and "SameSite=Lax" in cookie, cookie
        state = urllib.parse.parse_qs(urllib.parse.urlparse(leaving.headers["location"]).query)["state"][0]
        wrong = browser.get(f"{server.url}/complete/oidc/", params={"code": "x", "state": state + "x"},
                            allow_redirects=False, timeout=30)
        assert error_of(wrong) == "sso_expired"
        leaving = browser.get(f"{server.url}/accounts/login/social/oidc", allow_redirects=False,
                              timeout=30)
        state = urllib.parse.parse_qs(urllib.parse.urlparse(leaving.headers["location"]).query)["state"][0]
        mixed = browser.get(f"{server.url}/complete/oidc/",
                            params={"code": "x", "state": state, "iss": "https://elsewhere.example"},
                            allow_redirects=False, timeout=30)
        assert error_of(mixed) == "sso_refused"

        # The provider stopped after the browser left for it: the sign-in says the service
        # cannot be reached; passwords and keys keep working.
        browser = requests.Session()
        leaving = browser.get(f"{server.url}/accounts/login/social/oidc", allow_redirects=False,
                              timeout=30)
        state = urllib.parse.parse_qs(urllib.parse.urlparse(leaving.headers["location"]).query)["state"][0]
        provider.stop()
        back = browser.get(f"{server.url}/complete/oidc/", params={"code": "x", "state": state},
                           allow_redirects=False, timeout=30)
        assert error_of(back) == "sso_unavailable"
        assert api(server, "GET", "/users/me", auth=owner_auth(server)).status_code == 200

        # Every attempt is in the sign-in audit; the client secret is nowhere.
        audit = api(server, "GET", "/admin/sign-ins", auth=owner_auth(server)).json()
        oidc = [a for a in audit["sign_ins"] if a["method"] == "oidc"]
        assert any(a["login"] == "dana@example.com (corp)" and a["outcome"] == "ok" for a in oidc)
        assert any(a["outcome"] != "ok" for a in oidc)
    finally:
        server.stop()
        provider.stop()
    for path in (tmp_path / "data").rglob("*"):
        if path.is_file():
            assert CLIENT_SECRET.encode() not in path.read_bytes(), path
    assert CLIENT_SECRET not in server.log_path.read_text()
