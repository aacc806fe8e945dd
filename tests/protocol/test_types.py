"""Every MCP schema class round-trips through the wire form with the conventions intact."""

import re
import types
import typing
from typing import Any

import attrs
import orjson
import pytest

import mcpactor.protocol.types as mt
from mcpactor.protocol import methods
from mcpactor.protocol.convert import from_wire, to_wire, wire_name

CLASSES = sorted(
    {obj for name in mt.__all__ if attrs.has(obj := getattr(mt, name))},
    key=lambda c: c.__name__,
)
EXTRA = {"x-vendor": {"nested": [1, "two", {"three": True}]}}
META = {"progressToken": "tok-1", "example.com/trace": "abc"}
CAMEL = re.compile(r"^(_meta|[a-z][a-zA-Z]*)$")


def _members(t: Any) -> tuple[Any, ...]:
    return typing.get_args(t) if typing.get_origin(t) in (typing.Union, types.UnionType) else ()


def sample(t: Any, name: str, *, full: bool) -> Any:
    """A valid value of type ``t``: every optional member set when ``full``."""
    if members := _members(t):
        return sample(next(m for m in members if m is not type(None)), name, full=full)
    origin = typing.get_origin(t)
    if origin is typing.Literal:
        return typing.get_args(t)[0]
    if origin is list:
        return [sample(typing.get_args(t)[0], name, full=full)]
    if origin is dict:
        value_type = typing.get_args(t)[1]
        if value_type is Any and name == "content":  # ElicitResult: flat form answers
            return {"choice": "yes", "count": 3, "tags": ["a", "b"]}
        if value_type is Any:
            # Shaped like a JSON Schema so the official models accept it where one is due.
            return {"type": "object", "properties": {"deep": {"type": "string", "x": [1, 2.5]}}}
        return {"key": sample(value_type, name, full=full)}
    if t is Any:
        return {"anything": ["goes", 1]}
    if t is str:
        return f"{name}-value"
    if t is bool:
        return True
    if t is int:
        return 7
    if t is float:
        return 0.5
    if attrs.has(t):
        return build(t, full=full)
    raise AssertionError(f"no sample for {t!r}")


def build(cls: type, *, full: bool) -> Any:
    """An instance of ``cls``: only required members, or everything including meta/extra."""
    kwargs: dict[str, Any] = {}
    for field in attrs.fields(cls):
        required = field.default is attrs.NOTHING
        if field.name == "extra":
            if full:
                kwargs["extra"] = EXTRA
        elif field.name == "meta":
            if full:
                kwargs["meta"] = META
        elif required or (full and field.default is None):
            kwargs[field.name] = sample(field.type, field.name, full=full)
    return cls(**kwargs)


def walk_values(data: Any) -> typing.Iterator[Any]:
    yield data
    if isinstance(data, dict):
        for value in data.values():
            yield from walk_values(value)
    elif isinstance(data, list):
        for value in data:
            yield from walk_values(value)


def test_every_public_class_is_covered() -> None:
    assert len(CLASSES) > 60
    for cls in CLASSES:
        assert cls.__doc__, f"{cls.__name__} has no docstring"
        assert attrs.has(cls)
        params = attrs.fields(cls)
        assert all(f.kw_only for f in params), cls
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            obj = build(cls, full=False)
            setattr(obj, params[0].name, None)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_full_round_trip(cls: type) -> None:
    obj = build(cls, full=True)
    wire = to_wire(obj)
    # Through real JSON bytes, as on the wire.
    wire = orjson.loads(orjson.dumps(wire))
    for field in attrs.fields(cls):
        if field.name == "extra":
            continue
        assert wire_name(field.name) in wire, (cls.__name__, field.name)
    for key in wire:
        assert key in EXTRA or CAMEL.match(key), (cls.__name__, key)
    if any(f.name == "meta" for f in attrs.fields(cls)):
        assert wire["_meta"] == META
        assert "meta" not in wire
    assert wire["x-vendor"] == EXTRA["x-vendor"]
    assert None not in list(walk_values(wire))
    back: Any = from_wire(wire, cls)
    assert back == obj
    assert back.extra == EXTRA
    assert to_wire(back) == wire


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_minimal_round_trip_omits_none(cls: type) -> None:
    obj = build(cls, full=False)
    wire = to_wire(obj)
    expected = {
        wire_name(f.name)
        for f in attrs.fields(cls)
        if f.default is attrs.NOTHING or (f.default is not None and f.name != "extra")
    }
    assert set(wire) == expected, cls.__name__
    assert None not in list(walk_values(wire))
    assert from_wire(orjson.loads(orjson.dumps(wire)), cls) == obj


