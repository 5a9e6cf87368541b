"""A SAML identity provider (pysaml2's, tests/providers/saml_idp.py) run as its own process on
127.0.0.1 by a test, with key pairs made for the run (one for the IdP, one for Palaver).

Never skipped: without Debian's ``xmlsec1`` (scripts/install-auth-providers) the IdP cannot
sign and the test fails.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from tests.servers import die_with_parent, free_port

SCRIPT = Path(__file__).parent / "providers" / "saml_idp.py"


def write_key_pair(directory: Path, name: str) -> tuple[Path, Path]:
    """A fresh RSA key and a self-signed certificate for it, as PEM files."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    key_file, cert_file = directory / f"{name}.key", directory / f"{name}.crt"
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key_file, cert_file


@dataclass
class IdentityProvider:
    url: str
    port: int
    root: Path
    sp_key: Path
    sp_cert: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def metadata_url(self) -> str:
        return f"{self.url}/metadata.xml"

    def set_mode(self, mode: str | None) -> None:
        httpx.post(f"{self.url}/control", json={"mode": mode}).raise_for_status()

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = httpx.get(f"{self.url}/state").json()
        return state

    def logs(self) -> str:
        path = self.root / "saml-idp.log"
        return path.read_text()[-4000:] if path.exists() else ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


@contextmanager
def running_idp(
    root: Path, sp_metadata_url: str, accounts: dict[str, dict[str, Any]]
) -> Iterator[IdentityProvider]:
    assert shutil.which("xmlsec1"), "xmlsec1 is missing: run scripts/install-auth-providers"
    idp_key, idp_cert = write_key_pair(root, "idp")
    sp_key, sp_cert = write_key_pair(root, "sp")
    port = free_port()
    idp = IdentityProvider(f"http://127.0.0.1:{port}", port, root, sp_key, sp_cert)
    config = {
        "port": port,
        "key_file": str(idp_key),
        "cert_file": str(idp_cert),
        "sp_metadata_url": sp_metadata_url,
        "accounts": accounts,
    }
    out = (root / "saml-idp.log").open("ab")
    idp.process = subprocess.Popen(
        [sys.executable, str(SCRIPT)],
        env={**os.environ, "SAML_IDP_CONFIG": json.dumps(config)},
        stdout=out,
        stderr=subprocess.STDOUT,
        # Only what a fork may safely run: one prctl call (as tests/servers.py does).
        preexec_fn=die_with_parent,  # noqa: PLW1509
    )
    out.close()
    try:
        deadline = time.monotonic() + 30
        while True:
            assert idp.process.poll() is None, f"the SAML IdP exited:\n{idp.logs()}"
            try:
                if httpx.get(idp.metadata_url).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"the SAML IdP did not answer within 30 s:\n{idp.logs()}"
            time.sleep(0.1)
        yield idp
    finally:
        idp.stop()
