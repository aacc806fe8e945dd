"""JSON-RPC 2.0 envelopes: parse bytes into messages and encode messages into bytes.

This is the hottest code in the runtime: every message crosses :func:`parse` once and one
of the ``encode_*`` functions once. It works on plain dicts from orjson and builds small
slotted attrs objects; params and results stay as JSON data here and are structured into
MCP types one layer up, only when a method needs it.
"""

from __future__ import annotations

from typing import Any

import attrs
import orjson

from mcpactor.protocol.errors import (
    INVALID_REQUEST,
    InvalidRequest,
    McpError,
    ParseError,
)

RequestId = int | str
JSONObject = dict[str, Any]

_dumps = orjson.dumps
_loads = orjson.loads


@attrs.frozen(slots=True)
class Request:
    """A JSON-RPC request: it must get exactly one response (or be cancelled)."""

    id: RequestId
    method: str
    params: JSONObject | None = None


@attrs.frozen(slots=True)
class Notification:
    """A JSON-RPC notification: no id, never answered."""

    method: str
    params: JSONObject | None = None


@attrs.frozen(slots=True)
class Response:
    """A successful JSON-RPC response."""

    id: RequestId
    result: JSONObject


@attrs.frozen(slots=True)
class ErrorObject:
    """The ``error`` member of an error response."""

    code: int
    message: str
    data: Any = None

    def to_json(self) -> JSONObject:
        """The wire form, with ``data`` only when present."""
        out: JSONObject = {"code": self.code, "message": self.message}
        if self.data is not None:
            out["data"] = self.data
        return out


@attrs.frozen(slots=True)
class ErrorResponse:
    """A JSON-RPC error response; ``id`` is None when the request's id was unreadable."""

    id: RequestId | None
    error: ErrorObject


@attrs.frozen(slots=True)
class Invalid:
    """An item that is JSON but not a valid JSON-RPC message.

    It carries the error to answer with; ``id`` is the offending request's id when one
    could be read, so the peer can match the error to its request.
    """

    id: RequestId | None
    error: McpError
    raw: Any


Message = Request | Notification | Response | ErrorResponse


@attrs.frozen(slots=True)
class Batch:
    """A JSON array of messages (allowed only by the 2025-03-26 revision)."""

    items: list[Message | Invalid]


def parse(data: bytes | str) -> Message | Invalid | Batch:
    """Parse one transport message (a JSON object or a batch array).

    Raises :class:`ParseError` for bytes that are not JSON or not UTF-8. Structural
    problems do not raise: they come back as :class:`Invalid` items carrying the error
    to answer with, so one bad item in a batch does not spoil the others.
    """
    try:
        obj = _loads(data)
    except orjson.JSONDecodeError as exc:
        raise ParseError(f"Parse error: {exc}", data={"reason": str(exc)}) from None
    if type(obj) is dict:
        return parse_object(obj)
    if type(obj) is list:
        if not obj:
            return Invalid(None, InvalidRequest("Invalid Request: empty batch"), obj)
        return Batch([parse_object(item) for item in obj])
    return Invalid(
        None, InvalidRequest("Invalid Request: a message must be a JSON object"), obj
    )


def _valid_id(value: Any) -> bool:
    # MCP narrows JSON-RPC: ids are strings or integers, never null (and bool is not an int).
    t = type(value)
    return t is str or t is int


def parse_object(obj: Any) -> Message | Invalid:
    """Classify one decoded JSON value as a JSON-RPC message, or say what is wrong."""
    if type(obj) is not dict:
        return Invalid(None, InvalidRequest("Invalid Request: batch item is not an object"), obj)
    raw_id = obj.get("id")
    rid = raw_id if _valid_id(raw_id) else None
    if obj.get("jsonrpc") != "2.0":
        return Invalid(rid, InvalidRequest('Invalid Request: "jsonrpc" must be "2.0"'), obj)
    method = obj.get("method")
    if method is not None:
        if type(method) is not str:
            return Invalid(rid, InvalidRequest('Invalid Request: "method" must be a string'), obj)
        params = obj.get("params")
        if params is not None and type(params) is not dict:
            return Invalid(
                rid, InvalidRequest('Invalid Request: "params" must be an object'), obj
            )
        if "id" in obj:
            if rid is None:
                return Invalid(
                    None,
                    InvalidRequest('Invalid Request: "id" must be a string or an integer'),
                    obj,
                )
            return Request(rid, method, params)
        return Notification(method, params)
    if "result" in obj:
        result = obj["result"]
        if rid is None or "error" in obj:
            return Invalid(None, InvalidRequest("Invalid Request: malformed response"), obj)
        if type(result) is not dict:
            return Invalid(None, InvalidRequest('Invalid Request: "result" must be an object'), obj)
        return Response(rid, result)
    if "error" in obj:
        err = obj["error"]
        if type(err) is not dict or type(err.get("code")) is not int:
            return Invalid(None, InvalidRequest("Invalid Request: malformed error object"), obj)
        message = err.get("message")
        return ErrorResponse(
            rid,
            ErrorObject(err["code"], message if type(message) is str else "", err.get("data")),
        )
    return Invalid(rid, InvalidRequest("Invalid Request: neither a request nor a response"), obj)


def encode_request(rid: RequestId, method: str, params: JSONObject | None) -> bytes:
    """Encode a request."""
    if params is None:
        return _dumps({"jsonrpc": "2.0", "id": rid, "method": method})
    return _dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


def encode_notification(method: str, params: JSONObject | None) -> bytes:
    """Encode a notification."""
    if params is None:
        return _dumps({"jsonrpc": "2.0", "method": method})
    return _dumps({"jsonrpc": "2.0", "method": method, "params": params})


def encode_response(rid: RequestId, result: JSONObject) -> bytes:
    """Encode a successful response."""
    return _dumps({"jsonrpc": "2.0", "id": rid, "result": result})


def encode_error(rid: RequestId | None, error: McpError | ErrorObject) -> bytes:
    """Encode an error response (``id`` null when the request's id could not be read)."""
    body = error.to_error() if isinstance(error, McpError) else error.to_json()
    return _dumps({"jsonrpc": "2.0", "id": rid, "error": body})


def encode_batch(parts: list[bytes]) -> bytes:
    """Join already-encoded messages into one batch array without re-encoding them."""
    return b"[" + b",".join(parts) + b"]"


def encode_message(msg: Message) -> bytes:
    """Encode any envelope object (used by tests and the replayer)."""
    if isinstance(msg, Request):
        return encode_request(msg.id, msg.method, msg.params)
    if isinstance(msg, Notification):
        return encode_notification(msg.method, msg.params)
    if isinstance(msg, Response):
        return encode_response(msg.id, msg.result)
    return encode_error(msg.id, msg.error)


__all__ = [
    "INVALID_REQUEST",
    "Batch",
    "ErrorObject",
    "ErrorResponse",
    "Invalid",
    "JSONObject",
    "Message",
    "Notification",
    "Request",
    "RequestId",
    "Response",
    "encode_batch",
    "encode_error",
    "encode_message",
    "encode_notification",
    "encode_request",
    "encode_response",
    "parse",
    "parse_object",
]
