"""The emoji name table: names clients send, codes Zulip uses, and emoji found in text."""

from __future__ import annotations

import re

import pytest

from palaver.lib.emoji import (
    all_emoji_names,
    code_for_sequence,
    emoji_code_for_name,
    emoji_name_for_code,
    emoji_table,
    find_emoji_sequences,
    is_valid_emoji_code,
    is_valid_emoji_name,
)


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("smile", "1f604"),
        ("+1", "1f44d"),
        ("thumbs_up", "1f44d"),
        ("like", "1f44d"),
        ("-1", "1f44e"),
        ("thumbs_down", "1f44e"),
        ("heart", "2764"),
        ("tada", "1f389"),
        ("octopus", "1f419"),
        ("joy", "1f602"),
        ("grinning", "1f600"),
        ("slight_smile", "1f642"),
        ("working_on_it", "1f6e0"),
        ("check", "2705"),
        ("100", "1f4af"),
        ("upside_down", "1f643"),
        ("hash", "0023-20e3"),
        ("family_man_woman_girl", "1f468-200d-1f469-200d-1f467"),
    ],
)
def test_names_map_to_zulip_codes(name: str, code: str) -> None:
    assert emoji_code_for_name(name) == code
    assert is_valid_emoji_name(name)
    assert is_valid_emoji_code(code)


@pytest.mark.parametrize(
    ("code", "name"),
    [("1f604", "smile"), ("1f44d", "+1"), ("1f44e", "-1"), ("2764", "heart"), ("1f389", "tada")],
)
def test_codes_have_the_names_clients_know(code: str, name: str) -> None:
    assert emoji_name_for_code(code) == name


def test_unknown_names_and_codes_are_invalid() -> None:
    for name in ("", "nosuchemoji", "Smile", ":smile:", "thumbs up"):
        assert not is_valid_emoji_name(name)
        assert emoji_code_for_name(name) is None
    for code in ("", "zzzz", "1F604", "1f604-fe0f", "1f44d-1f3fd"):
        assert not is_valid_emoji_code(code)
        assert emoji_name_for_code(code) is None


def test_every_name_is_zulip_style_and_every_code_round_trips() -> None:
    names = list(all_emoji_names())
    assert len(names) > 2000
    for name in names:
        assert re.fullmatch(r"[a-z0-9+\-][a-z0-9_+\-]*", name), name
        code = emoji_code_for_name(name)
        assert code is not None and re.fullmatch(r"[0-9a-f]{4,5}(-[0-9a-f]{4,5})*", code), code
        assert emoji_code_for_name(emoji_name_for_code(code) or "") == code


def test_codes_drop_the_presentation_selector_and_skin_tones_are_left_out() -> None:
    assert code_for_sequence("\u2764\ufe0f") == "2764"
    assert all("fe0f" not in code for code in emoji_table().code_to_name)
    assert all(not re.search(r"1f3f[b-f]", code) for code in emoji_table().code_to_name)


def test_find_emoji_sequences() -> None:
    text = "ok 😄 and ❤️ but not ❤ or 1 or ↔, flags 🇺🇸 family 👨\u200d👩\u200d👧!"
    found = [(text[s:e], code) for s, e, code in find_emoji_sequences(text)]
    assert found == [
        ("😄", "1f604"),
        ("❤\ufe0f", "2764"),
        ("🇺🇸", "1f1fa-1f1f8"),
        ("👨\u200d👩\u200d👧", "1f468-200d-1f469-200d-1f467"),
    ]
    assert find_emoji_sequences("plain ascii :smile:") == []
