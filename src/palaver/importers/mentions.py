"""Plain-text mentions as Mattermost and Rocket.Chat write them (``@username``, a channel
sigil before its name, ``@all``/``@here``), turned into Palaver's mention syntax."""

from __future__ import annotations

import re
from collections.abc import Mapping

_MENTION = re.compile(r"(?<![\w@])@([a-z0-9][a-z0-9._-]*)", re.IGNORECASE)


class PlainMentions:
    """``@username`` -> ``@**Full Name**``; ``<sigil>name`` -> ``#**Channel**``; wildcards."""

    def __init__(
        self,
        names: Mapping[str, str],
        channels: Mapping[str, str],
        *,
        sigil: str,
        wildcards: Mapping[str, str],
    ) -> None:
        self.names, self.channels, self.wildcards = names, channels, wildcards
        mark = re.escape(sigil)
        self._channel = re.compile(rf"(?<![\w{mark}&])" + mark + r"([a-z0-9][a-z0-9._-]*)", re.IGNORECASE)

    def convert(self, text: str) -> str:
        return self._channel.sub(self._link, _MENTION.sub(self._mention, text))

    def _mention(self, match: re.Match[str]) -> str:
        word = match.group(1)
        if word.lower() in self.wildcards:
            return f"@**{self.wildcards[word.lower()]}**"
        name = self.names.get(word)
        return f"@**{name}**" if name else match.group(0)

    def _link(self, match: re.Match[str]) -> str:
        name = self.channels.get(match.group(1))
        return f"#**{name}**" if name else match.group(0)
