"""Identifiers derived from a text (access keys, role IDs, session names): stable across runs."""

from __future__ import annotations

import hashlib
import string


def digest(text: str, length: int) -> str:
    """Upper-case letters and digits derived from ``text``: stable across runs, distinct per input."""
    alphabet = string.ascii_uppercase + "234567"
    number = int.from_bytes(hashlib.sha256(text.encode()).digest(), "big")
    characters = []
    for _ in range(length):
        number, index = divmod(number, len(alphabet))
        characters.append(alphabet[index])
    return "".join(characters)
