"""Signing state that a client carries between workers (``--state-key``).

A value the server hands to a client and takes back later (the 2026-07-28 revision's
``requestState``, for one) may come back to any worker. Signed with a key every worker
shares, any of them can check that it is one of ours and unchanged. HMAC-SHA256 over
the payload; the token is ``base64url(payload).base64url(mac)``.

The key comes from ``--state-key`` or the ``MCPACTOR_STATE_KEY`` environment variable
(``MCPACTOR_REQUEST_STATE_KEY``, the server's own name for it, is read too);
``mcpactor run --workers N`` without one makes a random key for its workers (one host
only: workers on several hosts need the same key given to each). ``serve_http`` makes it
the server's ``request_state_key``: one key signs every worker's ``requestState``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets

__all__ = ["STATE_KEY_ENV", "InvalidState", "StateSigner", "state_key"]

#: The environment variable holding the shared signing key.
STATE_KEY_ENV = "MCPACTOR_STATE_KEY"
#: The same key under the name ``Server`` reads (``mcpactor.server.rounds.KEY_ENV``).
REQUEST_STATE_KEY_ENV = "MCPACTOR_REQUEST_STATE_KEY"
#: Shortest key accepted, in bytes: below this an HMAC key is guessable.
MIN_KEY_BYTES = 16


class InvalidState(ValueError):
    """A signed token that is malformed, or whose signature does not match."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class StateSigner:
    """Signs and checks tokens with one shared key."""

    __slots__ = ("_key",)

    def __init__(self, key: bytes | str) -> None:
        raw = key.encode() if isinstance(key, str) else bytes(key)
        if len(raw) < MIN_KEY_BYTES:
            raise ValueError(f"the state key must be at least {MIN_KEY_BYTES} bytes "
                             f"(got {len(raw)}); make one with: python -c "
                             "'import secrets; print(secrets.token_urlsafe(32))'")
        self._key = raw

    def __repr__(self) -> str:
        return "StateSigner(<key hidden>)"

    def sign(self, payload: bytes) -> str:
        """The token carrying ``payload``."""
        mac = hmac.new(self._key, payload, hashlib.sha256).digest()
        return f"{_b64(payload)}.{_b64(mac)}"

    def verify(self, token: str) -> bytes:
        """The payload of a token signed with this key; :class:`InvalidState` otherwise."""
        body, sep, mac = token.partition(".")
        if not sep:
            raise InvalidState("not a signed state token")
        try:
            payload, given = _unb64(body), _unb64(mac)
        except ValueError:
            raise InvalidState("not a signed state token") from None
        expected = hmac.new(self._key, payload, hashlib.sha256).digest()
        if not hmac.compare_digest(given, expected):
            raise InvalidState("the state token's signature does not match this server's key")
        return payload


def state_key(given: str | None, *, generate: bool = False) -> str | None:
    """The signing key: ``given``, else ``$MCPACTOR_STATE_KEY``, else
    ``$MCPACTOR_REQUEST_STATE_KEY``, else a random one when ``generate``, else None."""
    if given:
        return given
    for name in (STATE_KEY_ENV, REQUEST_STATE_KEY_ENV):
        env = os.environ.get(name)
        if env:
            return env
    return secrets.token_urlsafe(32) if generate else None
