"""Reading an incoming email: its addresses, text, quoted reply and attachments.

Mail clients send text/plain, HTML, or both; HTML-only mail is converted to text. Replies
quote the email they answer below (or, rarely, above) the new text, introduced by a line
such as "On <date>, <person> wrote:"; that quote, ">"-prefixed lines and a "-- " signature
are dropped so that only what the person wrote becomes the message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import getaddresses
from html.parser import HTMLParser

MM_ADDRESS = re.compile(r"^mm([0-9a-f]{32})$")
CHANNEL_TOKEN = re.compile(r"^[0-9a-f]{32}$")

_QUOTE_HEADERS = [
    re.compile(r"^On .{0,300}wrote:\s*$", re.IGNORECASE),
    re.compile(r"^-{2,}\s*Original Message\s*-{2,}\s*$", re.IGNORECASE),
    re.compile(r"^_{5,}\s*$"),
    re.compile(r"^From: .+$"),
]


@dataclass
class Attachment:
    filename: str
    content_type: str
    data: bytes


@dataclass
class IncomingEmail:
    subject: str
    from_address: str
    text: str
    attachments: list[Attachment] = field(default_factory=list)


class _TextExtractor(HTMLParser):
    _BLOCKS = frozenset(
        {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre"}
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0
        self._href: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "head", "title"):
            self._skip += 1
        elif tag in self._BLOCKS:
            self.parts.append("\n")
            if tag == "li":
                self.parts.append("* ")
        elif tag == "a":
            self._href.append(dict(attrs).get("href"))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "head", "title"):
            self._skip = max(self._skip - 1, 0)
        elif tag in ("p", "div", "blockquote", "pre", "tr") or (tag.startswith("h") and tag[1:].isdigit()):
            self.parts.append("\n")
        elif tag == "a" and self._href:
            href = self._href.pop()
            if href and href.startswith(("http://", "https://", "mailto:")):
                self.parts.append(f" ({href})")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(re.sub(r"\s+", " ", data))


def html_to_text(html: str) -> str:
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = [line.strip() for line in "".join(parser.parts).splitlines()]
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def strip_quoted_reply(text: str) -> str:
    lines = text.replace("\r\n", "\n").split("\n")
    kept: list[str] = []
    for line in lines:
        if line.rstrip() == "--":
            break  # the signature ("-- ") and all after it
        if any(p.match(line.strip()) for p in _QUOTE_HEADERS) and kept:
            break
        if line.lstrip().startswith(">"):
            continue
        kept.append(line)
    result = "\n".join(kept).strip()
    # A reply written only above an unrecognised quote still reads well; an email that was
    # nothing but quote keeps its text rather than becoming empty.
    return result or text.strip()


def _body_text(message: EmailMessage) -> str:
    plain = message.get_body(preferencelist=("plain",))
    if plain is not None:
        return str(plain.get_content())
    html = message.get_body(preferencelist=("html",))
    if html is not None:
        return html_to_text(str(html.get_content()))
    return ""


def _attachments(message: EmailMessage) -> list[Attachment]:
    found = []
    for part in message.iter_attachments():
        filename = part.get_filename()
        if not filename:
            continue
        data = part.get_payload(decode=True)
        if isinstance(data, bytes):
            found.append(Attachment(filename, part.get_content_type(), data))
    return found


def parse_email(raw: bytes) -> IncomingEmail:
    message = BytesParser(policy=policy.default).parsebytes(raw)
    assert isinstance(message, EmailMessage)
    senders = getaddresses([str(message.get("From", ""))])
    return IncomingEmail(
        subject=" ".join(str(message.get("Subject", "")).split()),
        from_address=senders[0][1] if senders else "",
        text=_body_text(message),
        attachments=_attachments(message),
    )


def recipient_addresses(raw: bytes) -> list[str]:
    """Where a piped message was delivered: the headers mail servers add, then To and Cc."""
    message = BytesParser(policy=policy.default).parsebytes(raw, headersonly=True)
    for header in ("X-Original-To", "Delivered-To", "Envelope-To"):
        if message.get(header):
            return [addr for _, addr in getaddresses([str(message[header])]) if addr]
    values = [str(v) for h in ("To", "Cc") for v in message.get_all(h, [])]
    return [addr for _, addr in getaddresses(values) if addr]


def topic_from_subject(subject: str) -> str:
    topic = re.sub(r"^((re|fwd?|aw|sv)\s*:\s*)+", "", subject, flags=re.IGNORECASE).strip()
    return topic or "(no topic)"
