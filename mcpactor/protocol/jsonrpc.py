"""JSON-RPC 2.0 envelopes: parse bytes into messages and encode messages into bytes.

This is the hottest code in the runtime: every message crosses :func:`parse` once and one
of the ``encode_*`` functions once. It works on plain dicts from orjson and builds small
slotted attrs objects; params and results stay as JSON data here and are structured into
MCP types one layer up, only when a method needs it.

Integers wider than 64 bits: JSON bounds no integer and a peer may choose any integer
as a request id, but orjson reads such an integer as a float (or refuses it when not
even a double holds it) and refuses to write one. Ids must come back exactly as sent,
so both directions have a slower exact path taken only then: a message whose id came
out as a float, or that orjson refused over a number, is read again by the stdlib's
``json`` (:func:`_exact_loads`); an encoder that orjson refuses retries with the
stdlib (:func:`_exact_dumps`). The common message never leaves orjson. An integer
longer than Python converts from text (4,300 digits: the conversion is quadratic, so
the bound is a guard against denial of service) is kept as its digits, a
:class:`WideInt`, and written back as them.

Valid JSON that no message here can carry (a number no double holds, ``1e400``; a
string holding a lone surrogate, which is no Unicode text) is not a parse error: the
message is an invalid request (-32600), with its id when the id itself is readable.
"""

from __future__ import annotations

import json
import secrets
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
_JSONDecodeError = orjson.JSONDecodeError


def _refuse_constant(name: str) -> Any:
    # The stdlib reads NaN and Infinity, which are not JSON (orjson refuses them).
    raise ValueError(f"{name} is not valid JSON")


class WideInt(int):
    """An integer too long for Python to convert from text (past
    ``sys.get_int_max_str_digits()``, 4,300 digits by default), kept as its digits.

    That is all a request id needs: two are equal (and hash alike) exactly when their
    digits are, and the encoders here write the digits back as they came. Its ``int``
    value stands for the digits, not for the number: never compute with it.
    """

    digits: str

    def __new__(cls, digits: str) -> WideInt:
        # Linear in the length, unlike a decimal conversion; injective (no digit text
        # starts with a zero byte), so equality is equality of the digits.
        self = super().__new__(cls, int.from_bytes(digits.encode("ascii"), "big"))
        self.digits = digits
        return self

    def __repr__(self) -> str:
        return self.digits

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return format(self.digits, spec)

    def __reduce__(self) -> tuple[type[WideInt], tuple[str]]:
        return WideInt, (self.digits,)


#: The types an id (or a progress token) may have once parsed: ``type(x) in ID_TYPES``
#: (bool, which Python counts as an int, is not one).
ID_TYPES: frozenset[type] = frozenset({str, int, WideInt})


def _exact_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # past sys.get_int_max_str_digits(): keep the digits
        return WideInt(text)


