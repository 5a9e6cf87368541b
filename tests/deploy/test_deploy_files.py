"""The files in deploy/ are safe as shipped: proxies trusted, no default password, real health checks."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any

import yaml

from palaver.config import load_settings

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return loaded


def test_the_toml_trusts_the_local_nginx(tmp_path: Path) -> None:
    settings = load_settings(config_file=DEPLOY / "palaver.toml", env={"PALAVER_DATA_DIR": str(tmp_path)})
    # nginx.conf proxies to 127.0.0.1 on the same host.
    assert "proxy_pass http://palaver;" in (DEPLOY / "nginx.conf").read_text()
    assert "server 127.0.0.1:9991;" in (DEPLOY / "nginx.conf").read_text()
    assert "127.0.0.1" in settings.trusted_proxies


def test_compose_trusts_exactly_its_caddy(tmp_path: Path) -> None:
    compose = _compose()
    services = compose["services"]
    caddy_address = services["caddy"]["networks"]["default"]["ipv4_address"]
    subnet = ipaddress.ip_network(compose["networks"]["default"]["ipam"]["config"][0]["subnet"])
    assert ipaddress.ip_address(caddy_address) in subnet
    for name in ("palaver-1", "palaver-2"):
        env = {k: str(v) for k, v in services[name]["environment"].items()}
        assert env["PALAVER_TRUSTED_PROXIES"] == caddy_address
        proxies = {
            "PALAVER_TRUSTED_PROXIES": env["PALAVER_TRUSTED_PROXIES"],
            "PALAVER_DATA_DIR": str(tmp_path),
        }
        settings = load_settings(env=proxies)
        assert settings.trusted_proxies == [caddy_address]


def test_compose_has_no_fallback_password() -> None:
    text = (DEPLOY / "compose.yaml").read_text()
    assert "change-me" not in text
    uses = re.findall(r"\$\{POSTGRES_PASSWORD([^}]*)\}", text)
    assert len(uses) == 2
    # `${VAR:?message}`: compose refuses to start when it is unset or empty.
    assert all(use.startswith(":?") for use in uses), uses


def test_health_checks_ask_for_readiness_on_the_configured_port() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    check = dockerfile.split("HEALTHCHECK", 1)[1].split("\n\n", 1)[0]
    assert "/health/ready" in check and "PALAVER_PORT" in check and ":9991/" not in check
    assert "health_uri /health/ready" in (DEPLOY / "Caddyfile").read_text()


def test_the_user_content_origin_is_set_and_served(tmp_path: Path) -> None:
    """palaver.toml serves uploads from another domain, and nginx.conf has its server."""
    settings = load_settings(config_file=DEPLOY / "palaver.toml", env={"PALAVER_DATA_DIR": str(tmp_path)})
    assert settings.user_content_url == "https://usercontent.example.net"
    nginx = (DEPLOY / "nginx.conf").read_text()
    assert "server_name usercontent.example.net;" in nginx
    assert "location /user_uploads/temporary/ {" in nginx
