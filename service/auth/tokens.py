"""API key tokens: ``omtl_<id>_<secret>`` (docs/architecture.md, "Authentication and roles").

The id (12 hex digits) is public: it names the key in listings and lets the
server find the record with one lookup. The secret is 32 random bytes
(``secrets.token_urlsafe``). Redis holds only the SHA-256 of the whole token;
a presented token is hashed and compared with :func:`hmac.compare_digest`. A
plain hash suffices (no slow password hash) because the secret has 256 bits of
entropy: there is nothing to guess.

>>> token = new_token()
>>> key_id = token_id(token)
>>> len(key_id), token.startswith(f"omtl_{key_id}_")
(12, True)
>>> matches(token, hash_token(token)), matches(token + "x", hash_token(token))
(True, False)
>>> token_id("not-a-key") is None
True
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

__all__ = ["hash_token", "matches", "new_token", "token_id"]

_PREFIX = "omtl"
_TOKEN = re.compile(r"^omtl_([0-9a-f]{12})_([A-Za-z0-9_\-]{40,64})$")


def new_token() -> str:
    """A fresh random key (shown once; only its hash is stored)."""
    return f"{_PREFIX}_{secrets.token_hex(6)}_{secrets.token_urlsafe(32)}"


def token_id(token: str) -> str | None:
    """The public id of a well-formed token, else None."""
    found = _TOKEN.match(token)
    return found.group(1) if found else None


def hash_token(token: str) -> str:
    """The hex SHA-256 of the token, as stored."""
    return hashlib.sha256(token.encode()).hexdigest()


def matches(token: str, stored_hash: str) -> bool:
    """Whether ``token`` hashes to ``stored_hash`` (constant-time comparison)."""
    return hmac.compare_digest(hash_token(token).encode(), stored_hash.encode())
