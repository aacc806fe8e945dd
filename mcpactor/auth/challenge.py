"""``WWW-Authenticate`` challenges (RFC 9110 §11.6.1, RFC 6750 §3, RFC 9728 §5.1).

Sans-I/O: parse what a resource server sends, build what ours sends.
"""

from __future__ import annotations

import attrs

__all__ = [
    "Challenge", "bearer_challenge", "find_bearer", "find_challenge", "parse_www_authenticate",
]

_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_TOKEN68 = frozenset("-._~+/0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


@attrs.frozen
class Challenge:
    """One challenge: its scheme (as sent), auth-params (names lower-cased) or token68."""

    scheme: str
    params: dict[str, str] = attrs.field(factory=dict)
    token68: str | None = None

    @property
    def is_bearer(self) -> bool:
        """Whether this is a ``Bearer`` challenge (schemes are case-insensitive)."""
        return self.scheme.lower() == "bearer"

    @property
    def error(self) -> str | None:
        """The ``error`` param (e.g. ``invalid_token``, ``insufficient_scope``)."""
        return self.params.get("error")

    @property
    def scope(self) -> str | None:
        """The ``scope`` param: space-separated scopes the resource wants."""
        value = self.params.get("scope")
        return value if value and value.strip() else None

    @property
    def resource_metadata(self) -> str | None:
        """The RFC 9728 ``resource_metadata`` URL."""
        return self.params.get("resource_metadata") or None


class _Scanner:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0

    @property
    def done(self) -> bool:
        return self.i >= len(self.s)

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def run(self, chars: frozenset[str]) -> str:
        start = self.i
        while self.i < len(self.s) and self.s[self.i] in chars:
            self.i += 1
        return self.s[start:self.i]

    def quoted(self) -> str:
        self.i += 1  # the opening quote
        out: list[str] = []
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == "\\" and self.i + 1 < len(self.s):
                out.append(self.s[self.i + 1])
                self.i += 2
            elif c == '"':
                self.i += 1
                return "".join(out)
            else:
                out.append(c)
                self.i += 1
        return "".join(out)  # unterminated: take what is there rather than fail the flow


def _token68(sc: _Scanner) -> str | None:
    """A token68 right here (``abc==`` followed by the end or a comma), else None."""
    save = sc.i
    body = sc.run(_TOKEN68)
    pad = sc.run(frozenset("="))
    sc.ws()
    if body and (sc.done or sc.peek() == ","):
        return body + pad
    sc.i = save
    return None


def parse_www_authenticate(value: str) -> list[Challenge]:
    """Every challenge in a ``WWW-Authenticate`` value; lenient about junk."""
    sc = _Scanner(value)
    out: list[Challenge] = []
    while True:
        while not sc.done and sc.peek() in " \t,":
            sc.i += 1
        if sc.done:
            return out
        scheme = sc.run(_TCHAR)
        if not scheme:
            sc.i += 1  # not a token: skip it rather than loop
            continue
        sc.ws()
        token68 = _token68(sc)
        if token68 is not None:
            out.append(Challenge(scheme, {}, token68))
            continue
        params: dict[str, str] = {}
        while True:
            sc.ws()
            save = sc.i
            name = sc.run(_TCHAR)
            sc.ws()
            if not name or sc.peek() != "=":
                sc.i = save  # the start of the next challenge
                break
            sc.i += 1
            sc.ws()
            params[name.lower()] = sc.quoted() if sc.peek() == '"' else sc.run(_TCHAR)
            sc.ws()
            if sc.peek() != ",":
                break
            sc.i += 1
        out.append(Challenge(scheme, params))


def find_bearer(header: str | None) -> Challenge | None:
    """The Bearer challenge of a ``WWW-Authenticate`` value, if any."""
    if not header:
        return None
    for ch in parse_www_authenticate(header):
        if ch.is_bearer:
            return ch
    return None


def find_challenge(header: str | None, *, prefer: str = "bearer") -> Challenge | None:
    """The challenge a token client answers: the ``prefer`` scheme's (``bearer`` or
    ``dpop``), else the other of the two (RFC 9449 §7.1: a resource server may offer
    both, with the same parameters)."""
    if not header:
        return None
    found = {c.scheme.lower(): c for c in reversed(parse_www_authenticate(header))}
    other = "dpop" if prefer.lower() == "bearer" else "bearer"
    return found.get(prefer.lower()) or found.get(other)


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def bearer_challenge(**params: str | None) -> str:
    """A ``Bearer`` challenge with the given params (None values left out), in order."""
    parts = [f"{k}={_quote(v)}" for k, v in params.items() if v is not None]
    return "Bearer " + ", ".join(parts) if parts else "Bearer"
