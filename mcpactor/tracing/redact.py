"""Keeping secrets out of traces.

A trace is meant to be attached to bug reports, so anything that looks like a
credential is replaced by ``"<redacted>"`` before it reaches the file: the values of
configured keys (``authorization``, ``token``, ``password``, ...) wherever they appear
in a message or an event, and ``Bearer`` credentials inside any string. Key matching
ignores case, ``-`` and ``_`` (``X-Api-Key``, ``api_key`` and ``apiKey`` are one key).

A secret found under such a key is also remembered, and every later occurrence of it
in any string is redacted too — a handler that echoes a token back does not leak it.

The check on already-encoded messages is a byte search; only a message that might hold
a secret is decoded, redacted and encoded again.
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import orjson

REDACTED = "<redacted>"

DEFAULT_REDACT_KEYS: frozenset[str] = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "access_token",
        "refresh_token",
        "id_token",
        "token",
        "client_secret",
        "secret",
        "password",
        "api_key",
        "x-api-key",
    }
)

_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+")


#: Folds bytes the way keys are compared, in one pass with ``-`` and ``_`` deleted.
_FOLD = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")

#: Values shorter than this are redacted where found but not hunted for elsewhere
#: (a 2-character "secret" would blank out half of every trace).
_MIN_REMEMBERED = 6


def normalize_key(key: str) -> str:
    """The form keys are compared in: lower case, without ``-`` and ``_``."""
    return key.lower().replace("-", "").replace("_", "")


def _needles(normalized_keys: frozenset[str]) -> re.Pattern[bytes]:
    """What a folded message must contain to hold a secret: one of the keys as a whole
    JSON key (``"accesstoken"``, so ``progressToken`` does not count), or a credential
    scheme followed by its value. One pattern: a single scan of the message."""
    keys = b"|".join(re.escape(k.encode()) for k in sorted(normalized_keys))
    return re.compile(b'"(?:' + keys + b')"|bearer |basic ')


#: Bytes from rarest to commonest in JSON text, roughly: a needle's rarest byte is
#: looked for first, with memchr (a one-byte search is many times faster than a longer
#: one, and most batches lack at least one byte of most needles).
_RARITY = b"zqxjkvbywgfpmhucdlrsnioate"


def _rarest(needle: bytes) -> bytes:
    return min((needle[i : i + 1] for i in range(len(needle))),
               key=lambda b: _RARITY.find(b) if b in _RARITY else -1)


def _suffix_groups(normalized_keys: frozenset[str]) -> list[tuple[bytes, bytes, list[bytes]]]:
    """The quoted keys (``"accesstoken"``) grouped under a shared ending (``token"``):
    one memory search per group over a batch, the group's own only when it hits; each
    group with the rarest byte of its ending, searched for before it."""
    groups: dict[str, list[bytes]] = {}
    for key in sorted(normalized_keys, key=len):
        root = next((r for r in groups if key.endswith(r)), key)
        groups.setdefault(root, []).append(b'"' + key.encode() + b'"')
    return [(_rarest(root.encode()), root.encode() + b'"', needles)
            for root, needles in groups.items()]


def _key_regex(keys: frozenset[str]) -> str:
    # Each key spelled with optional separators between its letters, so that one
    # pattern finds every spelling normalize_key() treats as equal.
    alts = sorted({"[-_]?".join(re.escape(c) for c in normalize_key(k)) for k in keys})
    return "(?:" + "|".join(alts) + ")" if alts else "(?!)"


@attrs.frozen
class Redactor:
    """Replaces secrets in trace data; ``keys`` are the configured secret keys."""

    keys: frozenset[str] = DEFAULT_REDACT_KEYS
    _norm: frozenset[str] = attrs.field(init=False)
    #: Finds, in a folded message, a secret key used as a JSON key or a credential.
    _needles: re.Pattern[bytes] = attrs.field(init=False)
    #: The same for a whole encoded batch, as plain substrings (memory searches are far
    #: faster than a regex alternation over tens of kilobytes).
    _batch_needles: list[tuple[bytes, bytes, list[bytes]]] = attrs.field(init=False)
    _raw_pair: re.Pattern[str] = attrs.field(init=False)
    #: Secret values seen so far (text, and as they appear inside encoded JSON).
    _learned: dict[str, bytes] = attrs.field(init=False, factory=dict)
    #: is_secret_key answers by key: a trace has few distinct keys and many events.
    _key_cache: dict[str, bool] = attrs.field(init=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        pat = _key_regex(self.keys)
        object.__setattr__(self, "_norm", frozenset(normalize_key(k) for k in self.keys))
        object.__setattr__(self, "_needles", _needles(self._norm))
        object.__setattr__(self, "_batch_needles", _suffix_groups(self._norm))
        object.__setattr__(
            self,
            "_raw_pair",
            re.compile('(?i)("' + pat + '"\\s*:\\s*)("(?:[^"\\\\]|\\\\.)*"|[^,}\\]\\s]+)'),
        )

    def is_secret_key(self, key: str) -> bool:
        """Whether values under ``key`` are redacted."""
        known = self._key_cache.get(key)
        if known is None:
            known = normalize_key(key) in self._norm
            if len(self._key_cache) < 4096:  # peers choose keys: keep the cache bounded
                self._key_cache[key] = known
        return known

    def might_hold_secret(self, data: bytes) -> bool:
        """A cheap over-approximation: False means ``data`` certainly holds no secret.

        Runs on every traced message, so it is substring searches (C speed) on the
        message folded the way keys are compared (lower case, no ``-``/``_``): a key that
        matches anywhere, or a ``bearer``/``basic`` credential, or a secret learned
        earlier sends the message down the full (decoding) redaction path.
        """
        # bytes.find, not ``in``, throughout: CPython's ``bytes in bytes`` first tries the
        # needle as an integer, raising and clearing a TypeError, which costs several
        # times a short search.
        find = data.find
        if find(b"\\") >= 0 and find(b"\\u") >= 0:  # memchr first: most have no "\\"
            return True  # an escaped letter could spell a key: decode to be sure
        folded = data.translate(_FOLD, b"-_")
        if self._needles.search(folded) is not None:
            return True
        learned = self._learned
        return bool(learned) and any(find(enc) >= 0 for enc in learned.values())

    def batch_might_hold_secret(self, data: bytes) -> bool:
        """:meth:`might_hold_secret` for a whole batch of encoded events and messages:
        False means that redacting any of them would change nothing. Stricter than the
        per-message check (a credential scheme counts whatever follows it: inside JSON
        strings a tab is ``\\t``), so that one scan can stand for every per-event one."""
        # One-byte searches (memchr) guard the longer ones, which cost thirty times more
        # (bytes.find rather than ``in``: see might_hold_secret).
        find = data.find
        if find(b"\\") >= 0 and find(b"\\u") >= 0:
            return True  # an escaped letter could spell a key: decode to be sure
        # The Kelvin sign is the one non-ASCII letter whose str.lower() is ASCII ("k",
        # as in "token"): is_secret_key() would match it, a byte search would not.
        if find(b"\xe2") >= 0 and find(b"\xe2\x84\xaa") >= 0:
            return True
        folded = data.translate(_FOLD, b"-_")
        seek = folded.find
        if seek(b"b") >= 0 and (seek(b"bearer") >= 0 or seek(b"basic") >= 0):
            return True
        for rare, suffix, needles in self._batch_needles:
            if seek(rare) >= 0 and seek(suffix) >= 0:
                for needle in needles:
                    if seek(needle) >= 0:
                        return True
        learned = self._learned
        return bool(learned) and any(find(enc) >= 0 for enc in learned.values())

    def text_might_hold_secret(self, text: str) -> bool:
        """A cheap over-approximation for one string: a credential scheme, or a secret
        learned earlier."""
        if _BEARER.search(text) is not None:
            return True
        learned = self._learned
        return bool(learned) and any(secret in text for secret in learned)

    @property
    def learned(self) -> list[str]:
        """Secret values found so far, oldest first (hunted for in every later string)."""
        return list(self._learned)

    def remember(self, values: list[str]) -> None:
        """Hunt for ``values`` too, as if found under secret keys (a writer taking over
        from another one keeps what that one learned)."""
        for value in values:
            self._learn(value)

    def _learn(self, value: str) -> None:
        if len(self._learned) >= 256:
            return  # keys still redact; only the hunt for echoes stops growing
        if len(value) >= _MIN_REMEMBERED and value != REDACTED and value not in self._learned:
            self._learned[value] = orjson.dumps(value)[1:-1]

    def _scrub(self, text: str) -> tuple[str, bool]:
        changed = False
        if _BEARER.search(text):
            for m in _BEARER.finditer(text):
                self._learn(m.group(0).split(None, 1)[1])
            text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
            changed = True
        for secret in self._learned:
            if secret in text:
                text = text.replace(secret, REDACTED)
                changed = True
        return text, changed

    def redact(self, value: Any) -> tuple[Any, bool]:
        """``value`` with secrets replaced, and whether anything was replaced."""
        if isinstance(value, dict):
            changed = False
            out: dict[Any, Any] = {}
            for k, v in value.items():
                if isinstance(k, str) and self.is_secret_key(k) and v is not None:
                    if isinstance(v, str):
                        self._learn(v.split(None, 1)[1] if _BEARER.match(v) else v)
                    out[k] = REDACTED
                    changed = True
                else:
                    out[k], c = self.redact(v)
                    changed = changed or c
            return (out, True) if changed else (value, False)
        if isinstance(value, list):
            items = [self.redact(v) for v in value]
            if any(c for _, c in items):
                return [v for v, _ in items], True
            return value, False
        if isinstance(value, str):
            return self._scrub(value)
        return value, False

    def redact_text(self, text: str) -> str:
        """Redact undecodable message text (``raw``) by pattern."""
        for m in self._raw_pair.finditer(text):
            self._learn(m.group(2).strip('"'))
        text = self._raw_pair.sub(lambda m: f'{m.group(1)}"{REDACTED}"', text)
        return self._scrub(text)[0]