def test_wire_names_match_the_schema() -> None:
    """Spot checks against names written out by hand from the specification."""
    tool = mt.Tool(
        name="t",
        input_schema={"type": "object"},
        output_schema={"type": "object"},
        annotations=mt.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    assert to_wire(tool) == {
        "name": "t",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    }
    init = mt.InitializeResult(
        protocol_version="2025-06-18",
        capabilities=mt.ServerCapabilities(
            tools=mt.ToolsCapability(list_changed=True),
            resources=mt.ResourcesCapability(subscribe=True),
            logging={},
        ),
        server_info=mt.Implementation(name="s", version="1", website_url="https://x"),
    )
    assert to_wire(init) == {
        "protocolVersion": "2025-06-18",
        "capabilities": {
            "tools": {"listChanged": True},
            "resources": {"subscribe": True},
            "logging": {},
        },
        "serverInfo": {"name": "s", "version": "1", "websiteUrl": "https://x"},
    }
    # Empty capability objects still declare the capability.
    assert to_wire(mt.ClientCapabilities(sampling=mt.SamplingCapability())) == {"sampling": {}}
    assert to_wire(mt.ListResourceTemplatesResult(resource_templates=[], next_cursor="n")) == {
        "resourceTemplates": [],
        "nextCursor": "n",
    }
    assert to_wire(mt.CallToolResult(content=[], is_error=True, structured_content={})) == {
        "content": [],
        "isError": True,
        "structuredContent": {},
    }
    assert to_wire(mt.ProgressNotificationParams(progress_token=1, progress=2)) == {
        "progressToken": 1,
        "progress": 2,
    }
    assert to_wire(mt.CancelledNotificationParams(request_id="r")) == {"requestId": "r"}
    assert to_wire(mt.ElicitRequestURLParams(message="m", url="u", elicitation_id="e")) == {
        "message": "m",
        "url": "u",
        "elicitationId": "e",
        "mode": "url",
    }
    assert to_wire(mt.ToolResultContent(tool_use_id="1", content=[])) == {
        "toolUseId": "1",
        "content": [],
        "type": "tool_result",
    }


# Members we write that the official 2025-11-25 models do not name.
_SEP_2093_CONTENTS = {
    "name",
    "title",
    "description",
    "size",
    "isCollection",
    "annotations",
    "icons",
}
_NOT_IN_2025_11_25 = {
    "TextResourceContents": _SEP_2093_CONTENTS,
    "BlobResourceContents": _SEP_2093_CONTENTS,
    "Resource": {"isCollection"},
    # The schema types these params inline, without the ``_meta`` every params object allows.
    "ElicitationCompleteNotificationParams": {"_meta"},
    "TaskIdParams": {"_meta"},
}


# Where the generated official models name a class differently (anonymous sub-objects).
_OFFICIAL_NAMES = {
    "CompletionArgument": "Argument",
    "CompletionContext": "Context",
    "ElicitationCapability": "Elicitation",
    "ElicitationCompleteNotificationParams": "Params1",
    "PromptsCapability": "Prompts",
    "ResourcesCapability": "Resources",
    "RootsCapability": "Roots",
    "SamplingCapability": "Sampling",
    "ToolsCapability": "Tools1",
    "ClientTasksCapability": "Tasks",
    "ServerTasksCapability": "Tasks1",
    "TaskIdParams": "Params2",
    # ``Task`` doubles as the ``tasks/get`` result (``Result & Task``: with ``_meta``).
    "Task": "GetTaskResult",
}


@pytest.mark.interop
@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_wire_form_is_accepted_by_the_official_schema_models(cls: type) -> None:
    """Cross-check wire names and shapes with the SDK's models generated from the 2025-11-25 schema."""
    from mcp_types import _v2025_11_25 as official
    from pydantic import BaseModel

    if cls.__module__.endswith(".tasks_ext"):
        return  # the 2026-07-28 tasks extension: not in the 2025-11-25 models
    model = getattr(official, _OFFICIAL_NAMES.get(cls.__name__, cls.__name__), None)
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        # Only in extensions: SEP-2093, and the skills extension (SEP-2640).
        assert cls.__name__.startswith("ReadResourceMetadata") or cls.__module__.endswith(
            ".skills"), cls
        return
    known = {f.alias or n for n, f in model.model_fields.items()}
    wire = to_wire(build(cls, full=True))
    ours = set(wire) - set(EXTRA) - _NOT_IN_2025_11_25.get(cls.__name__, set())
    assert ours <= known, (cls.__name__, ours - known)
    model.model_validate(wire)


# --- method table --------------------------------------------------------------------

_EXPECTED_METHODS = {
    "initialize", "ping", "notifications/initialized", "notifications/cancelled",
    "notifications/progress", "tools/list", "tools/call", "notifications/tools/list_changed",
    "resources/list", "resources/templates/list", "resources/read", "resources/subscribe",
    "resources/unsubscribe", "notifications/resources/updated",
    "notifications/resources/list_changed", "resources/metadata", "prompts/list",
    "prompts/get", "notifications/prompts/list_changed", "completion/complete",
    "logging/setLevel", "notifications/message", "sampling/createMessage",
    "elicitation/create", "notifications/elicitation/complete", "roots/list",
    "notifications/roots/list_changed", "tasks/get", "tasks/result", "tasks/list",
    "tasks/cancel", "notifications/tasks/status", "skills/list", "skills/get",
    "resources/directory/read", "notifications/subscriptions/acknowledged",
}  # fmt: skip


def test_method_table_is_complete_and_consistent() -> None:
    assert set(methods.METHODS) == _EXPECTED_METHODS
    for name, spec in methods.METHODS.items():
        assert spec.method == name
        assert (spec.kind == "notification") == name.startswith("notifications/")
        # tasks/result answers with the wrapped request's result: the caller names it.
        assert (spec.result_cls is None) == (spec.kind == "notification"
                                             or name == "tasks/result")
        assert spec.params_cls is not None
        assert spec.since in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25",
                              "2026-07-28")
    call = methods.request_spec("tools/call")
    assert call is not None and call.params_cls is mt.CallToolRequestParams
    assert methods.request_spec("notifications/progress") is None
    assert methods.request_spec("nope") is None
    assert methods.notification_spec("notifications/progress") is not None
    assert methods.METHODS["resources/metadata"].since == "2025-11-25"
    assert "resources/metadata" in methods.EXTENSION_METHODS
    assert not methods.METHODS["elicitation/create"].allowed_in("2025-03-26")
    assert methods.METHODS["elicitation/create"].allowed_in("2025-06-18")
    assert methods.capability_since(("completions",)) == "2025-03-26"


