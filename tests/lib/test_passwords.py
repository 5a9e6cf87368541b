"""API keys: 32 characters of letters and digits, each character as likely as any other."""

from __future__ import annotations

import string
from collections import Counter

from palaver.lib.passwords import generate_api_key


def test_api_keys_are_32_letters_and_digits_all_equally_likely() -> None:
    keys = [generate_api_key() for _ in range(20_000)]
    assert len(set(keys)) == len(keys)
    alphabet = set(string.ascii_letters + string.digits)
    assert all(len(key) == 32 and set(key) <= alphabet for key in keys)
    counts = Counter("".join(keys))
    # 640,000 characters: ~10,323 each (standard deviation ~100, so chance keeps the most
    # and least frequent within ~7 % of each other); bytes taken modulo 62 without skipping
    # the top ones would give the first eight characters 25 % more.
    assert set(counts) == alphabet
    assert max(counts.values()) < 1.15 * min(counts.values())
