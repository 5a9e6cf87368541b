"""``palaver doctor``: check a deployment from the server's own point of view and say what to fix.

Each check prints one line, ``ok``, ``warn`` or ``FAIL``, and for the last two a ``fix:``
line. The command exits 1 when any check failed, so it fits a deployment script or a
monitoring probe. It reads the same settings as ``serve`` (``--config``, environment) and
changes nothing.
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import os
import shutil
import socket
import ssl
import stat
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from palaver.commands.common import AddCommand, settings_from_args
from palaver.config import Settings

# Below these, a disk is worth a warning: uploads and the database stop at a full disk.
LOW_DISK_BYTES = 1024**3
LOW_DISK_SHARE = 0.05
CERTIFICATE_WARNING_DAYS = 14
TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True)
class Finding:
    status: str  # "ok", "warn" or "FAIL"
    check: str
    detail: str
    fix: str = ""


def ok(check: str, detail: str) -> Finding:
    return Finding("ok", check, detail)


def warn(check: str, detail: str, fix: str) -> Finding:
    return Finding("warn", check, detail, fix)


def fail(check: str, detail: str, fix: str) -> Finding:
    return Finding("FAIL", check, detail, fix)


def _reason(error: BaseException) -> str:
    original = getattr(error, "orig", None) or getattr(error, "reason", None) or error
    lines = [line.strip() for line in str(original).splitlines() if line.strip()]
    return lines[0] if lines else type(original).__name__


# Checks ------------------------------------------------------------------------------------


def check_external_url(settings: Settings) -> Finding:
    """The server, reached the way people reach it: through ``external_url`` (and its proxy)."""
    url = settings.external_url.rstrip("/") + "/health/ready"
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as response:
            status = response.status
    except urllib.error.HTTPError as e:
        if e.code == 503:
            return fail("external URL", f"{url} answers 503: a dependency is down", "see the checks below")
        return fail(
            "external URL",
            f"{url} answers {e.code}",
            "point the proxy at `palaver serve` and forward the Host header (deploy/nginx.conf, Caddyfile)",
        )
    except (urllib.error.URLError, OSError, ValueError) as e:
        return fail(
            "external URL",
            f"{url} is unreachable from this machine: {_reason(e)}",
            "start the server (and its proxy), or set external_url to the address people use",
        )
    return ok("external URL", f"{url} answers {status}")


def _served_directly(settings: Settings) -> bool:
    """Whether ``external_url`` names this server's own listening address (no proxy)."""
    parts = urlsplit(settings.external_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if port != settings.port or parts.scheme == "https":
        return False
    host = parts.hostname or ""
    return host in (settings.host, "localhost") or (settings.host in ("0.0.0.0", "::") and _is_own(host))


def _is_own(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == socket.gethostname()


def check_proxies(settings: Settings) -> Finding:
    everyone = [p for p in settings.trusted_proxies if ipaddress.ip_network(p, strict=False).prefixlen == 0]
    if everyone:
        return fail(
            "proxy headers",
            f"trusted_proxies includes {everyone[0]}: any client can claim any address",
            "list only your proxy's address (e.g. 127.0.0.1 for an nginx on this host)",
        )
    if _served_directly(settings):
        if settings.trusted_proxies:
            return ok(
                "proxy headers", f"served directly; trusted_proxies {', '.join(settings.trusted_proxies)}"
            )
        return ok("proxy headers", "served directly (no proxy), so none are trusted")
    if not settings.trusted_proxies:
        return fail(
            "proxy headers",
            f"{settings.external_url} is served through a proxy, but trusted_proxies is empty: "
            "every person appears to come from the proxy and shares one login rate limit",
            "set trusted_proxies to the proxy's address (README: Production)",
        )
    return ok("proxy headers", f"X-Forwarded-For/-Proto believed from {', '.join(settings.trusted_proxies)}")


def check_tls(settings: Settings) -> Finding:
    parts = urlsplit(settings.external_url)
    if parts.scheme != "https":
        loopback = _is_own(parts.hostname or "")
        if loopback:
            return ok("TLS", "external_url is a loopback address (development)")
        return warn(
            "TLS",
            f"{settings.external_url} is plain HTTP: passwords and cookies cross the network in clear",
            "put a TLS proxy in front and set external_url to https:// (deploy/)",
        )
    host, port = parts.hostname or "", parts.port or 443
    try:
        context = ssl.create_default_context()
        with (
            socket.create_connection((host, port), timeout=TIMEOUT_SECONDS) as raw,
            context.wrap_socket(raw, server_hostname=host) as tls,
        ):
            certificate = tls.getpeercert() or {}
    except (OSError, ssl.SSLError) as e:
        return fail("TLS", f"{host}:{port}: {_reason(e)}", "install a valid certificate for the domain")
    expires = datetime.datetime.fromtimestamp(
        ssl.cert_time_to_seconds(str(certificate["notAfter"])), tz=datetime.UTC
    )
    days = (expires - datetime.datetime.now(datetime.UTC)).days
    if days < CERTIFICATE_WARNING_DAYS:
        return warn("TLS", f"the certificate of {host} expires in {days} days", "renew it (certbot renew)")
    return ok("TLS", f"certificate of {host} valid for {days} more days")


def check_smtp(settings: Settings) -> Finding:
    from palaver.lib.email.transport import SmtpTransport, outbox_dir
    from palaver.smtp_url import parse_smtp_url

    if not settings.smtp_url:
        return warn(
            "SMTP",
            f"no smtp_url: emails are written to {outbox_dir(settings)} instead of being sent",
            "set smtp_url (README: Email and invitations) so invitations and password resets arrive",
        )
    target = parse_smtp_url(settings.smtp_url)
    transport = SmtpTransport(target)
    where = f"{target.host}:{target.port}"
    try:
        transport.check()
    except Exception as e:
        return fail("SMTP", f"{where}: {_reason(e)}", "check smtp_url's host, port, TLS option and login")
    return ok("SMTP", f"{where} accepts a{' logged-in' if target.username else 'n'} session")


def check_redis(settings: Settings) -> Finding:
    from palaver.lib.dependencies import check_redis as ping
    from palaver.lib.dependencies import describe_address

    if not settings.redis_url:
        if settings.workers > 1:
            return fail("Redis", "workers above 1 without redis_url", "set redis_url")
        return ok("Redis", "not used (one process; events stay in memory)")
    try:
        ping(settings.redis_url, timeout=TIMEOUT_SECONDS)
    except Exception as e:
        return fail(
            "Redis", f"{describe_address(settings.redis_url)}: {_reason(e)}", "start Redis or fix redis_url"
        )
    return ok("Redis", f"{describe_address(settings.redis_url)} answers")


def check_database(settings: Settings) -> Finding:
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from sqlalchemy import create_engine, text

    from palaver.lib.dependencies import describe_address
    from palaver.migrate import alembic_config

    name = "SQLite" if settings.is_sqlite else "PostgreSQL"
    where = (
        settings.database_url.removeprefix("sqlite:///")
        if settings.is_sqlite
        else describe_address(settings.database_url)
    )
    if settings.is_sqlite and not Path(where).is_file():
        return fail(
            "database", f"no SQLite database at {where}", "run `palaver migrate` (or `palaver serve`)"
        )
    connect_args = {} if settings.is_sqlite else {"connect_timeout": int(TIMEOUT_SECONDS)}
    engine = create_engine(settings.database_url, connect_args=connect_args)
    try:
        with engine.connect() as conn:
            version = conn.scalar(
                text("SELECT sqlite_version()" if settings.is_sqlite else "SHOW server_version")
            )
            current = set(MigrationContext.configure(conn).get_current_heads())
    except Exception as e:
        return fail("database", f"{name} at {where}: {_reason(e)}", "start the database or fix database_url")
    finally:
        engine.dispose()
    heads = set(ScriptDirectory.from_config(alembic_config()).get_heads())
    if current != heads:
        return fail("database", f"{name} {version} at {where}: migrations pending", "run `palaver migrate`")
    return ok("database", f"{name} {version} at {where}, schema up to date")


def _directories(settings: Settings) -> list[tuple[str, Path]]:
    found = [("data_dir", settings.data_dir)]
    if settings.upload_dir is not None and not settings.s3_bucket:
        found.append(("upload_dir", settings.upload_dir))
    return found


def check_disk(settings: Settings) -> list[Finding]:
    findings = []
    for name, directory in _directories(settings):
        if not directory.exists():
            findings.append(
                warn("disk", f"{name} {directory} does not exist yet", "`palaver serve` makes it")
            )
            continue
        usage = shutil.disk_usage(directory)
        free = f"{usage.free / 1024**3:.1f} GiB free of {usage.total / 1024**3:.1f} GiB"
        if usage.free < LOW_DISK_BYTES or usage.free < usage.total * LOW_DISK_SHARE:
            findings.append(
                warn(
                    "disk",
                    f"{name} {directory}: only {free}",
                    "make room: a full disk stops uploads and messages (they answer 507)",
                )
            )
        else:
            findings.append(ok("disk", f"{name} {directory}: {free}"))
    return findings


def check_permissions(settings: Settings, config_file: Path | None) -> list[Finding]:
    findings = []
    private: list[tuple[str, Path]] = list(_directories(settings))
    if settings.is_sqlite:
        private.append(("database", Path(settings.database_url.removeprefix("sqlite:///"))))
    if config_file is not None:
        private.append(("configuration", config_file))
    for name, path in private:
        try:
            mode = path.stat().st_mode
        except OSError:
            continue
        if mode & stat.S_IWOTH:
            findings.append(
                fail("permissions", f"{name} {path} is writable by everyone", f"chmod o-w {path}")
            )
        elif mode & (stat.S_IROTH | stat.S_IXOTH):
            findings.append(
                warn(
                    "permissions",
                    f"{name} {path} is readable by every user of this machine",
                    f"chmod o-rwx {path} (it holds messages, uploads or credentials)",
                )
            )
    if os.geteuid() == 0:
        findings.append(
            warn(
                "permissions",
                "running as root",
                "run Palaver as an unprivileged user (deploy/palaver.service)",
            )
        )
    if not findings:
        findings.append(ok("permissions", "data, uploads and configuration are private to their owner"))
    return findings


def run_checks(settings: Settings, config_file: Path | None) -> list[Finding]:
    single: list[Callable[[Settings], Finding]] = [
        check_database,
        check_redis,
        check_external_url,
        check_proxies,
        check_tls,
        check_smtp,
    ]
    findings = [check(settings) for check in single]
    findings += check_disk(settings)
    findings += check_permissions(settings, config_file)
    return findings


def cmd_doctor(args: argparse.Namespace) -> None:
    settings = settings_from_args(args)
    given = getattr(args, "config", None) or os.environ.get("PALAVER_CONFIG")
    findings = run_checks(settings, Path(given) if given else None)
    for finding in findings:
        print(f"{finding.status:<5} {finding.check}: {finding.detail}")
        if finding.fix:
            print(f"      fix: {finding.fix}")
    failed = sum(f.status == "FAIL" for f in findings)
    warned = sum(f.status == "warn" for f in findings)
    print(f"{failed} failed, {warned} to look at, {len(findings) - failed - warned} fine")
    if failed:
        raise SystemExit(1)


def register(add: AddCommand) -> None:
    add(
        "doctor",
        cmd_doctor,
        "check this deployment (database, Redis, URL, proxy, TLS, SMTP, disk, permissions)",
    )
