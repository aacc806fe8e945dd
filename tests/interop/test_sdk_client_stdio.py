"""The official Python SDK client (``mcp``) drives OUR everything server over stdio.

The server is a real subprocess, ``python -m mcpactor.cli run
examples/everything_server.py:server``; the client is ``mcp.client.stdio.stdio_client``
plus ``mcp.client.session.ClientSession`` running on Trio through anyio. What each tool,
resource and prompt must answer is written down in docs/conformance.md.

Each test opens its own session (one subprocess), bounded by ``trio.fail_after``.
"""

from __future__ import annotations

import base64
import json
import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
import trio
from interop_support import OUR_EVERYTHING, ROOT, subprocess_env, wait_until
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.interop

#: Bound for one whole test: spawn, handshake, calls, shutdown.
TEST_TIMEOUT = 20

SERVER_NAME = "mcp-conformance-test-server"
LATEST = "2025-11-25"

EXPECTED_TOOLS = {
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_error_handling",
    "test_tool_with_logging",
    "test_tool_with_progress",
    "test_reconnection",
    "test_update_watched_resource",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "json_schema_2020_12_tool",
}

SAMPLED_TEXT = "This is a test response from the client"

#: What the client answers each elicitation (keyed by the elicitation's message).
ELICIT_ANSWERS: dict[str, dict[str, Any]] = {
    "Please provide your information": {"username": "testuser", "email": "test@example.com"},
    "Please review and update the form fields with defaults": {
        "name": "Jane Smith",
        "age": 25,
        "score": 88.5,
        "status": "inactive",
        "verified": False,
    },
    "Please select options from the enum fields": {
        "untitledSingle": "option1",
        "titledSingle": "value1",
        "legacyEnum": "opt1",
        "untitledMulti": ["option1", "option2"],
        "titledMulti": ["value1", "value2"],
    },
}


