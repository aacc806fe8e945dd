"""The converter: unions, unknown fields, strict validation with paths, and its speed."""

import time
from typing import Any

import pytest

import mcpactor.protocol.types as mt
from mcpactor.protocol.convert import from_wire, to_wire, wire_name
from mcpactor.protocol.errors import INVALID_PARAMS, InvalidParams


def invalid(data: Any, cls: Any, **kwargs: Any) -> InvalidParams:
    with pytest.raises(InvalidParams) as info:
        from_wire(data, cls, **kwargs)
    err = info.value
    assert err.code == INVALID_PARAMS
    assert set(err.data) == {"path", "reason"}
    assert err.data["path"] in err.message and err.data["reason"] in err.message
    assert err.__cause__ is not None  # the cattrs detail stays available for debugging
    return err


def test_wire_name() -> None:
    assert wire_name("meta") == "_meta"
    assert wire_name("name") == "name"
    assert wire_name("mime_type") == "mimeType"
    assert wire_name("read_only_hint") == "readOnlyHint"


# --- unions ----------------------------------------------------------------------------

CONTENT_WIRE = [
    {"type": "text", "text": "hi"},
    {"type": "image", "data": "aW1n", "mimeType": "image/png"},
    {"type": "audio", "data": "YXU=", "mimeType": "audio/wav"},
    {"type": "resource_link", "uri": "file:///a", "name": "a", "mimeType": "text/plain"},
    {"type": "resource", "resource": {"uri": "file:///b", "text": "body"}},
    {"type": "resource", "resource": {"uri": "file:///c", "blob": "AAE=", "mimeType": "x/y"}},
]


def test_content_union_discriminated_by_type() -> None:
    result = from_wire({"content": CONTENT_WIRE}, mt.CallToolResult)
    kinds = [type(block) for block in result.content]
    assert kinds == [
        mt.TextContent,
        mt.ImageContent,
        mt.AudioContent,
        mt.ResourceLink,
        mt.EmbeddedResource,
        mt.EmbeddedResource,
    ]
    embedded = result.content[4]
    assert isinstance(embedded, mt.EmbeddedResource)
    assert isinstance(embedded.resource, mt.TextResourceContents)
    blob = result.content[5]
    assert isinstance(blob, mt.EmbeddedResource)
    assert isinstance(blob.resource, mt.BlobResourceContents)
    assert blob.resource.mime_type == "x/y"
    assert to_wire(result) == {"content": CONTENT_WIRE}


def test_prompt_message_content_is_a_content_block() -> None:
    wire = {"messages": [{"role": "user", "content": CONTENT_WIRE[3]}]}
    result = from_wire(wire, mt.GetPromptResult)
    assert isinstance(result.messages[0].content, mt.ResourceLink)
    assert to_wire(result) == wire


def test_sampling_content_single_or_list() -> None:
    single = {"role": "user", "content": {"type": "text", "text": "q"}}
    assert isinstance(from_wire(single, mt.SamplingMessage).content, mt.TextContent)
    many = {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "c1", "name": "add", "input": {"a": 1}},
            {
                "type": "tool_result",
                "toolUseId": "c1",
                "content": [{"type": "text", "text": "2"}],
                "isError": False,
            },
        ],
    }
    message = from_wire(many, mt.SamplingMessage)
    assert isinstance(message.content, list)
    use, res = message.content
    assert isinstance(use, mt.ToolUseContent) and use.input == {"a": 1}
    assert isinstance(res, mt.ToolResultContent) and res.tool_use_id == "c1"
    assert to_wire(message) == many
    # tool_use is sampling-only: not a tool result content block.
    err = invalid({"content": [many["content"][0]]}, mt.CallToolResult)
    assert err.data["path"] == "content.0"


