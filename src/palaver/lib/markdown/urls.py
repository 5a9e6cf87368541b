"""URLs: channel narrow links, RFC 6570 URL templates, linkifier matches and a topic's links."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from urllib.parse import quote, urlsplit

from palaver.lib.linkifier_regex import LinkifierPatternError, compile_linkifier
from palaver.lib.markdown.contract import LinkifierRef, StreamRef
from palaver.lib.markdown.syntax import UNBALANCED_TRAILERS

# -- URLs --------------------------------------------------------------------------------


def encode_hash_component(text: str) -> str:
    """Zulip's narrow-URL encoding: percent-encoding with "." in place of "%"."""
    return quote(text, safe="").replace(".", "%2E").replace("%", ".")


def channel_narrow_url(stream: StreamRef) -> str:
    return f"/#narrow/channel/{stream.id}-{encode_hash_component(stream.name.replace(' ', '-'))}"


# RFC 6570 operators: (prefix, separator, named, value when empty, allows reserved chars)
_TEMPLATE_OPERATORS: Mapping[str, tuple[str, str, bool, str, bool]] = {
    "": ("", ",", False, "", False),
    "+": ("", ",", False, "", True),
    "#": ("#", ",", False, "", True),
    ".": (".", ".", False, "", False),
    "/": ("/", "/", False, "", False),
    ";": (";", ";", True, "", False),
    "?": ("?", "&", True, "=", False),
    "&": ("&", "&", True, "=", False),
}
_TEMPLATE_EXPRESSION = re.compile(r"\{([+#./;?&]?)([A-Za-z0-9_.,%]+)\}")
_PCT_TRIPLET = re.compile(r"%[0-9A-Fa-f]{2}")
_RESERVED = ":/?#[]@!$&'()*+,;="


def _encode_reserved(value: str) -> str:
    # Reserved expansion keeps reserved characters and existing %XX triplets as they are.
    pieces: list[str] = []
    last = 0
    for match in _PCT_TRIPLET.finditer(value):
        pieces.append(quote(value[last : match.start()], safe=_RESERVED))
        pieces.append(match.group(0))
        last = match.end()
    pieces.append(quote(value[last:], safe=_RESERVED))
    return "".join(pieces)


def expand_url_template(template: str, values: Mapping[str, str | None]) -> str:
    """Expand an RFC 6570 (levels 1-3) template; undefined variables expand to nothing."""

    def expand(match: re.Match[str]) -> str:
        prefix, separator, named, if_empty, reserved = _TEMPLATE_OPERATORS[match.group(1)]
        parts: list[str] = []
        for name in match.group(2).split(","):
            value = values.get(name)
            if value is None:
                continue
            encoded = _encode_reserved(value) if reserved else quote(value, safe="")
            if named:
                encoded = f"{name}={encoded}" if encoded else name + if_empty
            parts.append(encoded)
        return prefix + separator.join(parts) if parts else ""

    return _TEMPLATE_EXPRESSION.sub(expand, template)


def linkifier_matches(text: str, linkifiers: Sequence[LinkifierRef]) -> list[tuple[int, int, str]]:
    """Non-overlapping (start, end, url) matches; earlier linkifiers win ties."""
    found: list[tuple[int, int, int, str]] = []
    for order, linkifier in enumerate(linkifiers):
        try:
            compiled = compile_linkifier(linkifier.pattern)
        except LinkifierPatternError:
            continue  # saved before patterns were checked with RE2: it links nothing
        for start, end, values in compiled.finditer(text):
            found.append((start, order, end, expand_url_template(linkifier.url_template, values)))
    found.sort()
    chosen: list[tuple[int, int, str]] = []
    end_of_last = -1
    for start, _order, end, url in found:
        if start >= end_of_last:
            chosen.append((start, end, url))
            end_of_last = end
    return chosen


def file_name(href: str) -> str:
    """The last path segment of a link: the file name an upload's title shows."""
    return urlsplit(href).path.rsplit("/", 1)[-1]


def trim_url(url: str) -> str:
    """Drop trailing punctuation that ends the sentence rather than the URL."""
    while url:
        last = url[-1]
        if last in UNBALANCED_TRAILERS or (last == ")" and url.count("(") < url.count(")")):
            url = url[:-1]
        else:
            break
    return url


_TOPIC_URL = re.compile(r"(?<![^\s'\"(,:<])(?:https?|ftp)://[^\s<>\"]+", re.IGNORECASE)


def topic_links(topic: str, linkifiers: Sequence[LinkifierRef]) -> list[dict[str, str]]:
    """Links for a topic name: linkifier matches and bare URLs, in order of position."""
    spans = [(start, end, url) for start, end, url in linkifier_matches(topic, linkifiers)]
    for match in _TOPIC_URL.finditer(topic):
        url = trim_url(match.group(0))
        if "://" in url and len(url) > url.index("://") + 3:
            start = match.start()
            spans.append((start, start + len(url), url))
    spans.sort(key=lambda s: s[0])
    result: list[dict[str, str]] = []
    end_of_last = -1
    for start, end, url in spans:
        if start >= end_of_last:
            result.append({"text": topic[start:end], "url": url})
            end_of_last = end
    return result
