"""``smtp_url``: where outgoing mail goes, as one URL.

    smtp://host:port                   plain SMTP (port 25 by default)
    smtp://host:587?starttls=true      upgrade with STARTTLS before sending
    smtps://user:password@host:465     SMTP over TLS from the first byte

User and password (percent-encoded) log in when present.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class SmtpTarget:
    host: str
    port: int
    use_tls: bool
    starttls: bool
    username: str | None
    password: str | None
    timeout: float = 30.0


def parse_smtp_url(url: str) -> SmtpTarget:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("smtp", "smtps"):
        raise ValueError("must be an smtp:// or smtps:// URL")
    if not parts.hostname:
        raise ValueError("smtp_url needs a host")
    try:
        port = parts.port
    except ValueError:
        raise ValueError("smtp_url has an invalid port") from None
    query = parse_qs(parts.query)
    starttls = False
    for value in query.get("starttls", []):
        if value.lower() in _TRUE:
            starttls = True
        elif value.lower() not in _FALSE:
            raise ValueError("starttls must be true or false")
    unknown = set(query) - {"starttls", "timeout"}
    if unknown:
        raise ValueError(f"unknown smtp_url option {sorted(unknown)[0]!r}")
    timeout = 30.0
    if "timeout" in query:
        try:
            timeout = float(query["timeout"][0])
        except ValueError:
            raise ValueError("timeout must be a number of seconds") from None
    use_tls = scheme == "smtps"
    if use_tls and starttls:
        raise ValueError("smtps:// is already encrypted; starttls applies to smtp:// only")
    return SmtpTarget(
        host=parts.hostname,
        port=port or (465 if use_tls else 25),
        use_tls=use_tls,
        starttls=starttls,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password is not None else None,
        timeout=timeout,
    )
