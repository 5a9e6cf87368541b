"""Password hashing (argon2id) and API key generation."""

from __future__ import annotations

import secrets
import string
from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from argon2 import PasswordHasher

_API_KEY_ALPHABET = string.ascii_letters + string.digits


class Passwords:
    def __init__(self, time_cost: int, memory_cost_kib: int) -> None:
        # Settings bound both (config.py), so the hasher cannot refuse them later.
        self._time_cost = time_cost
        self._memory_cost_kib = memory_cost_kib

    @cached_property
    def _hasher(self) -> PasswordHasher:
        # argon2-cffi loads with the first password hashed or checked, not at start-up: API
        # requests authenticate by key.
        from argon2 import PasswordHasher  # noqa: PLC0415

        return PasswordHasher(time_cost=self._time_cost, memory_cost=self._memory_cost_kib, parallelism=1)

    def hash(self, password: str) -> str:
        return self._hasher.hash(password)

    def verify(self, stored: str | None, password: str) -> bool:
        if not stored:
            return False
        hasher = self._hasher
        from argon2.exceptions import InvalidHashError, VerificationError  # noqa: PLC0415

        try:
            return hasher.verify(stored, password)
        except (VerificationError, InvalidHashError):
            return False


_API_KEY_LENGTH = 32
# The largest multiple of the alphabet's size (62) that a byte can reach: bytes from here up
# are skipped, so that every character stays equally likely.
_UNBIASED_BYTES = 256 - 256 % len(_API_KEY_ALPHABET)


def has_api_key_format(key: str) -> bool:
    """Whether ``key`` could be an API key at all (32 ASCII letters and digits, as Zulip's)."""
    return len(key) == _API_KEY_LENGTH and key.isascii() and key.isalnum()


def generate_api_key() -> str:
    # One read of the system's randomness for the key rather than one per character
    # (secrets.choice), which was a fifth of creating a user.
    chars: list[str] = []
    size = len(_API_KEY_ALPHABET)
    while len(chars) < _API_KEY_LENGTH:
        chars.extend(_API_KEY_ALPHABET[b % size] for b in secrets.token_bytes(40) if b < _UNBIASED_BYTES)
    return "".join(chars[:_API_KEY_LENGTH])


def generate_password() -> str:
    return secrets.token_urlsafe(12)
