"""PKCE (RFC 7636) with S256, and the ``state`` value: random strings from
:mod:`secrets`, the challenge a SHA-256 from :mod:`hashlib` (no crypto of our own)."""

from __future__ import annotations

import base64
import hashlib
import secrets

import attrs

__all__ = ["Pkce", "new_pkce", "new_state", "s256"]


def s256(verifier: str) -> str:
    """``BASE64URL(SHA256(verifier))`` without padding (RFC 7636 §4.2)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@attrs.frozen
class Pkce:
    """A code verifier and its S256 challenge."""

    verifier: str = attrs.field(repr=False)
    challenge: str
    method: str = "S256"


def new_pkce() -> Pkce:
    """A fresh pair; the verifier is 86 unreserved characters (RFC 7636 allows 43-128)."""
    verifier = secrets.token_urlsafe(64)
    return Pkce(verifier, s256(verifier))


def new_state() -> str:
    """An unguessable ``state`` for one authorization request."""
    return secrets.token_urlsafe(32)
