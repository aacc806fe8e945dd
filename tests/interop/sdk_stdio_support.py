"""Shared setup for the tests where the official SDK client drives our everything server
over stdio: the expected tool list, recording callbacks, a wire tap, session helpers."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
import trio
from interop_support import OUR_EVERYTHING, ROOT, subprocess_env
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

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
