"""Password hashing (argon2id) and API key generation."""

from __future__ import annotations

import secrets
import string

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

_API_KEY_ALPHABET = string.ascii_letters + string.digits


class Passwords:
    def __init__(self, time_cost: int, memory_cost_kib: int) -> None:
        self._hasher = PasswordHasher(time_cost=time_cost, memory_cost=memory_cost_kib, parallelism=1)

    def hash(self, password: str) -> str:
        return self._hasher.hash(password)

    def verify(self, stored: str | None, password: str) -> bool:
        if not stored:
            return False
        try:
            return self._hasher.verify(stored, password)
        except (VerificationError, InvalidHashError):
            return False


def generate_api_key() -> str:
    return "".join(secrets.choice(_API_KEY_ALPHABET) for _ in range(32))


def generate_password() -> str:
    return secrets.token_urlsafe(12)