class _Unrepresentable:
    """A number no double holds (``1e400``), in place of its value while a message is
    classified (:func:`_classify_exact`): valid JSON, but not carried."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _strict_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text[:32]} is infinity when parsed as double")
    return value


def _lenient_float(text: str) -> Any:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        return _Unrepresentable(text[:32])
    return value


_DECODER = json.JSONDecoder(
    parse_int=_exact_int, parse_float=_strict_float, parse_constant=_refuse_constant
)
_LENIENT_DECODER = json.JSONDecoder(
    parse_int=_exact_int, parse_float=_lenient_float, parse_constant=_refuse_constant
)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _exact_loads(data: bytes | bytearray | memoryview | str, *, lenient: bool = False) -> Any:
    """Decode JSON with every integer exact, as strictly as orjson does otherwise.

    The slow path (see the module): raises ValueError for anything orjson refuses
    too, and for text no encoder here could write back (lone surrogates).
    ``lenient``: such valid JSON is decoded (a number no double holds as an
    :class:`_Unrepresentable`, a lone surrogate as it is) for :func:`_classify_exact`.
    """
    if not isinstance(data, str):
        data = bytes(data).decode("utf-8")  # UnicodeDecodeError is a ValueError
    try:
        if lenient:
            return _LENIENT_DECODER.decode(data)
        obj = _DECODER.decode(data)
        # What we accept we must be able to send back (answers echo ids and params):
        # strings with lone surrogates, which orjson refuses, fail here.
        if _unrepresentable(obj) is not None:
            raise ValueError("a string holds a lone surrogate")
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    return obj


def _unrepresentable(value: Any) -> str | None:
    """What in a decoded value no message can carry (see the module), or None."""
    t = type(value)
    if t is str:
        if value.isascii():
            return None
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "a string holds a lone surrogate, which is not Unicode text"
        return None
    if t is dict:
        for key, item in value.items():
            why = _unrepresentable(key) or _unrepresentable(item)
            if why is not None:
                return why
        return None
    if t is list:
        for item in value:
            why = _unrepresentable(item)
            if why is not None:
                return why
        return None
    if t is _Unrepresentable:
        return f"number {value.text} is out of the range of a double"
    return None


def _has_wide(value: Any) -> bool:
    t = type(value)
    if t is WideInt:
        return True
    if t is dict:
        return any(_has_wide(item) for item in value.values())
    if t is list or t is tuple:
        return any(_has_wide(item) for item in value)
    return False


#: Stands for a :class:`WideInt` while the stdlib encodes (see :func:`_exact_dumps`);
#: the random part keeps any string a peer sends from being taken for one.
_WIDE_MARK = f"\x00wide-{secrets.token_hex(8)}-"


def _swap_wide(value: Any, found: list[WideInt]) -> Any:
    t = type(value)
    if t is WideInt:
        found.append(value)
        return f"{_WIDE_MARK}{len(found) - 1}"
    if t is dict:
        return {key: _swap_wide(item, found) for key, item in value.items()}
    if t is list or t is tuple:
        return [_swap_wide(item, found) for item in value]
    return value


def _exact_dumps(obj: Any) -> bytes:
    """Encode what orjson refused to (integers past 64 bits), in orjson's layout;
    a :class:`WideInt` as its digits."""
    if not _has_wide(obj):
        return _ENCODER.encode(obj).encode("utf-8")
    found: list[WideInt] = []
    text = _ENCODER.encode(_swap_wide(obj, found))
    mark = _ENCODER.encode(_WIDE_MARK)[:-1]  # the mark as it is written, less its end quote
    for i, wide in enumerate(found):
        text = text.replace(f"{mark}{i}\"", wide.digits, 1)
    return text.encode("utf-8")


def dumps(obj: Any) -> bytes:
    """Encode JSON: orjson, and the stdlib for integers orjson cannot write.

    Raises TypeError (orjson's) for anything neither can encode.
    """
    try:
        return _dumps(obj)
    except TypeError as exc:
        try:
            return _exact_dumps(obj)
        except (TypeError, ValueError):
            raise exc from None


def _number_trouble(exc: ValueError) -> bool:
    """Whether orjson refused a document over a number it cannot represent (which
    the exact path may read) rather than over its syntax."""
    text = str(exc).lower()
    return text.find("number") >= 0 or text.find("integer") >= 0


def _inexact_params(params: Any) -> bool:
    """Whether orjson read an id inside params as a float: the request a cancellation
    names, a progress token (of a progress notification, or a request's ``_meta``)."""
    if type(params) is not dict:
        return False
    if type(params.get("requestId")) is float or type(params.get("progressToken")) is float:
        return True
    meta = params.get("_meta")
    return type(meta) is dict and type(meta.get("progressToken")) is float


def _inexact_item(item: Any) -> bool:
    return type(item) is dict and (type(item.get("id")) is float
                                   or _inexact_params(item.get("params")))


def _has_inexact_id(obj: Any) -> bool:
    """Whether orjson turned an id (of a message or a batch item, or one inside
    params) into a float: an integer wider than 64 bits, or a genuine non-integer
    value; the exact path tells."""
    if type(obj) is list:
        return any(_inexact_item(item) for item in obj)
    return _inexact_item(obj)


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Decode one JSON document, ids exact: orjson, then the exact path when orjson
    refused a number or read an id as a float. Raises ValueError (orjson's
    ``JSONDecodeError`` for bad syntax) when it is not JSON."""
    try:
        obj = _loads(data)
    except _JSONDecodeError as exc:
        if not _number_trouble(exc):
            raise
        try:
            return _exact_loads(data)
        except ValueError:
            raise exc from None
    if _has_inexact_id(obj):
        return _exact_loads(data)
    return obj


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
    except _JSONDecodeError as exc:
        return _classify_exact(_parse_exact(data, exc))
    if type(obj) is dict:
        if type(obj.get("id")) is float:
            return _classify_exact(_parse_exact(data, None))
        msg = parse_object(obj)
        # A notification's ids live in its params (a request's progress token is
        # checked where the Connection reads it: see InexactNumber).
        if msg.__class__ is Notification and _inexact_params(msg.params):
            return _classify_exact(_parse_exact(data, None))
        return msg
    if type(obj) is list:
        if not obj:
            return Invalid(None, InvalidRequest("Invalid Request: empty batch"), obj)
        if _has_inexact_id(obj):
            return _classify_exact(_parse_exact(data, None))
        return Batch([parse_object(item) for item in obj])
    return Invalid(
        None, InvalidRequest("Invalid Request: a message must be a JSON object"), obj
    )


class InexactNumber(Exception):
    """Raised by a reader of a parsed message that found an id-like value (a progress
    token) read as a float: the message must be parsed again with :func:`parse_exact`.
    """


def parse_exact(data: bytes | str) -> Message | Invalid | Batch:
    """:func:`parse` with every integer exact (the stdlib's slower ``json``): for a
    message in which orjson read a wide integer as a float where it matters."""
    return _classify_exact(_parse_exact(data, None))


def _parse_exact(data: bytes | str, refused: ValueError | None) -> Any:
    """:func:`parse`'s slow path: read ``data`` again with every integer exact, after
    orjson ``refused`` it (over a number, a lone surrogate, else that is the answer)
    or read an id as a float (``refused`` None). What no message can carry is left in
    for :func:`_classify_exact`."""
    if refused is not None and not _number_trouble(refused) and not _surrogate_trouble(refused):
        raise ParseError(f"Parse error: {refused}", data={"reason": str(refused)}) from None
    try:
        return _exact_loads(data, lenient=True)
    except ValueError as exc:
        reason = str(exc)
        raise ParseError(f"Parse error: {reason}", data={"reason": reason}) from None


def _surrogate_trouble(exc: ValueError) -> bool:
    """Whether orjson refused a document over a lone surrogate (valid JSON text)."""
    return str(exc).lower().find("surrogate") >= 0


def _classify_exact(obj: Any) -> Message | Invalid | Batch:
    """:func:`parse_object` for what the exact path read, which may hold what no
    message can carry (see the module): an id that is such a value is not an id
    (-32600 with id null); such a value anywhere else makes the message an invalid
    request answered with its id."""
    if type(obj) is list:
        if not obj:
            return Invalid(None, InvalidRequest("Invalid Request: empty batch"), obj)
        return Batch([_classify_item(item) for item in obj])
    if type(obj) is dict:
        return _classify_item(obj)
    return Invalid(
        None, InvalidRequest("Invalid Request: a message must be a JSON object"), obj
    )


def _classify_item(obj: Any) -> Message | Invalid:
    if type(obj) is dict:
        why = _unrepresentable(obj.get("id"))
        if why is not None:
            return Invalid(None, InvalidRequest(
                f'Invalid Request: "id" must be a string or an integer ({why})'), None)
        why = _unrepresentable(obj)
        if why is not None:
            rid = obj.get("id")
            return Invalid(rid if _valid_id(rid) else None,
                           InvalidRequest(f"Invalid Request: {why}"), None)
    return parse_object(obj)


def _valid_id(value: Any) -> bool:
    # MCP narrows JSON-RPC: ids are strings or integers, never null (and bool is not an int).
    t = type(value)
    return t is str or t is int or t is WideInt


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


# The encoders call orjson directly and fall back to dumps() only when it refuses (a
# wide integer): a try block costs nothing when nothing is raised.


def encode_request(rid: RequestId, method: str, params: JSONObject | None) -> bytes:
    """Encode a request."""
    msg: JSONObject
    if params is None:
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
    else:
        msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    try:
        return _dumps(msg)
    except TypeError:
        return dumps(msg)


def encode_notification(method: str, params: JSONObject | None) -> bytes:
    """Encode a notification."""
    if params is None:
        return _dumps({"jsonrpc": "2.0", "method": method})
    msg = {"jsonrpc": "2.0", "method": method, "params": params}
    try:
        return _dumps(msg)
    except TypeError:
        return dumps(msg)


def encode_response(rid: RequestId, result: JSONObject) -> bytes:
    """Encode a successful response."""
    try:
        return _dumps({"jsonrpc": "2.0", "id": rid, "result": result})
    except TypeError:
        return dumps({"jsonrpc": "2.0", "id": rid, "result": result})


def encode_error(rid: RequestId | None, error: McpError | ErrorObject) -> bytes:
    """Encode an error response (``id`` null when the request's id could not be read)."""
    body = error.to_error() if isinstance(error, McpError) else error.to_json()
    try:
        return _dumps({"jsonrpc": "2.0", "id": rid, "error": body})
    except TypeError:
        return dumps({"jsonrpc": "2.0", "id": rid, "error": body})


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
    "ID_TYPES",
    "INVALID_REQUEST",
    "Batch",
    "ErrorObject",
    "ErrorResponse",
    "InexactNumber",
    "Invalid",
    "JSONObject",
    "Message",
    "Notification",
    "Request",
    "RequestId",
    "Response",
    "WideInt",
    "dumps",
    "encode_batch",
    "encode_error",
    "encode_message",
    "encode_notification",
    "encode_request",
    "encode_response",
    "loads",
    "parse",
    "parse_exact",
    "parse_object",
]