def test_create_message_with_tools() -> None:
    wire = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "2+2?"}}],
        "maxTokens": 100,
        "tools": [{"name": "add", "inputSchema": {"type": "object"}}],
        "toolChoice": {"mode": "auto"},
        "modelPreferences": {"hints": [{"name": "claude"}], "speedPriority": 1},
        "includeContext": "none",
    }
    params = from_wire(wire, mt.CreateMessageRequestParams)
    assert params.tool_choice == mt.ToolChoice(mode="auto")
    assert params.model_preferences is not None
    assert params.model_preferences.speed_priority == 1
    assert to_wire(params) == wire


def test_resource_contents_by_text_or_blob() -> None:
    wire = {
        "contents": [
            {"uri": "file:///d/a", "name": "a", "isCollection": False, "text": "x"},
            {"uri": "file:///d/b", "blob": "AA==", "size": 1},
        ]
    }
    result = from_wire(wire, mt.ReadResourceResult)
    first, second = result.contents
    assert isinstance(first, mt.TextResourceContents) and first.is_collection is False
    assert isinstance(second, mt.BlobResourceContents) and second.size == 1
    assert to_wire(result) == wire
    err = invalid({"contents": [{"uri": "u"}]}, mt.ReadResourceResult)
    assert err.data["path"] == "contents.0"


def test_completion_refs() -> None:
    prompt = {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "v"}}
    params = from_wire(prompt, mt.CompleteRequestParams)
    assert params.ref == mt.PromptReference(name="p")
    resource = {
        "ref": {"type": "ref/resource", "uri": "test://{id}"},
        "argument": {"name": "id", "value": "1"},
        "context": {"arguments": {"other": "x"}},
    }
    params = from_wire(resource, mt.CompleteRequestParams)
    assert params.ref == mt.ResourceReference(uri="test://{id}")
    assert isinstance(params.ref, mt.ResourceTemplateReference)
    assert to_wire(params) == resource
    err = invalid({**prompt, "ref": {"type": "ref/tool", "name": "x"}}, mt.CompleteRequestParams)
    assert err.data["path"] == "ref"
    assert "ref/tool" in err.data["reason"]


def test_elicitation_modes() -> None:
    form_2025_06 = {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}
    form = from_wire(form_2025_06, mt.ElicitRequestParams)
    assert isinstance(form, mt.ElicitRequestFormParams) and form.mode is None
    assert to_wire(form) == form_2025_06
    url_wire = {"mode": "url", "message": "m", "url": "https://x", "elicitationId": "e1"}
    url = from_wire(url_wire, mt.ElicitRequestParams)
    assert isinstance(url, mt.ElicitRequestURLParams) and url.elicitation_id == "e1"
    assert to_wire(url) == url_wire
    assert invalid({**url_wire, "mode": "telepathy"}, mt.ElicitRequestParams).data["path"] == ""
    assert invalid({**url_wire, "mode": ["url"]}, mt.ElicitRequestParams).data["path"] == ""
    result = from_wire({"action": "accept", "content": {"tags": ["a"], "n": 2}}, mt.ElicitResult)
    assert result.content == {"tags": ["a"], "n": 2}


# --- unknown fields and _meta ----------------------------------------------------------


def test_unknown_fields_survive_nested() -> None:
    wire = {
        "tools": [
            {
                "name": "t",
                "inputSchema": {"type": "object", "x-schema-ext": 1},
                "execution": {"taskSupport": "optional", "futureMode": "x"},
                "futureField": {"kind": "later"},
                "annotations": {"readOnlyHint": True, "futureHint": "maybe"},
                "icons": [{"src": "https://i", "sizes": ["16x16"], "x-icon": 2}],
                "_meta": {"vendor/key": [1]},
            }
        ],
        "nextCursor": "c2",
        "_meta": {"page": 2},
        "futureTop": {"a": None},
    }
    result = from_wire(wire, mt.ListToolsResult)
    tool = result.tools[0]
    assert tool.extra == {"futureField": {"kind": "later"}}
    assert tool.execution is not None and tool.execution.task_support == "optional"
    assert tool.execution.extra == {"futureMode": "x"}
    assert tool.annotations is not None and tool.annotations.extra == {"futureHint": "maybe"}
    assert tool.icons is not None and tool.icons[0].extra == {"x-icon": 2}
    assert tool.meta == {"vendor/key": [1]}
    assert result.extra == {"futureTop": {"a": None}}
    assert result.meta == {"page": 2}
    assert to_wire(result) == wire


