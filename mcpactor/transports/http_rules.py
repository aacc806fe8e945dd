"""Streamable HTTP request rules as pure functions: headers in, verdict out.

Every check returns None when the request passes and an :class:`HttpError` (status,
JSON-RPC code, message) when it does not, so the ASGI layer only turns verdicts into
responses and the rules can be unit-tested without a server.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from functools import lru_cache

import attrs
import orjson

from mcpactor.protocol import jsonrpc, versions
from mcpactor.protocol.errors import INVALID_REQUEST, PARSE_ERROR

__all__ = [
    "Headers",
    "HttpError",
    "accepts",
    "check_accept_get",
    "check_accept_post",
    "check_content_type",
    "check_protocol_version",
    "is_error_response",
    "is_initialize",
    "new_session_id",
    "valid_session_id",
]

#: JSON-RPC code used for transport-level refusals that are not parse errors.
SERVER_ERROR = -32000


@attrs.frozen
class HttpError:
    """A refusal: the HTTP status, and the JSON-RPC error put in the body."""

    status: int
    message: str
    code: int = SERVER_ERROR


class Headers:
    """Case-insensitive view of ASGI headers (``list[tuple[bytes, bytes]]``)."""

    __slots__ = ("_d",)

    def __init__(self, raw: Iterable[tuple[bytes, bytes]]) -> None:
        # Kept as bytes: only the few values asked for are decoded.
        d: dict[bytes, bytes] = {}
        for k, v in raw:
            name = k.lower()
            # Repeated headers fold into one comma-separated value (RFC 9110 5.3).
            d[name] = d[name] + b", " + v if name in d else v
        self._d = d

    def get(self, name: str) -> str | None:
        """The header's value, or None."""
        value = self._d.get(name.lower().encode("latin-1"))
        return None if value is None else value.decode("latin-1")


def _media_types(header: str) -> list[str]:
    out = []
    for part in header.split(","):
        media = part.split(";", 1)[0].strip().lower()
        if media:
            out.append(media)
    return out


def accepts(header: str | None, media_type: str) -> bool:
    """Whether an ``Accept`` header admits ``media_type`` (wildcards count)."""
    if header is None:
        return False
    major = media_type.split("/", 1)[0]
    for m in _media_types(header):
        if m == media_type or m == "*/*" or m == f"{major}/*":
            return True
    return False


@lru_cache(maxsize=64)  # a client repeats its headers: verdicts are reused
def check_accept_post(accept: str | None) -> HttpError | None:
    """A POST must accept both JSON and SSE (the server picks per request)."""
    if accepts(accept, "application/json") and accepts(accept, "text/event-stream"):
        return None
    return HttpError(
        406, "Not Acceptable: the client must accept both application/json and text/event-stream"
    )


@lru_cache(maxsize=64)  # a client repeats its headers: verdicts are reused
def check_accept_get(accept: str | None) -> HttpError | None:
    """A GET opens an SSE stream, so it must accept ``text/event-stream``."""
    if accepts(accept, "text/event-stream"):
        return None
    return HttpError(406, "Not Acceptable: the client must accept text/event-stream")


@lru_cache(maxsize=64)  # a client repeats its headers: verdicts are reused
def check_content_type(content_type: str | None) -> HttpError | None:
    """POST bodies are JSON."""
    if content_type is not None:
        media = content_type.split(";", 1)[0].strip().lower()
        if media == "application/json":
            return None
    return HttpError(415, "Unsupported Media Type: Content-Type must be application/json")


@lru_cache(maxsize=64)  # a client repeats its headers: verdicts are reused
def check_protocol_version(header: str | None) -> HttpError | None:
    """``MCP-Protocol-Version`` must name a version we speak; absent means 2025-03-26.

    Any supported version is accepted, not only the negotiated one: the conformance
    suite sends ``2025-03-26`` inside sessions negotiated at later versions.
    """
    if header is None:
        return None
    if versions.is_supported(header.strip()):
        return None
    return HttpError(
        400,
        f"Bad Request: unsupported MCP-Protocol-Version {header.strip()!r} "
        f"(supported: {', '.join(versions.SUPPORTED_VERSIONS)})",
        INVALID_REQUEST,
    )


def new_session_id() -> str:
    """A fresh, unguessable session id (URL-safe base64: visible ASCII only)."""
    return secrets.token_urlsafe(24)


def valid_session_id(value: str) -> bool:
    """The spec limits session ids to visible ASCII (0x21 to 0x7E)."""
    return 0 < len(value) <= 256 and all(0x21 <= ord(c) <= 0x7E for c in value)


def is_error_response(answer: bytes) -> bool:
    """Whether an answer (to initialize) is a JSON-RPC error, or not JSON at all."""
    try:
        obj = orjson.loads(answer)
    except orjson.JSONDecodeError:
        return True
    return not isinstance(obj, dict) or "error" in obj


def is_initialize(msg: object) -> bool:
    """Whether a parsed message is an initialize request."""
    return isinstance(msg, jsonrpc.Request) and msg.method == "initialize"


def parse_error(message: str) -> HttpError:
    """400 with a -32700 JSON-RPC error: the body is not JSON."""
    return HttpError(400, message, PARSE_ERROR)


def invalid_request(message: str, status: int = 400) -> HttpError:
    """A -32600 refusal (malformed message, forbidden batch, ...)."""
    return HttpError(status, message, INVALID_REQUEST)
