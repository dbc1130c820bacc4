"""Single sign-on through a real SAML 2.0 identity provider: pysaml2's IdP (signing with the
xmlsec1 program) on loopback, its metadata fetched by Chronicle from its URL, and Chronicle's
service provider metadata loaded by the IdP, which checks every AuthnRequest against it. The
test drives the browser's part: Chronicle's button, the IdP's login form, the page that posts
the response back.

It checks what `server_settings` offers; a first sign-in that makes the account with its name,
role and synced group from the attributes; the mobile app's flow (the `zulip://` redirect's
key, decrypted as the app does, works); the desktop app's flow (the login token, decrypted as
the app does, signs its window in once); a response signed in its assertion only, and in the
response only; and that each of these is refused with the login page's code and an entry in
the sign-in audit, signing nobody in: a replayed response, a tampered one, one signed by
another key, one signed with SHA-1, one answering another browser's request, and an unsigned
one. Finally: what reached the data directory and the log holds no assertion."""

import base64
import os
import pathlib
import re
import shutil
import urllib.parse

import pytest
import requests

from conftest import RunningServer, api, error_of, free_port, otp_decrypt, owner_auth, wait_for

XMLSEC = shutil.which("xmlsec1")
try:
    import saml2  # noqa: F401
except ImportError:  # pragma: no cover - scripts/test.sh installs it
    saml2 = None

ACCOUNTS = {
    "ines": {"email": "ines@example.com", "first_name": "Ines", "last_name": "Ibarra",
             "groups": ["chat-admins", "research"]},
    "jon": {"email": "jon@example.com", "first_name": "Jon", "last_name": "Jones", "groups": []},
    "kit": {"email": "kit@example.com", "first_name": "Kit", "last_name": "Kim"},
}

pytestmark = pytest.mark.skipif(
    XMLSEC is None or saml2 is None,
    reason="xmlsec1 and pysaml2 are not installed (scripts/test.sh installs them)",
)


def form_of(page):
    action = re.search(r'<form[^>]*action="([^"]+)"', page).group(1)
    fields = {
        name: value for name, value in
        re.findall(r'<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"', page)
    }
    return action.replace("&amp;", "&"), {k: v.replace("&#x3D;", "=").replace("&#43;", "+")
                                          for k, v in fields.items()}


def to_idp(server, browser, params=None):
    """Chronicle's button: answers the IdP's login form page."""
    url = server.url + "/accounts/login/social/saml/corp"
    answer = browser.get(url, params=params, allow_redirects=False, timeout=30)
    assert answer.status_code == 302, answer.text[:300]
    location = answer.headers["location"]
    page = browser.get(location, timeout=30)
    assert page.status_code == 200, page.text[:300]
    return location, page.text


def at_idp(browser, idp_location, page, login):
    """The IdP's login form filled in: answers the action and fields of the page that posts
    the response back."""
    action, fields = form_of(page)
    posted = browser.post(urllib.parse.urljoin(idp_location, action),
                          data={**fields, "username": login, "password": "secret"}, timeout=30)
    assert posted.status_code == 200, posted.text[:300]
    return form_of(posted.text)


def post_back(browser, action, fields):
    return browser.post(action, data=fields, allow_redirects=False, timeout=30)


def sign_in(server, login, params=None):
    browser = requests.Session()
    location, page = to_idp(server, browser, params)
    action, fields = at_idp(browser, location, page, login)
    return browser, post_back(browser, action, fields), (action, fields)


def with_response(fields, xml):
    return {**fields, "SAMLResponse": base64.b64encode(xml.encode()).decode()}