def test_method_capabilities() -> None:
    m = methods.METHODS
    assert m["tools/call"].capability == ("tools",)
    assert m["tools/call"].capability_owner == "server"
    assert m["resources/subscribe"].capability == ("resources", "subscribe")
    assert m["completion/complete"].capability == ("completions",)
    assert m["sampling/createMessage"].capability_owner == "client"
    assert m["sampling/createMessage"].direction == "server_to_client"
    assert m["ping"].capability is None and m["ping"].direction == "both"
    caps = mt.ServerCapabilities(resources=mt.ResourcesCapability(list_changed=True), logging={})
    assert methods.has_capability(caps, ("resources",))
    assert methods.has_capability(caps, ("logging",))
    assert not methods.has_capability(caps, ("resources", "subscribe"))
    assert not methods.has_capability(caps, ("tools",))
    assert methods.has_capability({"sampling": {}}, ("sampling",))
    assert not methods.has_capability(
        {"resources": {"subscribe": False}}, ("resources", "subscribe")
    )


@pytest.mark.parametrize("spec", list(methods.METHODS.values()), ids=lambda s: s.method)
def test_every_method_params_parse(spec: methods.MethodSpec) -> None:
    members = _members(spec.params_cls) or (spec.params_cls,)
    for cls in members:
        obj = build(cls, full=True)
        assert from_wire(to_wire(obj), spec.params_cls) == obj
    if spec.result_cls is not None:
        result = build(spec.result_cls, full=False)
        assert from_wire(to_wire(result), spec.result_cls) == result
