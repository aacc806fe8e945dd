"""The official Python SDK client (``mcp``) drives OUR everything server over stdio. Initialize, versions and tools."""

from __future__ import annotations

import base64
import json
import warnings
from typing import Any

import pytest
import trio
from interop_support import wait_until
from mcp import types
from mcp.shared.exceptions import MCPError
from sdk_stdio_support import (
    ELICIT_ANSWERS,
    EXPECTED_TOOLS,
    LATEST,
    SAMPLED_TEXT,
    SERVER_NAME,
    TEST_TIMEOUT,
    Recorder,
    _texts,
    raw_session,
    sdk_session,
)


async def test_initialize_negotiates_latest_and_reports_server_info() -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_session() as session:
            result = session.initialize_result
            assert result is not None
            assert result.protocol_version == LATEST
            assert session.protocol_version == LATEST
            assert result.server_info.name == SERVER_NAME
            assert result.server_info.version == "1.0.0"
            caps = result.capabilities
            assert caps.tools is not None
            assert caps.prompts is not None
            assert caps.resources is not None and caps.resources.subscribe is True
            assert caps.logging is not None
            assert caps.completions is not None
            assert result.instructions
            assert isinstance(await session.send_ping(), types.EmptyResult)


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18"])
async def test_older_protocol_version_is_negotiated(version: str) -> None:
    """The SDK's ClientSession.initialize() always asks for its latest handshake version;
    an older one goes through its public send_request/adopt, as a pinned client would."""
    with trio.fail_after(TEST_TIMEOUT):
        async with raw_session() as session:
            result = await session.send_request(
                types.InitializeRequest(
                    params=types.InitializeRequestParams(
                        protocol_version=version,
                        capabilities=types.ClientCapabilities(),
                        client_info=types.Implementation(name="sdk-old-client", version="0.1"),
                    )
                ),
                types.InitializeResult,
            )
            assert result.protocol_version == version
            assert result.server_info.name == SERVER_NAME
            session.adopt(result)
            await session.send_notification(types.InitializedNotification())
            assert session.protocol_version == version

            tools = await session.list_tools()
            assert EXPECTED_TOOLS <= {tool.name for tool in tools.tools}
            called = await session.call_tool("test_simple_text")
            assert _texts(called) == ["This is a simple text response for testing."]
            # completion/complete exists in every version (2024-11-05 had no capability
            # for it, but the method was there).
            completed = await session.complete(
                types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
                {"name": "arg2", "value": "b"},
            )
            assert completed.completion.values == ["beta"]
            await session.send_ping()


async def test_unknown_protocol_version_gets_the_latest() -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with raw_session() as session:
            result = await session.send_request(
                types.InitializeRequest(
                    params=types.InitializeRequestParams(
                        protocol_version="1999-01-01",
                        capabilities=types.ClientCapabilities(),
                        client_info=types.Implementation(name="sdk-odd-client", version="0.1"),
                    )
                ),
                types.InitializeResult,
            )
            assert result.protocol_version == LATEST


# ------------------------------------------------------------------------- tools


def _check_tool_listing(tools: list[types.Tool]) -> None:
    names = {tool.name for tool in tools}
    assert EXPECTED_TOOLS <= names, f"missing tools: {sorted(EXPECTED_TOOLS - names)}"
    for tool in tools:
        assert tool.description, f"{tool.name} has no description"
        assert tool.input_schema.get("type") == "object", tool.name
        for prop, schema in tool.input_schema.get("properties", {}).items():
            assert isinstance(schema, dict), (tool.name, prop)
    schema_tool = next(tool for tool in tools if tool.name == "json_schema_2020_12_tool")
    schema = schema_tool.input_schema
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "address" in schema["$defs"]
    assert schema["additionalProperties"] is False
    # SEP-2106's wider vocabulary reaches the client as written.
    assert schema["$defs"]["address"]["$anchor"] == "addressDef"
    assert schema["allOf"][0]["anyOf"] == [{"required": ["phone"]}, {"required": ["email"]}]
    assert {"if", "then", "else"} <= set(schema)


def _expect_single_text(text: str):
    def check(result: types.CallToolResult, recorder: Recorder) -> None:
        assert not result.is_error
        assert _texts(result) == [text]

    return check


def _expect_error_naming(fragment: str):
    def check(result: types.CallToolResult, recorder: Recorder) -> None:
        assert result.is_error
        assert fragment in _texts(result)[0]

    return check


def _check_image(result: types.CallToolResult, recorder: Recorder) -> None:
    assert not result.is_error
    images = [c for c in result.content if isinstance(c, types.ImageContent)]
    assert len(images) == 1
    assert images[0].mime_type == "image/png"
    assert base64.b64decode(images[0].data, validate=True).startswith(b"\x89PNG\r\n\x1a\n")


