"""A SAML 2.0 identity provider for the sign-in tests: pysaml2's ``saml2.server.Server`` behind
a login form, run as its own process on 127.0.0.1 (tests/saml_server.py starts it).

Configuration comes as JSON in ``SAML_IDP_CONFIG``: port, key and certificate files, the
service provider's metadata URL and the accounts. ``POST /control`` with ``{"mode": …}`` makes
the next answers misbehave as a broken or hostile IdP would: ``tamper`` (the email changed
after signing), ``audience`` (issued to another service), ``expired``, ``replay`` (the
previous answer again), ``encrypt`` (assertions encrypted to the SP's certificate; valid).
"""

from __future__ import annotations

import html
import json
import os
import secrets
import shutil
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import saml2.assertion
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.config import IdPConfig
from saml2.metadata import create_metadata_string
from saml2.saml import NAMEID_FORMAT_PERSISTENT, NameID
from saml2.server import Server
from saml2.xmldsig import SIG_RSA_SHA256

CONFIG: dict[str, Any] = json.loads(os.environ["SAML_IDP_CONFIG"])
BASE = f"http://127.0.0.1:{CONFIG['port']}"
ENTITY_ID = f"{BASE}/metadata.xml"
OTHER_AUDIENCE = "http://other.example/saml/metadata.xml"


def idp_config(with_sp: bool) -> IdPConfig:
    config = IdPConfig()
    config.load(
        {
            "entityid": ENTITY_ID,
            "xmlsec_binary": shutil.which("xmlsec1"),
            "service": {
                "idp": {
                    "name": "Palaver test IdP",
                    "endpoints": {
                        "single_sign_on_service": [(f"{BASE}/sso/redirect", BINDING_HTTP_REDIRECT)],
                        "single_logout_service": [(f"{BASE}/slo/redirect", BINDING_HTTP_REDIRECT)],
                    },
                    "policy": {"default": {"lifetime": {"minutes": 5}, "attribute_restrictions": None}},
                    "name_id_format": [NAMEID_FORMAT_PERSISTENT],
                    "want_authn_requests_signed": True,
                }
            },
            "key_file": CONFIG["key_file"],
            "cert_file": CONFIG["cert_file"],
            **({"metadata": {"remote": [{"url": CONFIG["sp_metadata_url"]}]}} if with_sp else {}),
        }
    )
    return config


class State:
    server: Server | None = None
    mode: str | None = None
    # Requests shown a login form and not yet answered, by the form's key.
    pending: dict[str, dict[str, str]] = {}
    last_answer: tuple[str, str, str] | None = None
    logouts: list[dict[str, object]] = []
    requests: list[dict[str, str]] = []


def server() -> Server:
    # The SP's metadata is read on first use: Palaver starts after this process.
    if State.server is None:
        State.server = Server(config=idp_config(with_sp=True))
    return State.server


def sp_entity_id() -> str:
    return str(next(iter(server().metadata.service_providers())))


def acs_url() -> str:
    return str(server().metadata.assertion_consumer_service(sp_entity_id(), BINDING_HTTP_POST)[0]["location"])


def answer(account: str, in_response_to: str | None, relay_state: str) -> tuple[str, str, str]:
    """(ACS URL, the HTML form that posts the answer there, the answer's XML)."""
    person = CONFIG["accounts"][account]
    identity = {"email": [person["email"]], "name": [person["name"]], "groups": person.get("groups", [])}
    mode = State.mode
    original, original_instant = saml2.assertion.in_a_while, saml2.assertion.instant
    if mode == "expired":
        # Issued an hour ago, valid for five minutes then.
        saml2.assertion.in_a_while = lambda **_: original(minutes=-55)
        saml2.assertion.instant = lambda *_, **__: original_instant(time_stamp=int(time.time()) - 3600)
    try:
        response = server().create_authn_response(
            identity,
            in_response_to=in_response_to,
            destination=acs_url(),
            sp_entity_id=OTHER_AUDIENCE if mode == "audience" else sp_entity_id(),
            name_id=NameID(format=NAMEID_FORMAT_PERSISTENT, text=f"idp-{account}"),
            authn={"class_ref": "urn:oasis:names:tc:SAML:2.0:ac:classes:Password"},
            sign_assertion=True,
            sign_response=False,
            encrypt_assertion=mode == "encrypt",
        )
    finally:
        saml2.assertion.in_a_while = original
        saml2.assertion.instant = original_instant
    xml = str(response)
    if mode == "tamper":
        xml = xml.replace(person["email"], "mallory@evil.example")
    return acs_url(), xml, relay_state


