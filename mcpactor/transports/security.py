"""DNS-rebinding protection for HTTP transports: Host and Origin checks, sans-I/O.

A browser page from ``http://evil.example`` whose name is rebound to 127.0.0.1 can
reach a local server; its requests then carry the attacker's name in ``Host`` and
its page's ``Origin``. Accepting only local names (or the ones configured) in both
headers shuts that door.
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import urlsplit

import attrs

__all__ = ["LOCAL_HOSTS", "OriginPolicy", "host_name", "redact_headers", "redact_target"]

#: Names a loopback server answers to by default (any port).
LOCAL_HOSTS: frozenset[str] = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})


def host_name(value: str) -> str | None:
    """The name part of a ``Host`` header value (``name``, ``name:port``, ``[v6]:port``),
    lower-cased; None when malformed."""
    value = value.strip().lower()
    if not value:
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        rest = value[end + 1 :]
        if rest and not (rest.startswith(":") and rest[1:].isdigit()):
            return None
        return value[: end + 1]
    name, sep, port = value.rpartition(":")
    if not sep:
        return value
    if not port.isdigit() or not name or ":" in name:
        return None
    return name


@attrs.frozen
class OriginPolicy:
    """Which ``Host`` and ``Origin`` values a server accepts.

    ``allowed_hosts``: names (without port) or ``name:port`` values; ``"*"`` turns the
    Host check off. ``allowed_origins``: full origins (``https://app.example``), or
    ``"*"``. The defaults accept loopback names only, which is right for a server bound
    to 127.0.0.1; a server on a public interface must list its names.
    """

    allowed_hosts: frozenset[str] = LOCAL_HOSTS
    allowed_origins: frozenset[str] | None = None

    def host_ok(self, host: str | None) -> bool:
        """Whether a request's ``Host`` header is acceptable (absent: HTTP/1.0, allowed)."""
        if host is None:
            return True
        return _host_ok(self, host)

    def origin_ok(self, origin: str | None) -> bool:
        """Whether a request's ``Origin`` header is acceptable; no Origin (a non-browser
        client) is fine."""
        if origin is None:
            return True
        origin = origin.strip().lower()
        if self.allowed_origins is not None:
            if "*" in self.allowed_origins or origin in self.allowed_origins:
                return True
        if origin == "null":
            return False
        try:
            parts = urlsplit(origin)
            name = parts.hostname
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not name:
            return False
        if ":" in name:
            name = f"[{name}]"
        # An Origin naming a host we serve under is same-origin for our purpose.
        return name in self.allowed_hosts or "*" in self.allowed_hosts


# -- [auth] keeping credentials out of logs --------------------------------------------------

REDACTED = "<redacted>"

#: Headers whose values are credentials.
SECRET_HEADERS: frozenset[str] = frozenset(
    {"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "dpop"}
)

#: Query/form parameters whose values are credentials (OAuth and the usual suspects).
SECRET_PARAMS: frozenset[str] = frozenset({
    "access_token", "refresh_token", "id_token", "token", "code", "code_verifier",
    "client_secret", "client_assertion", "assertion", "subject_token", "password", "api_key",
})

_PARAM = re.compile(r"(?i)(^|[?&;])(" + "|".join(sorted(SECRET_PARAMS)) + r")=[^&;#\s]*")


def redact_target(target: str | bytes) -> str:
    """A request target or URL fit for a log line: secret query values replaced."""
    text = target.decode("latin-1") if isinstance(target, bytes) else target
    return _PARAM.sub(lambda m: f"{m.group(1)}{m.group(2)}={REDACTED}", text)


def redact_headers(headers: list[tuple[str, str]] | list[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    """Headers fit for a log line: credential-carrying values replaced."""
    out: list[tuple[str, str]] = []
    for k, v in headers:
        name = k.decode("latin-1") if isinstance(k, bytes) else k
        value = v.decode("latin-1") if isinstance(v, bytes) else v
        out.append((name, REDACTED if name.lower() in SECRET_HEADERS else value))
    return out


@lru_cache(maxsize=256)  # a client repeats its Host: the verdict is reused
def _host_ok(policy: OriginPolicy, host: str) -> bool:
    if "*" in policy.allowed_hosts:
        return True
    name = host_name(host)
    if name is None:
        return False
    return name in policy.allowed_hosts or host.strip().lower() in policy.allowed_hosts