def _check_audio(result: types.CallToolResult, recorder: Recorder) -> None:
    assert not result.is_error
    audios = [c for c in result.content if isinstance(c, types.AudioContent)]
    assert len(audios) == 1
    assert audios[0].mime_type == "audio/wav"
    wav = base64.b64decode(audios[0].data, validate=True)
    assert wav[:4] == b"RIFF" and wav[8:12] == b"WAVE"


def _check_embedded(result: types.CallToolResult, recorder: Recorder) -> None:
    assert not result.is_error
    (item,) = result.content
    assert isinstance(item, types.EmbeddedResource)
    assert str(item.resource.uri) == "test://embedded-resource"
    assert item.resource.mime_type == "text/plain"
    assert isinstance(item.resource, types.TextResourceContents)
    assert item.resource.text == "This is an embedded resource content."


def _check_mixed(result: types.CallToolResult, recorder: Recorder) -> None:
    """conformance `tools-call-mixed-content`: >= 2 items, one each of text, image,
    resource (intended: exactly these three, in this order)."""
    assert not result.is_error
    kinds = [c.type for c in result.content]
    assert kinds == ["text", "image", "resource"], (
        f"expected text, image and resource content blocks, got {kinds}: {result.content!r}"
    )
    text, image, resource = result.content
    assert isinstance(text, types.TextContent) and text.text == "Multiple content types test:"
    assert isinstance(image, types.ImageContent) and image.mime_type == "image/png"
    assert isinstance(resource, types.EmbeddedResource)
    assert str(resource.resource.uri) == "test://mixed-content-resource"
    assert resource.resource.mime_type == "application/json"
    assert isinstance(resource.resource, types.TextResourceContents)
    assert json.loads(resource.resource.text) == {"test": "data", "value": 123}


def _check_error(result: types.CallToolResult, recorder: Recorder) -> None:
    assert result.is_error is True
    assert _texts(result)[0] == "This tool intentionally returns an error for testing"


def _check_sampling(result: types.CallToolResult, recorder: Recorder) -> None:
    assert not result.is_error
    assert _texts(result) == [f"LLM response: {SAMPLED_TEXT}"]
    (request,) = recorder.sampling
    assert request.max_tokens == 100
    (message,) = request.messages
    assert message.role == "user"
    assert isinstance(message.content, types.TextContent)
    assert message.content.text == "Test prompt for sampling"


def _elicited(recorder: Recorder, message: str) -> Any:
    found = [e for e in recorder.elicitations if e.message == message]
    assert len(found) == 1, f"expected one elicitation/create {message!r}, got {len(found)}"
    return found[0]


def _check_elicitation_text(result: types.CallToolResult, prefix: str, answer: dict) -> None:
    assert not result.is_error
    (text,) = _texts(result)
    assert text.startswith(prefix + "action=accept, content="), text
    assert json.loads(text.split("content=", 1)[1]) == answer


def _check_elicitation(result: types.CallToolResult, recorder: Recorder) -> None:
    message = "Please provide your information"
    request = _elicited(recorder, message)
    schema = request.requested_schema
    assert schema["type"] == "object"
    assert schema["properties"]["username"] == {"type": "string", "description": "User's response"}
    assert schema["properties"]["email"] == {
        "type": "string",
        "description": "User's email address",
    }
    assert sorted(schema["required"]) == ["email", "username"]
    _check_elicitation_text(result, "User response: ", ELICIT_ANSWERS[message])


def _check_sep1034(result: types.CallToolResult, recorder: Recorder) -> None:
    message = "Please review and update the form fields with defaults"
    props = _elicited(recorder, message).requested_schema["properties"]
    assert (props["name"]["type"], props["name"]["default"]) == ("string", "John Doe")
    assert (props["age"]["type"], props["age"]["default"]) == ("integer", 30)
    assert (props["score"]["type"], props["score"]["default"]) == ("number", 95.5)
    assert props["status"]["type"] == "string"
    assert props["status"]["default"] == "active" and "active" in props["status"]["enum"]
    assert (props["verified"]["type"], props["verified"]["default"]) == ("boolean", True)
    _check_elicitation_text(result, "Elicitation completed: ", ELICIT_ANSWERS[message])