def test_sign_in_through_a_saml_identity_provider(tmp_path):
    from saml_idp import IdentityProvider, make_key_pair
    from saml2 import xmldsig

    port, idp_port = free_port(), free_port()
    chronicle_url = f"http://127.0.0.1:{port}"
    config = tmp_path / "chronicle.toml"
    config.write_text(
        f"""
external_url = "{chronicle_url}"

[outgoing]
allow = ["127.0.0.1"]

[saml.corp]
metadata_url = "http://127.0.0.1:{idp_port}/metadata"
display_name = "Corp SAML"
create_users = true
groups_attribute = "groups"
admin_group = "chat-admins"
synced_groups = ["research"]
timeout_secs = 3
"""
    )
    server = RunningServer(tmp_path / "data", extra_args=["--config", str(config)],
                           bind=f"127.0.0.1:{port}")
    idp = None
    try:
        settings = api(server, "GET", "/server_settings").json()
        assert settings["authentication_methods"]["saml"] is True
        assert settings["external_authentication_methods"] == [{
            "name": "saml:corp", "display_name": "Corp SAML", "display_icon": None,
            "login_url": "/accounts/login/social/saml/corp",
            "signup_url": "/accounts/register/social/saml/corp",
        }]
        # The IdP loads Chronicle's metadata, and checks each request against it.
        sp_metadata = requests.get(f"{chronicle_url}/saml/metadata.xml", timeout=10)
        assert sp_metadata.status_code == 200
        assert f'Location="{chronicle_url}/complete/saml/"' in sp_metadata.text
        (tmp_path / "sp.xml").write_text(sp_metadata.text)
        idp = IdentityProvider(tmp_path, idp_port, tmp_path / "sp.xml", ACCOUNTS)
        idp.start()
        wait_for(lambda: requests.get(f"{idp.base}/metadata", timeout=2).ok, "the IdP to answer")

        # Ines's first sign-in makes her account: her name, the role her group gives, the
        # synced group she is in; the browser then holds a session that opens the app.
        browser, answer, (action, fields) = sign_in(server, "ines")
        assert answer.status_code in (302, 303), answer.text[:300]
        assert answer.headers["location"] in ("/", chronicle_url + "/"), answer.headers["location"]
        app = browser.get(chronicle_url + "/", allow_redirects=False, timeout=30)
        assert app.status_code == 200
        ines = api(server, "GET", "/users/ines@example.com", auth=owner_auth(server)).json()["user"]
        assert ines["full_name"] == "Ines Ibarra"
        assert ines["role"] == 200
        groups = api(server, "GET", "/user_groups", auth=owner_auth(server)).json()["user_groups"]
        research = [g for g in groups if g["name"] == "research"]
        assert len(research) == 1 and research[0]["members"] == [ines["user_id"]]

        # The same response again (a replay, even with the flow's cookie) signs nobody in.
        replayed = post_back(browser, action, fields)
        assert error_of(replayed) in ("sso_refused", "sso_expired")
        fresh = requests.Session()
        _, _ = to_idp(server, fresh)
        replayed = post_back(fresh, action, fields)
        assert error_of(replayed) == "sso_refused"

        # The mobile app's flow ends in its redirect; the key decrypts as the app decrypts it
        # and works.
        otp = os.urandom(32).hex()
        _, answer, _ = sign_in(server, "jon", params={"mobile_flow_otp": otp})
        location = answer.headers["location"]
        assert location.startswith("zulip://login?"), location
        query = urllib.parse.parse_qs(urllib.parse.urlparse(location).query)
        assert query["email"] == ["jon@example.com"]
        assert query["realm"] == [chronicle_url]
        key = otp_decrypt(query["otp_encrypted_api_key"][0], otp)
        me = api(server, "GET", "/users/me", auth=("jon@example.com", key)).json()
        assert me["full_name"] == "Jon Jones" and me["role"] == 400

        # The desktop app: its own window gets the page that opens the system browser; the
        # browser's sign-in ends in the page holding the login token encrypted with the app's
        # key; the token, decrypted as the app does, signs the app's window in, once.
        app_window = requests.Session()
        app_window.headers["User-Agent"] = "ZulipElectron/5.12.0 Mozilla/5.0"
        page = app_window.get(f"{chronicle_url}/accounts/login/social/saml/corp", timeout=30)
        assert page.status_code == 200 and "Finish desktop login" in page.text
        key = os.urandom(32)
        _, answer, _ = sign_in(server, "jon", params={"desktop_flow_otp": key.hex()})
        assert answer.status_code == 200, answer.text[:300]
        data = bytes.fromhex(re.search(r'id="desktop-data"[^>]*value="([0-9a-f]+)"',
                                       answer.text).group(1))
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        token = AESGCM(key).decrypt(data[:12], data[12:], b"").decode()
        assert "jon" not in token and "Jon" not in token
        # A page of another site cannot send a browser there (login CSRF).
        cross = requests.get(f"{chronicle_url}/accounts/login/subdomain/{token}",
                             headers={"Sec-Fetch-Site": "cross-site"}, allow_redirects=False,
                             timeout=30)
        assert error_of(cross) == "origin"
        signed_in = app_window.get(f"{chronicle_url}/accounts/login/subdomain/{token}",
                                   allow_redirects=False, timeout=30)
        assert signed_in.status_code == 303 and signed_in.headers["location"] == "/"
        assert app_window.get(f"{chronicle_url}/", allow_redirects=False, timeout=30).status_code == 200
        again = requests.get(f"{chronicle_url}/accounts/login/subdomain/{token}",
                             allow_redirects=False, timeout=30)
        assert error_of(again) == "sso_expired"
        bad = requests.get(f"{chronicle_url}/accounts/login/social/saml/corp",
                           params={"desktop_flow_otp": "12ab"}, allow_redirects=False, timeout=30)
        assert bad.status_code == 400 and bad.json()["msg"] == "Invalid OTP"

        # Signed in the assertion only, then in the response only: both are taken.
        idp.sign_response = False
        _, answer, _ = sign_in(server, "kit")
        assert answer.headers["location"] in ("/", chronicle_url + "/"), answer.headers["location"]
        idp.sign_response, idp.sign_assertion = True, False
        _, answer, _ = sign_in(server, "kit")
        assert answer.headers["location"] in ("/", chronicle_url + "/"), answer.headers["location"]
        idp.sign_assertion = True

        # A response changed after signing (another address put in) is refused.
        browser = requests.Session()
        location, page = to_idp(server, browser)
        action, fields = at_idp(browser, location, page, "jon")
        tampered = idp.last_response.replace("jon@example.com", "ines@example.com")
        answer = post_back(browser, action, with_response(fields, tampered))
        assert error_of(answer) == "sso_refused"
        assert "chronicle_session" not in browser.cookies

        # A response signed by a key the metadata does not list is refused.
        good_keys = (idp.key, idp.cert)
        idp.key, idp.cert = make_key_pair(tmp_path, "intruder")
        idp.idp = idp._idp()
        _, answer, _ = sign_in(server, "ines")
        assert error_of(answer) == "sso_refused"
        idp.key, idp.cert = good_keys
        idp.idp = idp._idp()

        # SHA-1 signatures are refused.
        idp.sign_alg, idp.digest_alg = xmldsig.SIG_RSA_SHA1, xmldsig.DIGEST_SHA1
        _, answer, _ = sign_in(server, "ines")
        assert error_of(answer) == "sso_refused"
        idp.sign_alg, idp.digest_alg = xmldsig.SIG_RSA_SHA256, xmldsig.DIGEST_SHA256

        # A response to another browser's request is refused in this one.
        first, second = requests.Session(), requests.Session()
        location, page = to_idp(server, first)
        action, fields = at_idp(first, location, page, "ines")
        to_idp(server, second)
        answer = post_back(second, action, fields)
        assert error_of(answer) == "sso_refused"

        # An unsigned response is refused.
        idp.sign_response, idp.sign_assertion = False, False
        _, answer, _ = sign_in(server, "ines")
        assert error_of(answer) == "sso_refused"
        idp.sign_response, idp.sign_assertion = True, True

        # Each refusal is in the sign-in audit, by method and provider.
        attempts = api(server, "GET", "/admin/sign-ins", auth=owner_auth(server))
        assert attempts.status_code == 200, attempts.text
        saml_rows = [r for r in attempts.json()["sign_ins"] if r["method"] == "saml"]
        refused = [r for r in saml_rows if r["outcome"] != "ok"]
        assert len(refused) >= 7, saml_rows
        assert any(r["login"] == "ines@example.com (corp)" and r["outcome"] == "ok"
                   for r in saml_rows)
    finally:
        server.stop()
        if idp:
            idp.stop()
    # No assertion, signature or response reached the data directory or the log.
    for path in (tmp_path / "data").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert b"SignatureValue" not in data and b"SAMLResponse" not in data, path
    assert "SignatureValue" not in server.log_path.read_text()