class Recorder:
    """The client's side of the conversation: callbacks that record what the server sent."""

    def __init__(self) -> None:
        self.sampling: list[types.CreateMessageRequestParams] = []
        self.elicitations: list[types.ElicitRequestFormParams] = []
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.notifications: list[Any] = []
        #: When set, sampling blocks until this event (a "slow" client, for cancellation).
        self.sampling_gate: trio.Event | None = None
        self.sampling_started = trio.Event()
        self.sampling_cancelled = trio.Event()
        #: Declared (roots capability) only when not None.
        self.roots: list[types.Root] | None = None
        self.roots_asked = 0

    async def sampling_callback(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.sampling.append(params)
        self.sampling_started.set()
        if self.sampling_gate is not None:
            try:
                await self.sampling_gate.wait()
            except trio.Cancelled:
                self.sampling_cancelled.set()
                raise
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=SAMPLED_TEXT),
            model="test-model",
            stop_reason="endTurn",
        )

    async def elicitation_callback(self, context: Any, params: Any) -> types.ElicitResult:
        self.elicitations.append(params)
        answer = ELICIT_ANSWERS.get(params.message)
        if answer is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content=answer)

    async def list_roots_callback(self, context: Any) -> types.ListRootsResult:
        self.roots_asked += 1
        return types.ListRootsResult(roots=self.roots)

    async def logging_callback(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def message_handler(self, message: Any) -> None:
        self.notifications.append(message)

    def callbacks(self) -> dict[str, Any]:
        callbacks = {
            "sampling_callback": self.sampling_callback,
            "elicitation_callback": self.elicitation_callback,
            "logging_callback": self.logging_callback,
            "message_handler": self.message_handler,
        }
        if self.roots is not None:
            callbacks["list_roots_callback"] = self.list_roots_callback
        return callbacks


#: A second mcpactor server: small pages, roots, sampling options, a named logger.
PAGED_SERVER = [
    sys.executable,
    "-m",
    "mcpactor.cli",
    "run",
    "tests/interop/paged_mcpactor_server.py:server",
]


def _server_params(command: list[str] = OUR_EVERYTHING) -> StdioServerParameters:
    env = subprocess_env()
    return StdioServerParameters(
        command=command[0],
        args=command[1:],
        cwd=str(ROOT),
        env={"PYTHONPATH": env["PYTHONPATH"], "PYTHONUNBUFFERED": "1"},
    )


class WireTap:
    """Wraps the SDK transport's read stream and records every message, in wire order,
    before the ClientSession sees it (the SDK runs callbacks in tasks of their own, so
    only the stream shows the order the server wrote messages in)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.messages: list[dict[str, Any]] = []

    def _record(self, item: Any) -> Any:
        message = getattr(item, "message", None)
        if message is not None:
            self.messages.append(message.model_dump(by_alias=True, mode="json", exclude_none=True))
        return item

    async def receive(self) -> Any:
        return self._record(await self.inner.receive())

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __aiter__(self) -> WireTap:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (trio.EndOfChannel, anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> WireTap:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


@asynccontextmanager
async def raw_session(
    recorder: Recorder | None = None,
    tap: list[WireTap] | None = None,
    command: list[str] = OUR_EVERYTHING,
) -> AsyncIterator[ClientSession]:
    """A ClientSession over a fresh server subprocess, NOT yet initialized. With ``tap``
    (a list), the WireTap wrapped around the read stream is appended to it."""
    callbacks = recorder.callbacks() if recorder is not None else {}
    failure: BaseException | None = None
    async with stdio_client(_server_params(command), errlog=sys.stderr) as (read, write):
        if tap is not None:
            read = WireTap(read)
            tap.append(read)
        async with ClientSession(read, write, read_timeout_seconds=10, **callbacks) as session:
            try:
                yield session
            except (Exception, pytest.fail.Exception) as exc:
                # Re-raised below, outside the SDK's task groups, so that a failing
                # assertion reads as itself rather than as nested ExceptionGroups.
                failure = exc
    if failure is not None:
        raise failure


@asynccontextmanager
async def sdk_session(
    recorder: Recorder | None = None,
    tap: list[WireTap] | None = None,
    command: list[str] = OUR_EVERYTHING,
) -> AsyncIterator[ClientSession]:
    """An initialized ClientSession over a fresh server subprocess."""
    async with raw_session(recorder, tap, command) as session:
        await session.initialize()
        yield session


def _texts(result: types.CallToolResult) -> list[str]:
    return [c.text for c in result.content if isinstance(c, types.TextContent)]


# ------------------------------------------------------------------------- lifecycle


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


def _expect_single_text(text: str):
    def check(result: types.CallToolResult, recorder: Recorder) -> None:
        assert not result.is_error
        assert _texts(result) == [text]

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

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


async def test_list_and_read_resources() -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_session() as session:
            listing = await session.list_resources()
            by_uri = {str(r.uri): r for r in listing.resources}
            for uri in ("test://static-text", "test://static-binary", "test://watched-resource"):
                assert uri in by_uri, f"{uri} not listed"
            for resource in listing.resources:
                assert resource.name
            assert by_uri["test://static-text"].mime_type == "text/plain"
            assert by_uri["test://static-binary"].mime_type == "image/png"

            templates = await session.list_resource_templates()
            (template,) = [
                t
                for t in templates.resource_templates
                if t.uri_template == "test://template/{id}/data"
            ]
            assert template.mime_type == "application/json"

            text = await session.read_resource("test://static-text")
            (contents,) = text.contents
            assert isinstance(contents, types.TextResourceContents)
            assert str(contents.uri) == "test://static-text"
            assert contents.mime_type == "text/plain"
            assert contents.text == "This is the content of the static text resource."

            binary = await session.read_resource("test://static-binary")
            (contents,) = binary.contents
            assert isinstance(contents, types.BlobResourceContents)
            assert contents.mime_type == "image/png"
            assert base64.b64decode(contents.blob, validate=True).startswith(PNG_SIGNATURE)

            templated = await session.read_resource("test://template/123/data")
            (contents,) = templated.contents
            assert isinstance(contents, types.TextResourceContents)
            assert str(contents.uri) == "test://template/123/data"
            assert contents.mime_type == "application/json"
            assert json.loads(contents.text) == {
                "id": "123",
                "templateTest": True,
                "data": "Data for ID: 123",
            }

            with pytest.raises(MCPError) as info:
                await session.read_resource("test://no-such-resource")
            assert info.value.error.code in (
                types.INVALID_PARAMS,
                -32002,
            )  # -32002: resource not found


async def test_subscribe_and_unsubscribe() -> None:
    recorder = Recorder()

    def updates() -> list[Any]:
        return [
            n for n in recorder.notifications if isinstance(n, types.ResourceUpdatedNotification)
        ]

    with trio.fail_after(TEST_TIMEOUT), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (un)subscribe are deprecated for 2026-07-28 only
        async with sdk_session(recorder) as session:
            uri = "test://watched-resource"
            assert isinstance(await session.subscribe_resource(uri), types.EmptyResult)
            await session.call_tool("test_update_watched_resource", {})
            await wait_until(lambda: len(updates()) >= 1, "notifications/resources/updated")
            assert str(updates()[0].params.uri) == uri
            assert isinstance(await session.unsubscribe_resource(uri), types.EmptyResult)
            read = await session.read_resource(uri)
            assert read.contents[0].text == "Watched resource content"


# ------------------------------------------------------------------------- prompts


async def test_list_and_get_every_prompt() -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_session() as session:
            listing = await session.list_prompts()
            prompts = {p.name: p for p in listing.prompts}
            assert {
                "test_simple_prompt",
                "test_prompt_with_arguments",
                "test_prompt_with_embedded_resource",
                "test_prompt_with_image",
            } <= set(prompts)
            for prompt in listing.prompts:
                assert prompt.description, f"{prompt.name} has no description"
            args = {
                a.name: a.required for a in prompts["test_prompt_with_arguments"].arguments or []
            }
            assert args == {"arg1": True, "arg2": True}

            simple = await session.get_prompt("test_simple_prompt")
            (message,) = simple.messages
            assert message.role == "user"
            assert isinstance(message.content, types.TextContent)
            assert message.content.text == "This is a simple prompt for testing."

            with_args = await session.get_prompt(
                "test_prompt_with_arguments", {"arg1": "testValue1", "arg2": "testValue2"}
            )
            (message,) = with_args.messages
            assert isinstance(message.content, types.TextContent)
            assert message.content.text == (
                "Prompt with arguments: arg1='testValue1', arg2='testValue2'"
            )

            embedded = await session.get_prompt(
                "test_prompt_with_embedded_resource", {"resourceUri": "test://example-resource"}
            )
            first, second = embedded.messages
            assert isinstance(first.content, types.EmbeddedResource)
            assert str(first.content.resource.uri) == "test://example-resource"
            assert isinstance(first.content.resource, types.TextResourceContents)
            assert first.content.resource.text == "Embedded resource content for testing."
            assert isinstance(second.content, types.TextContent)
            assert second.content.text == "Please process the embedded resource above."

            image = await session.get_prompt("test_prompt_with_image")
            first, second = image.messages
            assert isinstance(first.content, types.ImageContent)
            assert first.content.mime_type == "image/png"
            assert base64.b64decode(first.content.data).startswith(PNG_SIGNATURE)
            assert isinstance(second.content, types.TextContent)
            assert second.content.text == "Please analyze the image above."

            # A missing required argument is a JSON-RPC error, not a rendered prompt.
            with pytest.raises(MCPError) as info:
                await session.get_prompt("test_prompt_with_arguments", {"arg1": "only"})
            assert info.value.error.code == types.INVALID_PARAMS


# ------------------------------------------------------------------------- completion


async def test_completion_complete() -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_session() as session:
            prompt_ref = types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments")
            result = await session.complete(prompt_ref, {"name": "arg1", "value": "pa"})
            assert result.completion.values == ["paris", "park", "party"]
            result = await session.complete(prompt_ref, {"name": "arg1", "value": "test"})
            assert result.completion.values == ["test", "testing"]
            result = await session.complete(prompt_ref, {"name": "arg2", "value": "zzz"})
            assert result.completion.values == []

            template_ref = types.ResourceTemplateReference(
                type="ref/resource", uri="test://template/{id}/data"
            )
            result = await session.complete(template_ref, {"name": "id", "value": "1"})
            assert result.completion.values == ["1", "10"]


async def test_concurrent_calls_are_routed_to_their_callers() -> None:
    """Many calls in flight at once on one session, some with progress, some asking the
    client to sample: every result and every progress notification reaches its caller."""
    recorder = Recorder()
    results: dict[str, list[str]] = {}
    progress: dict[int, list[float]] = {i: [] for i in range(6)}

    async def with_progress(i: int, session: ClientSession) -> None:
        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress[i].append(value)

        result = await session.call_tool(
            "test_tool_with_progress", {}, progress_callback=on_progress
        )
        results[f"progress-{i}"] = _texts(result)

    async def sampling(i: int, session: ClientSession) -> None:
        result = await session.call_tool("test_sampling", {"prompt": f"prompt {i}"})
        results[f"sampling-{i}"] = _texts(result)

    async def template(i: int, session: ClientSession) -> None:
        read = await session.read_resource(f"test://template/{i}/data")
        results[f"template-{i}"] = [read.contents[0].text]

    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_session(recorder) as session:
            async with trio.open_nursery() as nursery:
                for i in range(6):
                    nursery.start_soon(with_progress, i, session)
                    nursery.start_soon(sampling, i, session)
                    nursery.start_soon(template, i, session)
            # Progress callbacks run in SDK tasks: give late ones time (those for
            # requests already answered never come: the SDK drops them).
            await wait_until(
                lambda: all(len(p) >= 3 for p in progress.values()), "progress", fail=False
            )
    for i in range(6):
        assert results[f"progress-{i}"] == ["Progress reported: 0, 50 and 100 of 100"]
        assert sorted(progress[i]) == [0, 50, 100], (
            f"call {i}: progress callbacks got {progress[i]} (all: {progress})"
        )
        assert results[f"sampling-{i}"] == [f"LLM response: {SAMPLED_TEXT}"]
        assert json.loads(results[f"template-{i}"][0])["id"] == str(i)
    prompts = sorted(p.messages[0].content.text for p in recorder.sampling)
    assert prompts == [f"prompt {i}" for i in range(6)]


def _split_at_response(
    window: list[dict[str, Any]], method: str, response_id: Any
) -> tuple[int, int]:
    """How many ``method`` notifications in ``window`` came before / after the response
    to ``response_id`` (progress: only those carrying it as the token, as the SDK does)."""
    before = after = 0
    answered = False
    for message in window:
        if message.get("id") == response_id and ("result" in message or "error" in message):
            answered = True
        elif message.get("method") == method:
            params = message.get("params", {})
            if method == "notifications/progress" and params.get("progressToken") != response_id:
                continue
            if answered:
                after += 1
            else:
                before += 1
    return before, after


async def test_notifications_precede_the_response_on_the_wire() -> None:
    """A tool's progress and log notifications, awaited before it returns, must reach
    the wire before its response: a client drops progress for a finished request (the
    SDK does, and conformance `tools-call-with-progress` requires 3 before the result)."""
    tap: list[WireTap] = []
    problems: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        pass

    with trio.fail_after(TEST_TIMEOUT), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with sdk_session(Recorder(), tap) as session:
            await session.set_logging_level("debug")
            await session.list_tools()  # so call_tool does not list tools mid-test
            (wire,) = tap
            for attempt in range(3):
                for tool, method, kwargs in (
                    (
                        "test_tool_with_progress",
                        "notifications/progress",
                        {"progress_callback": on_progress},
                    ),
                    ("test_tool_with_logging", "notifications/message", {}),
                ):
                    start = len(wire.messages)
                    await session.call_tool(tool, {}, **kwargs)
                    window = wire.messages[start:]
                    (response,) = [m for m in window if "content" in m.get("result", {})]
                    rid = response["id"]
                    # All three do arrive, sooner or later: wait for them, then look at order.
                    await wait_until(
                        lambda: sum(_split_at_response(wire.messages[start:], method, rid)) >= 3,  # noqa: B023
                        f"three {method} for {tool}",
                    )
                    window = wire.messages[start:]
                    counts = _split_at_response(window, method, rid)
                    if counts != (3, 0):
                        order = [m.get("method") or f"response {m.get('id')}" for m in window]
                        problems.append(
                            f"attempt {attempt}, {tool}: {method} before/after the response: "
                            f"{counts}; wire order: {order}"
                        )
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------- second server


async def test_pagination_with_cursors() -> None:
    """The SDK client follows our cursors (page size 2) through tools, resources, prompts."""
    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_session(command=PAGED_SERVER) as session:

            async def collect(list_page: Any, field: str) -> tuple[list[str], int]:
                names: list[str] = []
                pages = 0
                cursor = None
                while True:
                    params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                    page = await list_page(params=params)
                    items = getattr(page, field)
                    assert 0 < len(items) <= 2, f"page {pages} of {field}: {len(items)} items"
                    names.extend(str(i.uri) if field == "resources" else i.name for i in items)
                    pages += 1
                    cursor = page.next_cursor
                    if cursor is None:
                        return names, pages

            tools, pages = await collect(session.list_tools, "tools")
            assert pages == 5
            assert tools[:5] == [f"tool_{n}" for n in range(5)]
            assert len(tools) == len(set(tools)) == 10
            resources, pages = await collect(session.list_resources, "resources")
            assert (resources, pages) == ([f"paged://resource/{n}" for n in range(5)], 3)
            prompts, pages = await collect(session.list_prompts, "prompts")
            assert (prompts, pages) == (["prompt_0", "prompt_1", "prompt_2"], 2)

            # A cursor we never issued is a JSON-RPC invalid-params error.
            with pytest.raises(MCPError) as info:
                await session.list_tools(params=types.PaginatedRequestParams(cursor="bogus!"))
            assert info.value.error.code == types.INVALID_PARAMS


async def test_roots_sampling_options_and_named_logger() -> None:
    recorder = Recorder()
    recorder.roots = [
        types.Root(uri="file:///work/project", name="project"),
        types.Root(uri="file:///tmp"),
    ]
    with trio.fail_after(TEST_TIMEOUT), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # roots/logging are deprecated for 2026-07-28 only
        async with sdk_session(recorder, command=PAGED_SERVER) as session:
            # roots/list from a tool, answered by the SDK's list_roots_callback
            roots = await session.call_tool("roots", {})
            assert roots.structured_content == {"result": ["file:///work/project", "file:///tmp"]}
            assert recorder.roots_asked == 1

            # notifications/roots/list_changed reaches the server's hook
            await session.send_roots_list_changed()
            with trio.fail_after(5):
                while True:
                    count = await session.call_tool("roots_changed_count", {})
                    if count.structured_content == {"result": 1}:
                        break
                    await trio.sleep(0.02)

            # every sampling option crosses over intact
            sampled = await session.call_tool("sample_with_options", {})
            assert sampled.structured_content == {
                "model": "test-model",
                "stopReason": "endTurn",
                "text": SAMPLED_TEXT,
            }
            (params,) = recorder.sampling
            assert params.max_tokens == 7
            assert params.system_prompt == "Be brief."
            assert params.temperature == 0.25
            assert params.stop_sequences == ["STOP"]
            assert params.include_context == "thisServer"
            assert params.metadata == {"trace": "abc"}
            assert params.model_preferences is not None
            assert params.model_preferences.speed_priority == 0.9
            assert [h.name for h in params.model_preferences.hints or []] == ["small"]

            # a log message with a logger name and structured data
            await session.set_logging_level("warning")
            assert _texts(await session.call_tool("log_with_logger", {})) == ["logged"]
            await wait_until(lambda: bool(recorder.logs), "the warning log message")
            (log,) = recorder.logs
            assert (log.level, log.logger) == ("warning", "interop.logger")
            assert log.data == {"code": 7, "detail": "structured"}