def test_unknown_fields_inside_content_and_capabilities() -> None:
    wire = {
        "protocolVersion": "2025-11-25",
        "capabilities": {
            "roots": {"listChanged": True},
            "elicitation": {"form": {}, "url": {}},
            "tasks": {"list": {}, "futureTaskFlag": {}},
            "futureCapability": {"x": 1},
        },
        "clientInfo": {"name": "c", "version": "1", "icons": [{"src": "data:"}]},
    }
    params = from_wire(wire, mt.InitializeRequestParams)
    assert params.capabilities.extra == {"futureCapability": {"x": 1}}
    tasks = params.capabilities.tasks
    assert tasks is not None and tasks.list == {} and tasks.extra == {"futureTaskFlag": {}}
    assert params.capabilities.elicitation == mt.ElicitationCapability(form={}, url={})
    assert to_wire(params) == wire
    result = {"content": [{"type": "text", "text": "t", "x-lang": "en"}], "x-top": 1}
    assert to_wire(from_wire(result, mt.CallToolResult)) == result


def test_named_member_wins_over_duplicate_extra() -> None:
    content = mt.TextContent(text="real", extra={"text": "stray", "other": 1})
    assert to_wire(content) == {"text": "real", "type": "text", "other": 1}


def test_meta_is_underscore_meta() -> None:
    params = from_wire({"name": "x", "_meta": {"progressToken": 5}}, mt.CallToolRequestParams)
    assert params.meta == {"progressToken": 5}
    assert mt.progress_token_of(params.meta) == 5
    assert mt.progress_token_of({"progressToken": True}) is None
    assert mt.progress_token_of(None) is None
    # A member literally called "meta" is unknown, so it is kept, not mistaken for _meta.
    odd = from_wire({"name": "x", "meta": 1}, mt.CallToolRequestParams)
    assert odd.meta is None and odd.extra == {"meta": 1}
    assert to_wire(odd) == {"name": "x", "meta": 1}


def test_to_wire_lists_dicts_and_scalars() -> None:
    blocks = [mt.TextContent(text="a"), mt.ImageContent(data="d", mime_type="image/png")]
    assert to_wire(blocks) == [
        {"text": "a", "type": "text"},
        {"data": "d", "mimeType": "image/png", "type": "image"},
    ]
    assert to_wire({"x": mt.Root(uri="file:///")}) == {"x": {"uri": "file:///"}}
    assert to_wire("s") == "s"
    assert to_wire(None) is None


def test_logging_data_is_any_json() -> None:
    wire = {"level": "warning", "logger": "db", "data": {"rows": [1, 2], "ok": None}}
    params = from_wire(wire, mt.LoggingMessageNotificationParams)
    assert params.data == {"rows": [1, 2], "ok": None}
    assert to_wire(params) == wire


