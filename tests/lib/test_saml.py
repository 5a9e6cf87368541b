"""The SAML service provider's own pieces, with an IdP's metadata given by file: the signed
request it sends, its metadata, and the outline it reads of an IdP's message."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from saml2 import BINDING_HTTP_REDIRECT
from saml2.config import IdPConfig
from saml2.metadata import create_metadata_string

from palaver.auth_config import SamlIdp
from palaver.config import load_settings
from palaver.lib import saml
from tests.saml_server import write_key_pair

IDP = "https://idp.example.com/metadata.xml"
REALM_URL = "https://acme.chat.example.com"


def _idp_metadata(tmp_path: Path) -> Path:
    key, cert = write_key_pair(tmp_path, "idp")
    config = IdPConfig()
    config.load(
        {
            "entityid": IDP,
            "xmlsec_binary": shutil.which("xmlsec1"),
            "service": {
                "idp": {
                    "endpoints": {
                        "single_sign_on_service": [("https://idp.example.com/sso", BINDING_HTTP_REDIRECT)],
                        "single_logout_service": [("https://idp.example.com/slo", BINDING_HTTP_REDIRECT)],
                    }
                }
            },
            "key_file": str(key),
            "cert_file": str(cert),
        }
    )
    path = tmp_path / "idp-metadata.xml"
    path.write_bytes(create_metadata_string(None, config))
    return path


def _settings_idp(tmp_path: Path) -> SamlIdp:
    metadata = _idp_metadata(tmp_path)
    key, cert = write_key_pair(tmp_path, "sp")
    config = tmp_path / "palaver.toml"
    config.write_text(
        f"""[auth.saml.corp]
idp_metadata_file = "{metadata}"
sp_key_file = "{key}"
sp_cert_file = "{cert}"
groups_attribute = "groups"
required_groups = ["chat"]
"""
    )
    settings = load_settings(env={}, config_file=config)
    return settings.auth.saml["corp"]


def test_metadata_by_file_and_a_signed_request(tmp_path: Path) -> None:
    idp = _settings_idp(tmp_path)
    assert (idp.button_name, idp.path, idp.display_name, idp.idp_initiated) == (
        "saml:corp",
        "saml/corp",
        "corp",
        False,
    )
    assert saml.idp_entity_id(idp, REALM_URL) == IDP
    request_id, location = saml.begin(idp, REALM_URL)
    parts = urlsplit(location)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == "https://idp.example.com/sso"
    query = parse_qs(parts.query)
    assert query["SigAlg"] == ["http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"] and query["Signature"]
    assert request_id.startswith("id")


def test_sp_metadata_names_this_organization(tmp_path: Path) -> None:
    document = saml.sp_metadata(_settings_idp(tmp_path), REALM_URL)
    assert f'entityID="{REALM_URL}/saml/metadata.xml"' in document
    assert f"{REALM_URL}/complete/saml/" in document
    assert 'use="encryption"' in document and 'use="signing"' in document


def test_the_outline_of_a_message_and_unreadable_ones() -> None:
    xml = (
        '<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" '
        'xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" InResponseTo="id-1">'
        f"<saml:Issuer>{IDP}</saml:Issuer></samlp:Response>"
    )
    message = saml.read_message(base64.b64encode(xml.encode()).decode())
    assert message == saml.SamlMessage("Response", IDP, "id-1")
    bomb = '<!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>'
    for garbage in (
        "not base64 at all!",
        base64.b64encode(b"<html/>").decode(),
        base64.b64encode(bomb.encode()).decode(),
    ):
        assert saml.read_message(garbage) is None
