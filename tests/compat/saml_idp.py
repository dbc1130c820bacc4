"""A SAML 2.0 identity provider on loopback for the tests: pysaml2's IdP (`saml2.server.Server`,
which signs through the xmlsec1 program) behind a small HTTP server with a login form.

- `GET /metadata`: the IdP's metadata (entity ID, single sign-on by HTTP-Redirect, its
  signing certificate).
- `GET /sso?SAMLRequest=…&RelayState=…`: the AuthnRequest is parsed and checked by pysaml2
  against the service provider's metadata; the answer is a login form.
- `POST /login`: a known login and password give the page that posts the signed Response to
  the service provider's assertion consumer service, as a browser would.

The run's options (which algorithm signs, what is signed) are set through `IdentityProvider`.
"""

import html
import http.server
import subprocess
import threading
import urllib.parse

from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT, server, xmldsig
from saml2.config import IdPConfig
from saml2.metadata import create_metadata_string
from saml2.saml import AUTHN_PASSWORD, NAME_FORMAT_BASIC, NAMEID_FORMAT_EMAILADDRESS, NameID


def make_key_pair(directory, name="idp"):
    """A fresh RSA key and a self-signed certificate for it (openssl)."""
    key, cert = directory / f"{name}.key", directory / f"{name}.crt"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(cert), "-days", "30", "-subj", f"/CN={name}"],
        check=True, capture_output=True,
    )
    return key, cert


class IdentityProvider:
    def __init__(self, directory, port, sp_metadata_path, accounts, key_pair=None):
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.accounts = accounts
        self.key, self.cert = key_pair or make_key_pair(directory)
        self.sp_metadata_path = sp_metadata_path
        self.sign_alg = xmldsig.SIG_RSA_SHA256
        self.digest_alg = xmldsig.DIGEST_SHA256
        self.sign_response = True
        self.sign_assertion = True
        self.idp = self._idp()
        self.last_response = None
        self.httpd = None

    def _idp(self):
        config = IdPConfig()
        config.load({
            "entityid": f"{self.base}/metadata",
            "service": {"idp": {
                "endpoints": {"single_sign_on_service": [(f"{self.base}/sso", BINDING_HTTP_REDIRECT)]},
                "policy": {"default": {"lifetime": {"minutes": 5}, "attribute_restrictions": None,
                                       "name_form": NAME_FORMAT_BASIC}},
                "name_id_format": [NAMEID_FORMAT_EMAILADDRESS],
            }},
            "key_file": str(self.key),
            "cert_file": str(self.cert),
            "xmlsec_binary": "/usr/bin/xmlsec1",
            "metadata": {"local": [str(self.sp_metadata_path)]},
        })
        return server.Server(config=config)

    def metadata(self):
        return create_metadata_string(None, config=self.idp.config, valid=48).decode()

    def response_for(self, login, request, relay_state):
        """The auto-posting page of a signed response to `request` for `login`."""
        account = self.accounts[login]
        identity = {k: v if isinstance(v, list) else [v] for k, v in account.items()}
        response = self.idp.create_authn_response(
            identity,
            in_response_to=request.message.id,
            destination=request.message.assertion_consumer_service_url,
            sp_entity_id=request.message.issuer.text,
            name_id=NameID(format=NAMEID_FORMAT_EMAILADDRESS, text=account["email"]),
            authn={"class_ref": AUTHN_PASSWORD},
            sign_response=self.sign_response,
            sign_assertion=self.sign_assertion,
            sign_alg=self.sign_alg,
            digest_alg=self.digest_alg,
        )
        self.last_response = str(response)
        info = self.idp.apply_binding(
            BINDING_HTTP_POST, self.last_response,
            destination=request.message.assertion_consumer_service_url,
            relay_state=relay_state, response=True,
        )
        return info["data"]

    def start(self):
        provider = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def answer(self, status, body, content_type="text/html"):
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                url = urllib.parse.urlparse(self.path)
                query = dict(urllib.parse.parse_qsl(url.query))
                if url.path == "/metadata":
                    return self.answer(200, provider.metadata(), "application/samlmetadata+xml")
                if url.path == "/sso":
                    try:
                        provider.idp.parse_authn_request(query["SAMLRequest"], BINDING_HTTP_REDIRECT)
                    except Exception as error:  # noqa: BLE001 - the IdP refuses the request
                        return self.answer(400, f"bad AuthnRequest: {error}", "text/plain")
                    fields = "".join(
                        f'<input type="hidden" name="{k}" value="{html.escape(v)}">'
                        for k, v in query.items()
                    )
                    return self.answer(200, (
                        f'<form method="post" action="/login">{fields}'
                        '<input name="username"><input name="password" type="password">'
                        '<button>Sign in</button></form>'
                    ))
                return self.answer(404, "not found", "text/plain")

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
                if self.path != "/login":
                    return self.answer(404, "not found", "text/plain")
                login = form.get("username", "")
                if login not in provider.accounts or form.get("password") != "secret":
                    return self.answer(403, "wrong login or password", "text/plain")
                request = provider.idp.parse_authn_request(form["SAMLRequest"], BINDING_HTTP_REDIRECT)
                page = provider.response_for(login, request, form.get("RelayState", ""))
                return self.answer(200, page)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None
