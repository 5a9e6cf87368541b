"""What a server on the embedded default holds at start-up: the sign-in libraries load only
with the feature that uses them (idle memory, bench/queue_memory.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import saml2
import saml2.xmldsig

from palaver.lib import saml

# Imported only where a configured [auth.*] provider, a passkey, an authenticator app or the
# desktop app's sign-in (cryptography, lib/app_flow.py) is used.
SIGN_IN_LIBRARIES = {
    "ldap3",
    "saml2",
    "xmlsec",
    "authlib",
    "joserfc",
    "webauthn",
    "pyotp",
    "segno",
    "cryptography",
}

_PROBE = """
import sys
import orjson
import palaver.app
from palaver.config import load_settings
palaver.app.create_app(load_settings())
sys.stdout.write(orjson.dumps(sorted({name.split(".")[0] for name in sys.modules})).decode())
"""


def test_default_app_does_not_import_sign_in_libraries(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALAVER_")}
    env["PALAVER_DATA_DIR"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, cwd=tmp_path, capture_output=True, check=True, timeout=120
    )
    loaded = set(orjson.loads(done.stdout))
    assert "palaver" in loaded
    assert loaded & SIGN_IN_LIBRARIES == set()


def test_saml_uris_are_pysaml2s() -> None:
    # lib/saml.py spells them so that importing it does not load pysaml2.
    assert saml.BINDING_HTTP_POST == saml2.BINDING_HTTP_POST
    assert saml.BINDING_HTTP_REDIRECT == saml2.BINDING_HTTP_REDIRECT
    assert saml.SIG_RSA_SHA256 == saml2.xmldsig.SIG_RSA_SHA256
