"""SEP-2243 (2026-07-28): the request headers that mirror body fields over HTTP.

``Mcp-Method`` mirrors ``method``; ``Mcp-Name`` mirrors ``params.name`` (tools/call,
prompts/get), ``params.uri`` (resources/read) or ``params.taskId`` (the tasks
extension's ``tasks/get``, ``tasks/update`` and ``tasks/cancel``, SEP-2663, so that a
balancer can send them to the instance running the task); ``Mcp-Param-{Name}`` mirrors a tool
argument whose schema says ``"x-mcp-header": "{Name}"``. A value that is not plain
header-safe ASCII travels as ``=?base64?...?=``. Pure functions: the client builds the
headers with :func:`request_headers`, the server checks them with
:func:`check_request_headers` (-32020 ``HeaderMismatch`` on any disagreement).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from mcpactor.protocol.errors import HeaderMismatch

__all__ = [
    "check_request_headers",
    "decode_value",
    "encode_value",
    "header_params",
    "invalid_header_annotation",
    "name_of",
    "request_headers",
]

_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_SAFE = re.compile(r"^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$")
_PREFIX, _SUFFIX = "=?base64?", "?="
_MAX_SAFE_INT = 2**53 - 1
_TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})


def name_of(method: str, params: Any) -> str | None:
    """The body value ``Mcp-Name`` mirrors for ``method`` (None: no Mcp-Name)."""
    if type(params) is not dict:
        return None
    if method in ("tools/call", "prompts/get"):
        value = params.get("name")
    elif method == "resources/read":
        value = params.get("uri")
    elif method in _TASK_METHODS:
        value = params.get("taskId")
    else:
        return None
    return value if type(value) is str else None


def encode_value(value: str) -> str:
    """A header value for ``value``: itself when header-safe, else the Base64 form
    (also for a plain value that looks like the Base64 form)."""
    if _SAFE.match(value) and not (value.startswith(_PREFIX) and value.endswith(_SUFFIX)):
        return value
    return _PREFIX + base64.b64encode(value.encode()).decode("ascii") + _SUFFIX


def decode_value(value: str) -> str:
    """A received header value, surrounding whitespace dropped and the Base64 form
    decoded; :class:`HeaderMismatch` when the Base64 form is malformed."""
    value = value.strip(" \t")
    if value.startswith(_PREFIX) and value.endswith(_SUFFIX) and len(value) >= len(_PREFIX) + 2:
        inner = value[len(_PREFIX):-len(_SUFFIX)]
        try:
            return base64.b64decode(inner, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise HeaderMismatch(
                f"Header mismatch: malformed Base64 header value {value!r}"
            ) from None
    return value


def _scalar_text(value: Any) -> str | None:
    """The header text of an argument value (None: not mirrored)."""
    if value is None:
        return None
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return str(value)
    if type(value) is str:
        return value
    return None


def header_params(schema: Any) -> Iterator[tuple[str, tuple[str, ...]]]:
    """Each ``x-mcp-header`` name of a tool's ``inputSchema`` with its property path
    (only paths made of ``properties`` keys count)."""
    def walk(node: Any, path: tuple[str, ...]) -> Iterator[tuple[str, tuple[str, ...]]]:
        if type(node) is not dict:
            return
        props = node.get("properties")
        if type(props) is not dict:
            return
        for key, sub in props.items():
            if type(sub) is not dict:
                continue
            name = sub.get("x-mcp-header")
            if type(name) is str:
                yield name, (*path, key)
            yield from walk(sub, (*path, key))
    yield from walk(schema, ())


def _annotations_anywhere(node: Any, in_properties: bool) -> Iterator[bool]:
    """For each ``x-mcp-header`` in the schema: whether it is statically reachable."""
    if type(node) is dict:
        for key, value in node.items():
            if key == "x-mcp-header":
                yield in_properties
            elif key == "properties" and type(value) is dict and in_properties:
                for sub in value.values():
                    yield from _annotations_anywhere(sub, True)
            else:
                yield from _annotations_anywhere(value, False)
    elif type(node) is list:
        for item in node:
            yield from _annotations_anywhere(item, False)


def invalid_header_annotation(schema: Any) -> str | None:
    """Why a tool's ``x-mcp-header`` annotations break SEP-2243 (None: they do not).
    A client over HTTP leaves such a tool out of ``tools/list``."""
    if any(not ok for ok in _annotations_anywhere(schema, True)):
        return "an x-mcp-header is not reachable through properties alone"
    seen: set[str] = set()
    for name, path in header_params(schema):
        if not name or not _TOKEN.match(name):
            return f"x-mcp-header {name!r} is not an HTTP header token"
        if name.lower() in seen:
            return f"x-mcp-header {name!r} is used twice"
        seen.add(name.lower())
        node: Any = schema
        for key in path:
            node = node["properties"][key]
        kind = node.get("type")
        if kind not in ("string", "integer", "boolean"):
            return f"x-mcp-header {name!r} is on a {kind or 'untyped'} property"
    return None


def _argument(arguments: Any, path: tuple[str, ...]) -> Any:
    node = arguments
    for key in path:
        if type(node) is not dict:
            return None
        node = node.get(key)
    return node


def request_headers(
    method: str, params: Any, input_schema: Any = None
) -> dict[str, str]:
    """The SEP-2243 headers of a request (``input_schema``: the tool's, for
    ``Mcp-Param-*`` on tools/call)."""
    out = {"Mcp-Method": method}
    name = name_of(method, params)
    if name is not None:
        out["Mcp-Name"] = encode_value(name)
    if method == "tools/call" and input_schema is not None and type(params) is dict:
        for header, path in header_params(input_schema):
            text = _scalar_text(_argument(params.get("arguments"), path))
            if text is not None:
                out[f"Mcp-Param-{header}"] = encode_value(text)
    return out


def _same(header_text: str, body: Any) -> bool:
    if type(body) is int and body is not True and body is not False:
        try:
            number = float(header_text)
        except ValueError:
            return False
        return number == body and abs(body) <= _MAX_SAFE_INT
    return header_text == _scalar_text(body)


def check_request_headers(
    method: str, params: Any, get: Callable[[str], str | None],
    tool_schema: Callable[[str], Mapping[str, Any] | None] | None = None,
) -> None:
    """Check a modern request's mirrored headers against its body (``get``: a header
    by name, case-insensitively; ``tool_schema``: a tool's ``inputSchema`` by name).
    Raises :class:`HeaderMismatch` (-32020, HTTP 400)."""
    header = get("mcp-method")
    if header is None:
        raise HeaderMismatch("Header mismatch: the Mcp-Method header is required")
    if header.strip(" \t") != method:
        raise HeaderMismatch(
            f"Header mismatch: Mcp-Method header value {header.strip()!r} does not match "
            f"body method {method!r}"
        )
    name = name_of(method, params)
    if name is not None:
        raw = get("mcp-name")
        if raw is None:
            raise HeaderMismatch(f"Header mismatch: the Mcp-Name header is required for {method}")
        value = decode_value(raw)
        if value != name:
            raise HeaderMismatch(
                f"Header mismatch: Mcp-Name header value {value!r} does not match body "
                f"value {name!r}"
            )
    if method != "tools/call" or tool_schema is None or name is None:
        return
    schema = tool_schema(name)
    if not schema:
        return
    arguments = params.get("arguments") if type(params) is dict else None
    for header_name, path in header_params(schema):
        body = _argument(arguments, path)
        raw = get(f"mcp-param-{header_name}")
        if body is None:
            continue  # nothing to mirror: a header, if any, is not expected
        if raw is None:
            raise HeaderMismatch(
                f"Header mismatch: the Mcp-Param-{header_name} header is required (the "
                "argument is in the body)"
            )
        value = decode_value(raw)
        if not _same(value, body):
            raise HeaderMismatch(
                f"Header mismatch: Mcp-Param-{header_name} header value {value!r} does not "
                f"match the body's argument {body!r}"
            )