# --- validation errors -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "cls", "path", "reason_part"),
    [
        ({"name": 5}, mt.CallToolRequestParams, "name", "string"),
        ({}, mt.CallToolRequestParams, "name", "missing"),
        ({"name": "x", "arguments": []}, mt.CallToolRequestParams, "arguments", "object"),
        ({"name": "x", "arguments": "{}"}, mt.CallToolRequestParams, "arguments", "object"),
        ({"name": "x", "_meta": "m"}, mt.CallToolRequestParams, "_meta", "object"),
        ("name", mt.CallToolRequestParams, "", "object"),
        ([], mt.CallToolRequestParams, "", "object"),
        ({"content": "text"}, mt.CallToolResult, "content", "array"),
        ({"content": [{"type": "text", "text": 3}]}, mt.CallToolResult, "content.0.text", "string"),
        ({"content": [{"type": "text"}]}, mt.CallToolResult, "content.0.text", "missing"),
        ({"content": [{"text": "no type"}]}, mt.CallToolResult, "content.0", "type"),
        ({"content": [], "isError": "true"}, mt.CallToolResult, "isError", "boolean"),
        ({"content": [], "isError": 1}, mt.CallToolResult, "isError", "boolean"),
        ({"values": ["a"], "total": "3"}, mt.Completion, "total", "integer"),
        ({"values": ["a"], "total": True}, mt.Completion, "total", "integer"),
        ({"values": ["a"], "total": 2.5}, mt.Completion, "total", "integer"),
        ({"values": "abc"}, mt.Completion, "values", "array"),
        ({"values": ["a", 1]}, mt.Completion, "values.1", "string"),
        ({"progressToken": "t", "progress": "1"}, mt.ProgressNotificationParams, "progress", "number"),
        ({"progressToken": 1.5, "progress": 1}, mt.ProgressNotificationParams, "progressToken", "string or integer"),
        ({"progressToken": None, "progress": 1}, mt.ProgressNotificationParams, "progressToken", "null"),
        ({"level": "loud"}, mt.SetLevelRequestParams, "level", "'loud' is not one of"),
        ({"name": "p", "arguments": {"a": 1}}, mt.GetPromptRequestParams, "arguments.a", "string"),
        (
            {"tools": [{"name": "t", "inputSchema": {}, "annotations": {"readOnlyHint": "yes"}}]},
            mt.ListToolsResult,
            "tools.0.annotations.readOnlyHint",
            "boolean",
        ),
        (
            {"protocolVersion": "1", "capabilities": {"roots": []}, "clientInfo": {"name": "c", "version": "1"}},
            mt.InitializeRequestParams,
            "capabilities.roots",
            "object",
        ),
        ({"messages": [{"role": "system", "content": {"type": "text", "text": "x"}}], "maxTokens": 1},
         mt.CreateMessageRequestParams, "messages.0.role", "'system' is not one of"),
        ({"messages": [], "maxTokens": 1.0}, mt.CreateMessageRequestParams, "maxTokens", "integer"),
    ],
)  # fmt: skip
def test_errors_name_the_wire_path(data: Any, cls: type, path: str, reason_part: str) -> None:
    err = invalid(data, cls)
    assert err.data["path"] == path
    assert reason_part in err.data["reason"]


def test_error_path_prefix_and_message() -> None:
    err = invalid({"name": 5}, mt.CallToolRequestParams, path="params")
    assert err.data == {"path": "params.name", "reason": "expected a string, got number"}
    assert (
        err.message == "Invalid CallToolRequestParams: params.name: expected a string, got number"
    )
    err = invalid(None, mt.CallToolRequestParams, path="params")
    assert err.data["path"] == "params"
    assert "null" in err.data["reason"]


def test_numbers_keep_their_json_form() -> None:
    # An integral float stays an int: no silent conversion either way.
    params = from_wire(
        {"progressToken": 1, "progress": 3, "total": 10.0}, mt.ProgressNotificationParams
    )
    assert params.progress == 3 and type(params.progress) is int
    assert type(params.total) is float


def test_hot_path_speed() -> None:
    """Prints the cost of the tools/call pair; not a pass/fail threshold."""
    params_wire = {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": {"progressToken": 7}}
    result = mt.CallToolResult(content=[mt.TextContent(text="3")])
    assert from_wire(params_wire, mt.CallToolRequestParams).name == "add"
    assert to_wire(result) == {"content": [{"text": "3", "type": "text"}]}
    rounds = 20_000
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(rounds):
            from_wire(params_wire, mt.CallToolRequestParams)
            to_wire(result)
        best = min(best, (time.perf_counter() - start) / rounds)
    print(f"\nfrom_wire(CallToolRequestParams) + to_wire(CallToolResult): {best * 1e6:.2f} us")
