"""Server configuration: environment variables over an optional TOML file over defaults.

Every setting can be given as ``PALAVER_<NAME>`` in the environment or as ``<name>`` in a
TOML file named by ``PALAVER_CONFIG`` (or ``--config``). ``DATABASE_URL`` and ``REDIS_URL``
are accepted unprefixed too, as deployment platforms commonly set them.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from palaver.auth_config import AuthSettings
from palaver.smtp_url import parse_smtp_url

LogLevel = Literal["debug", "info", "warning", "error", "critical"]


class ConfigError(Exception):
    """Configuration that cannot be used; the message is one line for stderr."""

    def __init__(self, message: str) -> None:
        # Messages quote user input (paths, values, parser errors), any of which may hold a
        # line break; the CLI promises a single stderr line, so it is enforced here.
        super().__init__(" ".join(message.split()))


class RateLimit(BaseModel):
    """``count`` requests per ``seconds``; written as ``"200/60"`` in configuration."""

    model_config = ConfigDict(frozen=True)
    count: int = Field(gt=0)
    seconds: int = Field(gt=0)

    @classmethod
    def parse(cls, value: object) -> object:
        if isinstance(value, str):
            count, sep, seconds = value.partition("/")
            if not sep or not count.strip().isdigit() or not seconds.strip().isdigit():
                raise ValueError(f"expected COUNT/SECONDS, got {value!r}")
            return {"count": int(count), "seconds": int(seconds)}
        return value


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    data_dir: Path = Path("palaver-data")
    database_url: str = ""
    # A PostgreSQL read replica for reads that tolerate its lag (message history and search);
    # writes, reads inside writes and realm-state cache loads always use database_url.
    database_replica_url: str | None = None
    # After a user's write commits, that user's reads stay on the primary this long
    # (read-your-writes; db/read_fence.py). 0 sends every eligible read to the replica.
    database_replica_fence_seconds: float = Field(default=10, ge=0, le=3600)
    # PostgreSQL connections each process may open, plus 8, as concurrent requests need
    # them; opened ones stay open, and requests past the limit wait for one (db/engine.py). Cache
    # loads have up to 8 of their own. Processes x (this + 16) must stay under
    # PostgreSQL's max_connections.
    database_pool_size: int = Field(default=10, ge=1, le=1000)
    redis_url: str | None = None
    host: str = "127.0.0.1"
    port: int = Field(default=9991, ge=0, le=65535)
    workers: int = Field(default=1, ge=1, le=64)
    external_url: str = ""
    upload_dir: Path | None = None
    max_file_upload_size_mib: int = Field(default=25, ge=0)
    # Uploads go to this S3-compatible bucket instead of upload_dir (needs the `s3` extra).
    s3_bucket: str | None = None
    s3_endpoint_url: str | None = None
    # A separate origin for uploaded files (README "Uploads and security headers"), such as
    # https://usercontent.example.net pointed at this server: the organizations' hosts then
    # redirect each file to it with a signed URL valid for a minute, and it serves nothing else.
    user_content_url: str | None = None
    # Mobile push notifications go through one of: Zulip's push notification service (the
    # one Zulip's official apps receive from; `palaver push-register` registers this server
    # with it), or a relay of your own speaking Palaver's relay protocol (lib/push.py).
    push_service_url: str | None = None
    push_relay_url: str | None = None
    # Realm state (users, channels, subscriptions, groups, settings...) kept in memory per
    # process, for this many realms, least recently used dropped first (cache/).
    realm_cache: bool = True
    realm_cache_max_realms: int = Field(default=64, ge=1)
    log_level: LogLevel = "info"

    # The realm served on the bare host (no subdomain); "" is Zulip's root-domain realm.
    root_realm_string_id: str = ""
    # Create a demo organization when `serve` finds an empty database.
    create_demo_realm: bool = True

    rate_limiting: bool = True
    api_rate_limit: RateLimit = RateLimit(count=200, seconds=60)
    auth_rate_limit_per_username: RateLimit = RateLimit(count=5, seconds=1800)
    auth_rate_limit_per_ip: RateLimit = RateLimit(count=50, seconds=600)
    # Message reports per reporter, so no one can flood the moderators' channel.
    message_report_rate_limit: RateLimit = RateLimit(count=20, seconds=3600)

    # argon2id cost; tests lower these so seeding dozens of users stays fast.
    password_time_cost: int = Field(default=3, ge=1)
    password_memory_cost_kib: int = Field(default=65536, ge=8)

    # Archived messages (message retention) can be restored for this many days.
    archive_retention_days: int = Field(default=30, ge=0)

    event_queue_idle_timeout_seconds: int = Field(default=600, ge=1)
    heartbeat_seconds: int = Field(default=50, ge=1, le=59)
    # Registering past this collects the user's least recently used queues first.
    max_event_queues_per_user: int = Field(default=50, ge=1)
    # Above this many active users, a user coming online is not broadcast (clients poll
    # /users/me/presence every minute anyway): each broadcast reaches every queue of the
    # realm, and coming online grows with the realm too, so the work is quadratic.
    presence_update_events_max_users: int = Field(default=100, ge=0)

    # Media (lib/avatars.py, lib/thumbnails.py, lib/previews.py). Off by default so a server
    # without Internet access still shows pictures: avatars are generated locally instead.
    gravatar: bool = False
    # Link and image previews fetch from the Internet; off turns every outgoing fetch off.
    outgoing_fetches: bool = True
    # Tests only: lets previews fetch from loopback/private addresses (a local test server).
    outgoing_fetches_allow_private: bool = False

    # Outgoing-webhook and embedded bots (workers/outgoing_webhooks.py). Service URLs that
    # resolve to private, loopback or link-local addresses are refused unless allowed.
    outgoing_webhooks_allow_private: bool = False
    outgoing_webhook_timeout_seconds: float = Field(default=10.0, gt=0, le=60)
    # Run the bot worker in each server process; tests drive it themselves.
    service_bot_worker: bool = True

    # Email (lib/email/): without smtp_url, mail is written to <data_dir>/outbox/ as .eml files.
    smtp_url: str | None = None
    noreply_email: str = ""
    # Domain whose mail reaches the email gateway; empty turns reply-by-email and channel addresses off.
    email_gateway_domain: str = ""
    # Run the email-delivery worker in each server process (workers/email.py).
    email_worker: bool = True
    # Run the message-retention worker (first round a minute after start, then daily).
    retention_worker: bool = True
    # Run the thumbnail worker in each server process (workers/thumbnails.py).
    thumbnail_worker: bool = True

    # BigBlueButton server for GET /calls/bigbluebutton/create (its API URL and shared secret).
    big_blue_button_url: str | None = None
    big_blue_button_secret: str | None = None
    # POST /dev_fetch_api_key hands out any user's API key without a password: development only.
    development_auth: bool = False

    # Operating: logs, limits, proxies, dependencies (README "Operating").
    log_format: Literal["text", "json"] = "text"
    access_log: bool = True
    # Requests slower than this are logged as warnings (long-polls excepted); 0 turns it off.
    slow_request_ms: int = Field(default=2000, ge=0)
    # Bodies other than uploads (multipart): form, JSON. Uploads use max_file_upload_size_mib.
    max_request_body_kib: int = Field(default=1024, ge=1)
    max_request_header_kib: int = Field(default=16, ge=1)
    max_request_headers: int = Field(default=100, ge=1)
    request_header_timeout_seconds: float = Field(default=10, gt=0)
    request_body_timeout_seconds: float = Field(default=30, gt=0)
    keep_alive_timeout_seconds: float = Field(default=20, gt=0)
    max_parked_polls_per_user: int = Field(default=20, ge=1)
    max_parked_polls: int = Field(default=10000, ge=1)
    # Peers (CIDRs) whose X-Forwarded-For / X-Forwarded-Proto are believed; none by default.
    trusted_proxies: list[str] = Field(default_factory=list)
    # How long start-up waits for PostgreSQL and Redis before giving up.
    startup_dependency_timeout_seconds: float = Field(default=30, ge=0)
    # The Jitsi Meet server clients create video calls on (server_jitsi_server_url).
    jitsi_server_url: str = "https://meet.jit.si"

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _parse_proxies(cls, value: object) -> object:
        if isinstance(value, str):
            value = [part for part in value.replace(" ", ",").split(",") if part]
        if isinstance(value, list):
            for item in value:
                try:
                    ipaddress.ip_network(str(item), strict=False)
                except ValueError:
                    raise ValueError(f"{item!r} is not an IP address or CIDR network") from None
        return value

    # Browser sign-in sessions end after this many days without use.
    session_lifetime_days: int = Field(default=14, ge=1, le=3650)
    # Sign-in providers beyond passwords: the [auth.ldap], [auth.oidc.NAME], [auth.github]...
    # tables of the TOML file (auth_config.py). Only a file can hold them.
    auth: AuthSettings = AuthSettings()
    # "Don't ask again on this browser": how long a second factor is not asked for again.
    two_factor_remember_days: int = Field(default=30, ge=1, le=365)

    @field_validator(
        "api_rate_limit",
        "auth_rate_limit_per_username",
        "auth_rate_limit_per_ip",
        "message_report_rate_limit",
        mode="before",
    )
    @classmethod
    def _parse_rate(cls, value: object) -> object:
        return RateLimit.parse(value)

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower_log_level(cls, value: object) -> object:
        # Operators write INFO as often as info (it is how Python and uvicorn print it).
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("database_url")
    @classmethod
    def _check_db_url(cls, value: str) -> str:
        return _normalise_database_url(value) if value else value

    @field_validator("database_replica_url")
    @classmethod
    def _check_replica_url(cls, value: str | None) -> str | None:
        if not value:
            return None
        url = _normalise_database_url(value)
        if not url.startswith("postgresql"):
            raise ValueError("must be a postgresql://HOST/NAME URL (replicas are PostgreSQL's)")
        return url

    @model_validator(mode="after")
    def _check_replica_primary(self) -> Settings:
        if self.database_replica_url and not self.database_url.startswith("postgresql"):
            raise ValueError("database_replica_url needs a PostgreSQL database_url")
        return self

    @model_validator(mode="after")
    def _check_one_push_path(self) -> Settings:
        if self.push_service_url and self.push_relay_url:
            raise ValueError("set push_service_url or push_relay_url, not both")
        return self

    @property
    def push_configured(self) -> bool:
        """Whether a push path is set (the service's also needs `palaver push-register`)."""
        return bool(self.push_service_url or self.push_relay_url)

    @field_validator("redis_url")
    @classmethod
    def _check_redis_url(cls, value: str | None) -> str | None:
        if value and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must be a redis:// URL")
        return value or None

    @field_validator("external_url")
    @classmethod
    def _check_external_url(cls, value: str) -> str:
        # Realm URLs are built from scheme and host alone; a path would be dropped.
        return _bare_origin(value, "https://chat.example.com")

    @field_validator("user_content_url")
    @classmethod
    def _check_user_content_url(cls, value: str | None) -> str | None:
        return _bare_origin(value, "https://usercontent.example.net") if value else None

    @field_validator("push_relay_url", "push_service_url")
    @classmethod
    def _check_push_relay_url(cls, value: str | None) -> str | None:
        # "" means unset: an empty string must not switch push notifications on.
        if value:
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError("must be an http:// or https:// URL")
        return value or None

    @field_validator("smtp_url")
    @classmethod
    def _check_smtp_url(cls, value: str | None) -> str | None:
        if value:
            parse_smtp_url(value)  # raises ValueError with the reason
        return value or None

    @model_validator(mode="after")
    def _fill_derived(self) -> Settings:
        # Derived defaults depend on other settings, so they are filled after validation.
        if not self.database_url:
            object.__setattr__(self, "database_url", f"sqlite:///{self.data_dir / 'palaver.db'}")
        if not self.external_url:
            # Point clients at the address actually bound; a wildcard bind means "this host".
            host = "localhost" if self.host in ("0.0.0.0", "::", "") else self.host
            host = f"[{host}]" if ":" in host else host
            object.__setattr__(self, "external_url", f"http://{host}:{self.port}")
        if self.upload_dir is None:
            object.__setattr__(self, "upload_dir", self.data_dir / "uploads")
        return self

    @model_validator(mode="after")
    def _check_user_content_host(self) -> Settings:
        # On the external host or one of its subdomains it would be an organization's origin
        # (the very thing it exists to be apart from). After _fill_derived: external_url is set.
        if self.user_content_url:
            content = self.user_content_host or ""
            base = (urlsplit(self.external_url).hostname or "").lower()
            on_loopback = base in ("127.0.0.1", "::1", "localhost") and content.endswith(".localhost")
            if content == base or content.endswith("." + base) or on_loopback:
                raise ValueError(
                    "user_content_url must not be the external host or one of its subdomains "
                    "(those are organizations' origins); use a different domain"
                )
        return self

    @property
    def user_content_host(self) -> str | None:
        """The host name of ``user_content_url`` (lower case, IPv6 without brackets), if set."""
        if not self.user_content_url:
            return None
        return (urlsplit(self.user_content_url).hostname or "").lower() or None

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def external_host(self) -> str:
        """Host (with port when not default) that realm subdomains hang off."""
        return urlsplit(self.external_url).netloc.lower()

    @property
    def external_scheme(self) -> str:
        return urlsplit(self.external_url).scheme


def _bare_origin(value: str, example: str) -> str:
    """``value`` without a trailing slash, if it is an http(s) origin with no path."""
    if value:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL")
        _ = parts.port  # raises ValueError for a port that is not a number
        if parts.path.strip("/") or parts.query or parts.fragment:
            raise ValueError(f"must be a bare origin like {example} (no path)")
    return value.rstrip("/")


_UNPREFIXED = {"database_url": "DATABASE_URL", "redis_url": "REDIS_URL"}

# Spellings accepted, and the one stored: the engine code recognises SQLite paths by the
# plain "sqlite:///" prefix.
_DATABASE_SCHEMES = {
    "sqlite": "sqlite",
    "sqlite+pysqlite": "sqlite",
    "postgres": "postgresql+psycopg",
    "postgresql": "postgresql+psycopg",
    "postgresql+psycopg": "postgresql+psycopg",
}


def _normalise_database_url(value: str) -> str:
    scheme, sep, rest = value.partition("://")
    # Only the drivers Palaver installs: anything else (mysql, asyncpg, psycopg2, a typo)
    # would otherwise pass here and fail later with a driver traceback.
    if not sep or scheme.lower() not in _DATABASE_SCHEMES:
        raise ValueError("must be a sqlite:///PATH or postgresql://HOST/NAME URL")
    driver = _DATABASE_SCHEMES[scheme.lower()]
    if driver.startswith("sqlite") and rest.removeprefix("/") in ("", ":memory:"):
        # Every pooled connection would get its own empty in-memory database.
        raise ValueError("SQLite needs a file: sqlite:///PATH")
    if driver.startswith("postgresql") and not rest.strip("/"):
        raise ValueError("PostgreSQL URL needs a host or database: postgresql://HOST/NAME")
    return f"{driver}://{rest}"


def _from_environment(env: Mapping[str, str], sources: dict[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name in Settings.model_fields:
        if name == "auth":
            continue
        for key in (f"PALAVER_{name.upper()}", _UNPREFIXED.get(name)):
            # An empty variable counts as unset, as with `${VAR:-}` in compose files; an
            # empty PALAVER_PORT would otherwise be an error and an empty
            # PALAVER_DATA_DIR would silently mean the working directory.
            if key and env.get(key):
                values[name] = env[key]
                sources[name] = key
                break
    return values


def _from_toml(path: Path, sources: dict[str, str]) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"configuration file {path} does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"configuration file {path} is not valid TOML: {e}") from None
    except OSError as e:
        # A directory or an unreadable file is a configuration mistake, not a crash.
        raise ConfigError(f"configuration file {path} cannot be read: {e.strerror or e}") from None
    # A [palaver] table is accepted so the settings can share a file with other tools.
    section = data.get("palaver", data)
    if not isinstance(section, dict):
        raise ConfigError(f"configuration file {path}: [palaver] must be a table")
    for key in section:
        if key not in Settings.model_fields:
            raise ConfigError(f"configuration file {path}: unknown setting {key!r}")
        sources[key] = f"configuration file {path}"
    return section


def redis_namespace(database_url: str) -> str:
    """The prefix of every Redis key and channel of one database's deployment: servers of
    one database share it, deployments of different databases sharing a Redis never meet."""
    digest = hashlib.sha256(database_url.encode()).hexdigest()[:12]
    return f"palaver:{digest}:"


def describe_validation_error(error: ValidationError, sources: Mapping[str, str] | None = None) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "configuration"
    origin = (sources or {}).get(str(first["loc"][0])) if first["loc"] else None
    if first["type"] == "extra_forbidden":
        return f"unknown setting {where!r}"
    msg = first["msg"].removeprefix("Value error, ")
    return f"invalid setting {where}{f' (from {origin})' if origin else ''}: {msg}"


def load_settings(
    env: Mapping[str, str] | None = None,
    config_file: str | Path | None = None,
    **overrides: Any,
) -> Settings:
    """Build settings from defaults < TOML file < environment < explicit overrides."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    path = config_file or env.get("PALAVER_CONFIG")
    if path:
        values.update(_from_toml(Path(path), sources))
    values.update(_from_environment(env, sources))
    for name, value in overrides.items():
        if value is not None:
            values[name] = value
            sources[name] = "command line"
    try:
        # Secrets named by environment variable (auth_config.resolve_secret) read this env.
        return Settings.model_validate(values, context={"env": env})
    except ValidationError as e:
        raise ConfigError(describe_validation_error(e, sources)) from None
