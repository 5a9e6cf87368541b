"""Unicode emoji names and codes, derived from the ``emoji`` package's data.

Zulip names emoji in snake_case ("thumbs_up", "+1", "tada") and identifies them by a code
of lower-case hex codepoints joined with "-" ("1f44d", "1f1fa-1f1f8"), without the FE0F
presentation selector. The package gives each emoji a CLDR name ("party_popper") and,
for many, the GitHub-style short names clients actually type ("tada", "+1"); both become
names here. The handful of names only Zulip uses are mapped onto the package's emoji
below, so the table itself is never typed by hand.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache

UNICODE_EMOJI = "unicode_emoji"
REALM_EMOJI = "realm_emoji"
ZULIP_EXTRA_EMOJI = "zulip_extra_emoji"
REACTION_TYPES = (UNICODE_EMOJI, REALM_EMOJI, ZULIP_EXTRA_EMOJI)

# Zulip's own emoji outside Unicode: its name doubles as its code.
ZULIP_EXTRA_EMOJI_NAMES = frozenset({"zulip"})

# Names Zulip clients send that no package name provides, keyed to a package (CLDR) name.
_ZULIP_ALIASES: Mapping[str, str] = {
    "slight_smile": "slightly_smiling_face",
    "working_on_it": "hammer_and_wrench",
    "check": "check_mark_button",
    "like": "thumbs_up",
    "upside_down": "upside_down_face",
    "lol": "grinning_squinting_face",
    "thank_you": "folded_hands",
    "heart_eyes": "smiling_face_with_heart_eyes",
    "cry": "crying_face",
    "thinking": "thinking_face",
}

# Where Zulip's preferred display name differs from the package's first short name.
_PREFERRED_NAMES: Mapping[str, str] = {
    "thumbs_up": "+1",
    "thumbs_down": "-1",
    "slightly_smiling_face": "slight_smile",
    "check_mark_button": "check",
}

# Skin-tone variants are not separate emoji in Zulip's table.
_SKIN_TONES = frozenset(range(0x1F3FB, 0x1F400))
_VALID_NAME = re.compile(r"[a-z0-9+\-][a-z0-9_+\-]*")
_DROPPED_CHARS = str.maketrans("", "", "\u201c\u201d\u2019'.,!()")


def code_for_sequence(chars: str) -> str:
    """The Zulip code of an emoji's characters: hex codepoints, FE0F dropped."""
    return "-".join(f"{ord(c):04x}" for c in chars if c != "\ufe0f")


def _zulip_name(package_name: str) -> str | None:
    """A package name as a Zulip-style name (accents and quotes dropped), or None if lossy."""
    name = unicodedata.normalize("NFKD", package_name.strip(":"))
    name = "".join(c for c in name if not unicodedata.combining(c))
    name = name.translate(_DROPPED_CHARS).lower().replace(" ", "_").replace("&", "and")
    # CLDR writes some names with inner hyphens ("upside-down_face"); Zulip never does.
    name = re.sub(r"(?<=[a-z0-9])-(?=[a-z0-9])", "_", name)
    return name if _VALID_NAME.fullmatch(name) else None


@dataclass(frozen=True)
class EmojiTable:
    name_to_code: Mapping[str, str]
    code_to_name: Mapping[str, str]
    # Fully-qualified character sequences, as they appear in message text.
    sequence_to_code: Mapping[str, str]


@cache
def emoji_table() -> EmojiTable:
    # The package's data (~3 MB) loads with the first emoji looked up, not at start-up.
    import emoji as emoji_package  # noqa: PLC0415

    fully_qualified = emoji_package.STATUS["fully_qualified"]
    name_to_code: dict[str, str] = {}
    code_to_name: dict[str, str] = {}
    sequence_to_code: dict[str, str] = {}
    cldr: dict[str, str] = {}
    short_names: list[tuple[str, str]] = []
    for chars, data in emoji_package.EMOJI_DATA.items():
        if any(ord(c) in _SKIN_TONES for c in chars):
            continue
        code = code_for_sequence(chars)
        if data.get("status") == fully_qualified:
            sequence_to_code[chars] = code
        name = _zulip_name(data["en"])
        if name is not None:
            cldr.setdefault(name, code)
        for alias in data.get("alias", ()):
            alias_name = _zulip_name(alias)
            if alias_name is not None:
                short_names.append((alias_name, code))
    # CLDR names win over short names that happen to collide with them.
    name_to_code.update(cldr)
    for name, code in short_names:
        name_to_code.setdefault(name, code)
    for alias, target in _ZULIP_ALIASES.items():
        if target in cldr:
            name_to_code.setdefault(alias, cldr[target])
    # A code's display name must lead back to it; the first short name is the one people
    # know ("smile", "tada", "joy"), then the CLDR name.
    for name, code in short_names:
        if name_to_code[name] == code:
            code_to_name.setdefault(code, name)
    for name, code in cldr.items():
        code_to_name.setdefault(code, name)
    for cldr_name, preferred in _PREFERRED_NAMES.items():
        if cldr_name in cldr and name_to_code.get(preferred) == cldr[cldr_name]:
            code_to_name[cldr[cldr_name]] = preferred
    return EmojiTable(name_to_code, code_to_name, sequence_to_code)


def emoji_code_for_name(name: str) -> str | None:
    return emoji_table().name_to_code.get(name)


def emoji_name_for_code(code: str) -> str | None:
    """The display name of a Unicode emoji code."""
    return emoji_table().code_to_name.get(code)


def is_valid_emoji_name(name: str) -> bool:
    return name in emoji_table().name_to_code


def is_valid_emoji_code(code: str) -> bool:
    return code in emoji_table().code_to_name


def all_emoji_names() -> Iterable[str]:
    return emoji_table().name_to_code.keys()


@cache
def _lengths_by_first_char() -> Mapping[str, tuple[int, ...]]:
    lengths: dict[str, set[int]] = {}
    for sequence in emoji_table().sequence_to_code:
        lengths.setdefault(sequence[0], set()).add(len(sequence))
    return {c: tuple(sorted(ls, reverse=True)) for c, ls in lengths.items()}


def find_emoji_sequences(text: str) -> list[tuple[int, int, str]]:
    """(start, end, code) of each fully-qualified emoji in ``text``, longest match first.

    Dictionary look-ups by first character: one regex alternating ~2000 sequences costs
    over 100 µs even on short text, more than rendering the rest of a message.
    """
    if text.isascii():
        return []
    table = emoji_table().sequence_to_code
    lengths = _lengths_by_first_char()
    found: list[tuple[int, int, str]] = []
    i, n = 0, len(text)
    while i < n:
        for length in lengths.get(text[i], ()):
            code = table.get(text[i : i + length])
            if code is not None:
                found.append((i, i + length, code))
                i += length
                break
        else:
            i += 1
    return found