def _check_sep1330(result: types.CallToolResult, recorder: Recorder) -> None:
    message = "Please select options from the enum fields"
    props = _elicited(recorder, message).requested_schema["properties"]
    single = props["untitledSingle"]
    assert single["type"] == "string" and isinstance(single["enum"], list)
    assert "oneOf" not in single and "enumNames" not in single
    titled = props["titledSingle"]
    assert titled["type"] == "string" and "enum" not in titled
    assert all(set(o) == {"const", "title"} for o in titled["oneOf"])
    legacy = props["legacyEnum"]
    assert len(legacy["enum"]) == len(legacy["enumNames"]) == 3
    multi = props["untitledMulti"]
    assert multi["type"] == "array" and multi["items"]["type"] == "string"
    assert isinstance(multi["items"]["enum"], list) and "anyOf" not in multi["items"]
    titled_multi = props["titledMulti"]
    assert titled_multi["type"] == "array" and "enum" not in titled_multi["items"]
    assert all(set(o) == {"const", "title"} for o in titled_multi["items"]["anyOf"])
    _check_elicitation_text(result, "Elicitation completed: ", ELICIT_ANSWERS[message])


def _check_schema_tool(result: types.CallToolResult, recorder: Recorder) -> None:
    assert not result.is_error
    (text,) = _texts(result)
    prefix = "JSON Schema 2020-12 tool called with: "
    assert text.startswith(prefix), text
    assert json.loads(text[len(prefix) :]) == {
        "name": "Ada",
        "address": {"street": "1 Main St", "city": "Springfield"},
    }


#: tool name -> (arguments, check(result, recorder))
TOOL_CALLS: dict[str, tuple[dict[str, Any] | None, Any]] = {
    "test_simple_text": (None, _expect_single_text("This is a simple text response for testing.")),
    "test_image_content": ({}, _check_image),
    "test_audio_content": ({}, _check_audio),
    "test_embedded_resource": ({}, _check_embedded),
    "test_multiple_content_types": ({}, _check_mixed),
    "test_error_handling": ({}, _check_error),
    "test_tool_with_logging": ({}, _expect_single_text("Tool with logging executed successfully")),
    "test_tool_with_progress": ({}, _expect_single_text("Progress reported: 0, 50 and 100 of 100")),
    "test_reconnection": (
        {},
        _expect_single_text(
            "Reconnection test completed successfully. If you received this, "
            "the client properly reconnected after stream closure."
        ),
    ),
    "test_update_watched_resource": (
        {},
        _expect_single_text("Sent an update notification for test://watched-resource"),
    ),
    "test_sampling": ({"prompt": "Test prompt for sampling"}, _check_sampling),
    "test_elicitation": ({"message": "Please provide your information"}, _check_elicitation),
    "test_elicitation_sep1034_defaults": ({}, _check_sep1034),
    "test_elicitation_sep1330_enums": ({}, _check_sep1330),
    "json_schema_2020_12_tool": (
        {"name": "Ada", "address": {"street": "1 Main St", "city": "Springfield"}},
        _check_schema_tool,
    ),
    # Task tools (examples/everything_tasks.py): the SDK has no 2025-11-25 tasks, so an
    # optional one answers as a plain call.
    "greet": ({"name": "SDK"}, _expect_single_text("Hello, SDK!")),
    "slow_compute": ({"seconds": 0, "label": "x"}, _expect_single_text("Computed x after 0 s")),
    # 2026-07-28 tools: in this handshake session (no roots capability declared) the
    # ones that list roots say so as an isError result.
    "test_input_required_result_list_roots": ({}, _expect_error_naming("'roots' capability")),
    "test_input_required_result_multiple_inputs": (
        {}, _expect_error_naming("'roots' capability")),
    "test_header_mirrored": (
        {"region": "us-west1", "query": "q"}, _expect_single_text("ran 'q' in us-west1")),
}


#: Tools that answer a plain call with a JSON-RPC error on purpose: a tool that must be
#: called as a task (-32601, as the tasks page says), one raising a protocol error.
TOOL_ERRORS: dict[str, int] = {
    "failing_job": types.METHOD_NOT_FOUND,
    "test_tool_with_task": types.METHOD_NOT_FOUND,
    "protocol_error_job": types.INTERNAL_ERROR,
}


async def test_list_and_call_every_tool() -> None:
    """Every listed tool is called with what it needs; all failures are reported together."""
    recorder = Recorder()
    failures: list[str] = []
    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_session(recorder) as session:
            listing = await session.list_tools()
            assert listing.next_cursor is None
            _check_tool_listing(listing.tools)
            for tool in listing.tools:
                args, check = TOOL_CALLS.get(tool.name, ({}, None))
                if tool.name in TOOL_ERRORS:
                    with pytest.raises(MCPError) as info:
                        await session.call_tool(tool.name, args)
                    if info.value.error.code != TOOL_ERRORS[tool.name]:
                        failures.append(f"{tool.name}: {info.value.error!r}")
                    continue
                try:
                    result = await session.call_tool(tool.name, args)
                    if check is not None:
                        check(result, recorder)
                    elif result.is_error:
                        failures.append(f"{tool.name}: unexpected isError result {result!r}")
                except Exception as exc:  # collect, so one bad tool does not hide the rest
                    failures.append(f"{tool.name}: {type(exc).__name__}: {exc}")
    assert not failures, "tool calls failed:\n" + "\n".join(failures)


