"""Building an email from its templates: subject, plain-text and HTML parts, headers.

Each email ``name`` has three templates in ``templates/email/``: ``name.subject.txt``,
``name.txt`` and ``name.html`` (autoescaped). They are rendered with the outbox row's
context plus ``realm_name``, ``realm_url`` and ``external_url``, so links always use the
server's current address.
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from palaver.config import Settings
from palaver.lib.i18n import install

if TYPE_CHECKING:
    from jinja2 import Environment


@lru_cache(maxsize=1)
def _environment() -> Environment:
    # Jinja2 (~2 MB) loads with the first page or email rendered, not at start-up.
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape  # noqa: PLC0415

    environment = Environment(
        loader=PackageLoader("palaver", "templates"),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    install(environment)
    return environment


def server_domain(settings: Settings) -> str:
    return urlsplit(settings.external_url).hostname or "localhost"


def noreply_address(settings: Settings) -> str:
    return settings.noreply_email or f"noreply@{server_domain(settings)}"


def render_parts(name: str, context: dict[str, Any]) -> tuple[str, str, str]:
    env = _environment()
    subject = env.get_template(f"email/{name}.subject.txt").render(context)
    text = env.get_template(f"email/{name}.txt").render(context)
    html = env.get_template(f"email/{name}.html").render(context)
    # Header values are one line; templates end with a newline.
    return " ".join(subject.split()), text, html


def build_email(
    settings: Settings,
    *,
    to: str,
    template: str,
    context: dict[str, Any],
    now: datetime,
    from_name: str | None = None,
    reply_to: str | None = None,
) -> EmailMessage:
    subject, text, html = render_parts(template, context)
    message = EmailMessage()
    sender = noreply_address(settings)
    local, _, domain = sender.partition("@")
    message["From"] = Address(display_name=from_name or "Palaver", username=local, domain=domain)
    message["To"] = to
    message["Subject"] = subject
    message["Reply-To"] = reply_to or sender
    message["Date"] = format_datetime(now if now.tzinfo else now.replace(tzinfo=UTC))
    message["Message-ID"] = make_msgid(domain=server_domain(settings))
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(text)
    message.add_alternative(html, subtype="html")
    return message
