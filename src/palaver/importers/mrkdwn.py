"""Slack's mrkdwn to Palaver Markdown.

Code spans and blocks are left as they are; elsewhere ``<…>`` tokens (user mentions,
channel links, wildcards, links) are resolved first and held aside, so the emphasis
rules (``*bold*``, ``_italic_``, ``~strike~``) never reach into URLs or names.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping

_CODE = re.compile(r"```.*?```|`[^`\n]+`", re.DOTALL)
_TOKEN = re.compile(r"<([^<>\n]+)>")
_BOLD = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_ITALIC = re.compile(r"(?<![\w_])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w_])")
_STRIKE = re.compile(r"(?<![\w~])~(?=\S)([^~\n]+?)(?<=\S)~(?![\w~])")
_BULLET = re.compile(r"^(\s*)[•◦▪]\s+", re.MULTILINE)
_HELD = re.compile("\x00(\\d+)\x00")
# Slack's wildcard mentions and the Palaver ones they become.
WILDCARDS = {"channel": "channel", "everyone": "everyone", "here": "all", "group": "channel"}


class Resolver:
    """What tokens point at: user names and channel names by Slack ID."""

    def __init__(self, user_name: Callable[[str], str | None], channel_name: Mapping[str, str]) -> None:
        self.user_name = user_name
        self.channel_name = channel_name


def convert(text: str, resolver: Resolver) -> str:
    out: list[str] = []
    last = 0
    for match in _CODE.finditer(text):
        out.append(_convert_prose(text[last : match.start()], resolver))
        out.append(html.unescape(match.group(0)))
        last = match.end()
    out.append(_convert_prose(text[last:], resolver))
    return "".join(out)


def _convert_prose(text: str, resolver: Resolver) -> str:
    held: list[str] = []

    def hold(value: str) -> str:
        held.append(value)
        return f"\x00{len(held) - 1}\x00"

    text = _TOKEN.sub(lambda m: hold(_token(m.group(1), resolver)), text)
    text = _BOLD.sub(r"**\1**", text)
    text = _ITALIC.sub(r"*\1*", text)
    text = _STRIKE.sub(r"~~\1~~", text)
    text = _BULLET.sub(r"\1* ", text)
    text = html.unescape(text)
    return _HELD.sub(lambda m: held[int(m.group(1))], text)


def _token(body: str, resolver: Resolver) -> str:
    target, _, label = body.partition("|")
    label = html.unescape(label)
    if target.startswith("@"):
        name = resolver.user_name(target[1:])
        if name is None:
            return f"@{label or target[1:]}"
        return f"@**{name}**"
    if target.startswith("#"):
        name = resolver.channel_name.get(target[1:]) or label
        return f"#**{name}**" if name else f"#{target[1:]}"
    if target.startswith("!"):
        command = target[1:]
        if command in WILDCARDS:
            return f"@**{WILDCARDS[command]}**"
        if command.startswith("subteam^"):
            return label or "@group"
        if command.startswith("date^"):
            return label or command
        return label or command
    url = html.unescape(target)
    if label and label != url:
        return f"[{label}]({url})"
    return url.removeprefix("mailto:") if url.startswith("mailto:") else url
