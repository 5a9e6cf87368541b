"""npm's ``oidc-provider`` under Node (tests/providers/oidc_provider.mjs), started by a test,
and in front of it a relay that can act as an attacker on the token response.

The provider's issuer is the relay's address, so the browser and Palaver both reach the
provider through it. Normally it passes everything through unchanged; set ``tamper`` and it
rewrites the ID token of the next token responses: a broken signature, or claims re-signed
with the provider's own key (another nonce, an expired token), as a compromised or buggy
provider would send. Never skipped: a missing Node or package fails the test.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.cookiejar import CookieJar, DefaultCookiePolicy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from tests.servers import die_with_parent, free_port

SCRIPT = Path(__file__).parent / "providers" / "oidc_provider.mjs"
MODULES = Path(
    os.environ.get("PALAVER_TEST_OIDC_PROVIDER_DIR")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "palaver-test" / "oidc-provider"
)
CLIENT_ID = "palaver-test"
CLIENT_SECRET = "palaver-test-client-secret"
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "host"}


def new_key(kid: str) -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": kid, "use": "sig", "alg": "RS256"})


@dataclass
class Provider:
    issuer: str
    port: int
    root: Path
    redirect_uris: list[str]
    accounts: dict[str, dict[str, Any]]
    key: RSAKey
    # "signature", "nonce", "expired" or None (pass through).
    tamper: str | None = None
    process: subprocess.Popen[bytes] | None = None
    log: list[str] = field(default_factory=list)

    def start(self) -> None:
        assert shutil.which("node"), "Node.js is missing: run scripts/install-auth-providers"
        assert (MODULES / "node_modules" / "oidc-provider").is_dir(), (
            f"oidc-provider is not installed in {MODULES}: run scripts/install-auth-providers"
        )
        config = {
            "port": self.port,
            "issuer": self.issuer,
            "client": {
                "client_id": CLIENT_ID,
                "client_secret": CLIENT_SECRET,
                "redirect_uris": self.redirect_uris,
            },
            "accounts": self.accounts,
            "jwks": {"keys": [self.key.as_dict(private=True)]},
        }
        env = {**os.environ, "OIDC_PROVIDER_MODULES": str(MODULES), "OIDC_TEST_CONFIG": json.dumps(config)}
        out = (self.root / "oidc-provider.log").open("ab")
        self.process = subprocess.Popen(
            ["node", str(SCRIPT)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            # Only what a fork may safely run: one prctl call (as tests/servers.py does).
            preexec_fn=die_with_parent,  # noqa: PLW1509
        )
        out.close()
        deadline = time.monotonic() + 30
        while True:
            assert self.process.poll() is None, f"oidc-provider exited:\n{self.logs()}"
            try:
                if (
                    httpx.get(f"http://127.0.0.1:{self.port}/.well-known/openid-configuration").status_code
                    == 200
                ):
                    return
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"oidc-provider did not answer within 30 s:\n{self.logs()}"
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)

    def restart(self) -> None:
        """Restart with ``accounts`` as they are now: a change made at the provider."""
        self.stop()
        self.start()

    def rotate_key(self) -> None:
        """Restart with a new signing key (and only it), as a provider rotating its keys."""
        self.stop()
        self.key = new_key(f"k{int(time.time() * 1000)}")
        self.start()

    def logs(self) -> str:
        path = self.root / "oidc-provider.log"
        return path.read_text()[-3000:] if path.exists() else ""

    def rewrite_token_response(self, body: bytes) -> bytes:
        if self.tamper is None:
            return body
        token = json.loads(body)
        id_token: str = token["id_token"]
        if self.tamper == "signature":
            header, payload, signature = id_token.split(".")
            # The same claims with one changed character: the signature no longer matches.
            claims = json.loads(_b64decode(payload))
            claims["email"] = "mallory@evil.example"
            token["id_token"] = ".".join([header, _b64encode(json.dumps(claims).encode()), signature])
        else:
            claims = dict(jwt.decode(id_token, KeySet([self.key])).claims)
            if self.tamper == "nonce":
                claims["nonce"] = "a-nonce-of-another-sign-in"
            elif self.tamper == "expired":
                now = int(time.time())
                claims.update(iat=now - 7200, exp=now - 3600)
            token["id_token"] = jwt.encode({"alg": "RS256", "kid": self.key.kid}, claims, self.key)
        return json.dumps(token).encode()


def _b64decode(value: str) -> bytes:
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))


def _b64encode(value: bytes) -> str:
    return base64.urlsafe_b64encode(value).rstrip(b"=").decode()


def _relay(provider: Provider, port: int) -> ThreadingHTTPServer:
    # No cookie jar of its own: the browsers' cookies pass through, and only theirs.
    no_cookies = CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))
    upstream = httpx.Client(
        base_url=f"http://127.0.0.1:{provider.port}", follow_redirects=False, timeout=30, cookies=no_cookies
    )

    class Relay(BaseHTTPRequestHandler):
        def _forward(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = [(k, v) for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP]
            # The provider sees the issuer's host, as it would behind a reverse proxy.
            headers.append(("host", f"127.0.0.1:{port}"))
            response = upstream.request(self.command, self.path, headers=headers, content=body)
            content = response.content
            if self.path.startswith("/token") and response.status_code == 200:
                content = provider.rewrite_token_response(content)
            self.send_response(response.status_code)
            for key, value in response.headers.multi_items():
                if key.lower() not in _HOP_BY_HOP:
                    self.send_header(key, value)
            self.send_header("content-length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        do_GET = do_POST = _forward

        def log_message(self, format: str, *args: Any) -> None:
            provider.log.append(format % args)

    return ThreadingHTTPServer(("127.0.0.1", port), Relay)


@contextmanager
def running_provider(
    root: Path, redirect_uris: list[str], accounts: dict[str, dict[str, Any]]
) -> Iterator[Provider]:
    relay_port = free_port()
    provider = Provider(
        f"http://127.0.0.1:{relay_port}", free_port(), root, redirect_uris, accounts, new_key("k1")
    )
    relay = _relay(provider, relay_port)
    thread = threading.Thread(target=relay.serve_forever, daemon=True)
    thread.start()
    try:
        provider.start()
        yield provider
    finally:
        provider.stop()
        relay.shutdown()
        relay.server_close()