async def test_structured_content_is_valid_against_output_schema() -> None:
    """Tools with an outputSchema must return structuredContent that validates (the SDK
    client checks this itself in call_tool) and a text copy of it."""
    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_session() as session:
            listing = await session.list_tools()
            for tool in listing.tools:
                if tool.output_schema is None:
                    continue
                args = TOOL_CALLS.get(tool.name, ({}, None))[0]
                result = await session.call_tool(tool.name, args)  # validates
                assert result.structured_content is not None, tool.name
                (text,) = _texts(result)
                assert json.loads(text) == result.structured_content, tool.name


async def test_unknown_tool_is_a_jsonrpc_error() -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_session() as session:
            with pytest.raises(MCPError) as info:
                await session.call_tool("no_such_tool", {})
            assert info.value.error.code == types.INVALID_PARAMS
            # the session is still fine
            assert _texts(await session.call_tool("test_simple_text")) == [
                "This is a simple text response for testing."
            ]


async def test_progress_notifications_reach_the_callback() -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_session() as session:
            result = await session.call_tool(
                "test_tool_with_progress", {}, progress_callback=on_progress
            )
            assert _texts(result) == ["Progress reported: 0, 50 and 100 of 100"]
            # The SDK runs each progress callback in a task of its own: wait for all three.
            await wait_until(lambda: len(progress) >= 3, "three progress notifications")
            assert len(progress) == 3
            # (order of the callbacks' tasks is the SDK's business; the values are ours)
            assert sorted(p[0] for p in progress) == [0, 50, 100]
            assert {p[1] for p in progress} == {100}
            assert all(p[2] for p in progress)


async def test_logging_set_level_and_log_messages() -> None:
    recorder = Recorder()
    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_session(recorder) as session:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated for 2026-07-28 only
                assert isinstance(await session.set_logging_level("debug"), types.EmptyResult)
            result = await session.call_tool("test_tool_with_logging", {})
            assert _texts(result) == ["Tool with logging executed successfully"]
            await wait_until(lambda: len(recorder.logs) >= 3, "three log messages")
            assert sorted(str(log.data) for log in recorder.logs) == sorted(
                ["Tool execution started", "Tool processing data", "Tool execution completed"]
            )
            assert {log.level for log in recorder.logs} == {"info"}


# ------------------------------------------------------------------------- cancellation


async def test_cancel_slow_tool_then_keep_serving() -> None:
    """Cancelling the scope around call_tool makes the SDK send notifications/cancelled;
    the server stops the tool (and so its own sampling request) and keeps serving."""
    recorder = Recorder()
    recorder.sampling_gate = trio.Event()  # never set: the client "thinks" forever
    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_session(recorder) as session:
            with trio.CancelScope() as scope:

                async def cancel_once_sampling_started() -> None:
                    await recorder.sampling_started.wait()
                    scope.cancel()

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(cancel_once_sampling_started)
                    await session.call_tool("test_sampling", {"prompt": "never answered"})
                    pytest.fail("call_tool returned although it was cancelled")
            assert scope.cancelled_caught
            # The server gave up on the tool, so it cancels the sampling request it made.
            with trio.fail_after(5):
                await recorder.sampling_cancelled.wait()

            recorder.sampling_gate = None
            result = await session.call_tool(
                "test_sampling", {"prompt": "Test prompt for sampling"}
            )
            assert _texts(result) == [f"LLM response: {SAMPLED_TEXT}"]
            assert _texts(await session.call_tool("test_simple_text")) == [
                "This is a simple text response for testing."
            ]
            await session.send_ping()


async def test_request_timeout_then_keep_serving() -> None:
    """A read timeout on call_tool: the SDK raises REQUEST_TIMEOUT and cancels the request."""
    recorder = Recorder()
    recorder.sampling_gate = trio.Event()
    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_session(recorder) as session:
            with pytest.raises(MCPError) as info:
                await session.call_tool(
                    "test_sampling", {"prompt": "never answered"}, read_timeout_seconds=0.5
                )
            assert info.value.error.code == types.REQUEST_TIMEOUT
            with trio.fail_after(5):
                await recorder.sampling_cancelled.wait()
            assert _texts(await session.call_tool("test_simple_text")) == [
                "This is a simple text response for testing."
            ]


# ------------------------------------------------------------------------- resources