def post_form(acs: str, xml: str, relay_state: str) -> str:
    args = server().apply_binding(BINDING_HTTP_POST, xml, acs, relay_state, response=True)
    return str(args["data"])


def login_form(key: str) -> str:
    return (
        "<!doctype html><html><head><title>Test IdP login</title></head><body>"
        "<h1>Test IdP</h1><form method=post action=/login>"
        f"<input type=hidden name=key value='{html.escape(key)}'>"
        "<label>User <input name=username></label>"
        "<label>Password <input name=password type=password></label>"
        "<button type=submit>Sign in</button></form></body></html>"
    )


class Handler(BaseHTTPRequestHandler):
    def _send(self, status: int, body: str, content_type: str = "text/html", **headers: str) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if parts.path == "/metadata.xml":
            self._send(200, create_metadata_string(None, idp_config(with_sp=False)).decode(), "text/xml")
        elif parts.path == "/sso/redirect":
            request = server().parse_authn_request(
                query["SAMLRequest"],
                BINDING_HTTP_REDIRECT,
                relay_state=query.get("RelayState"),
                sigalg=query.get("SigAlg"),
                signature=query.get("Signature"),
            )
            State.requests.append({"id": request.message.id, "issuer": request.message.issuer.text})
            key = secrets.token_hex(8)
            State.pending[key] = {"id": request.message.id, "relay_state": query.get("RelayState", "")}
            self._send(200, login_form(key))
        elif parts.path == "/unsolicited":
            key = secrets.token_hex(8)
            State.pending[key] = {"id": "", "relay_state": ""}
            self._send(200, login_form(key))
        elif parts.path == "/slo/redirect" and "SAMLRequest" in query:
            request = server().parse_logout_request(
                query["SAMLRequest"],
                BINDING_HTTP_REDIRECT,
                relay_state=query.get("RelayState"),
                sigalg=query.get("SigAlg"),
                signature=query.get("Signature"),
            )
            message = request.message
            State.logouts.append(
                {"name_id": message.name_id.text, "session_index": [s.text for s in message.session_index]}
            )
            response = server().create_logout_response(message, [BINDING_HTTP_REDIRECT])
            destination = server().metadata.single_logout_service(
                message.issuer.text, BINDING_HTTP_REDIRECT, "spsso"
            )[0]["location"]
            args = server().apply_binding(
                BINDING_HTTP_REDIRECT,
                str(response),
                destination,
                query.get("RelayState", ""),
                response=True,
                sign=True,
            )
            self._send(302, "", Location=dict(args["headers"])["Location"])
        elif parts.path == "/logout_sp":
            # IdP-initiated single logout of one person at the SP (unsigned with ?unsigned=1).
            destination = server().metadata.single_logout_service(
                sp_entity_id(), BINDING_HTTP_REDIRECT, "spsso"
            )[0]["location"]
            _, request = server().create_logout_request(
                destination,
                sp_entity_id(),
                name_id=NameID(format=NAMEID_FORMAT_PERSISTENT, text=query["name_id"]),
                sign=False,
            )
            signed = "unsigned" not in query
            args = server().apply_binding(
                BINDING_HTTP_REDIRECT,
                str(request),
                destination,
                "",
                sign=signed,
                sigalg=SIG_RSA_SHA256 if signed else None,
            )
            self._send(302, "", Location=dict(args["headers"])["Location"])
        elif parts.path == "/slo/redirect" and "SAMLResponse" in query:
            self._send(
                200, "<!doctype html><title>Logged out</title><p id=idp-done>The SP answered the logout.</p>"
            )
        elif parts.path == "/state":
            body = {"logouts": State.logouts, "requests": State.requests}
            self._send(200, json.dumps(body), "application/json")
        else:
            self._send(404, "not found")

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length).decode()
        if self.path == "/control":
            State.mode = json.loads(body).get("mode")
            self._send(200, "{}", "application/json")
            return
        form = {k: v[0] for k, v in parse_qs(body).items()}
        pending = State.pending.pop(form.get("key", ""), None)
        if self.path != "/login" or pending is None or form.get("username") not in CONFIG["accounts"]:
            self._send(403, "<!doctype html><title>Refused</title><p>Unknown user or request.</p>")
            return
        if State.mode == "replay" and State.last_answer is not None:
            acs, xml, relay_state = State.last_answer
        else:
            acs, xml, relay_state = answer(form["username"], pending["id"] or None, pending["relay_state"])
            State.last_answer = (acs, xml, relay_state)
        self._send(200, post_form(acs, xml, relay_state))

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(format % args + "\n")


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", CONFIG["port"]), Handler).serve_forever()
