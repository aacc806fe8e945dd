"""The official SDK 2.3.0 client speaks MCP 2026-07-28 to our everything server.

One server process per transport (a stdio subprocess, or ``mcpactor``'s HTTP server on
127.0.0.1), the SDK's high-level ``Client`` pinned to 2026-07-28 and in ``auto`` mode,
which must now negotiate 2026-07-28 (``server/discover`` first). Tools, progress, logs
(only with a per-request log level), sampling and elicitation (as input rounds: the
handler runs again on the SDK's retry), resources and prompts. A legacy (handshake)
client on the same HTTP URL keeps working beside it.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from interop_support import ROOT, subprocess_env
from mcp import types
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

pytestmark = pytest.mark.interop

TIMEOUT = 30
EXAMPLE = str(ROOT / "examples" / "everything_server.py")
ANSWERS: dict[str, dict[str, Any]] = {
    "What is your name?": {"name": "Ann"},
    "Step 1: What is your name?": {"name": "Ann"},
    "Step 2: What is your favorite color?": {"color": "teal"},
    "hello?": {"username": "ann", "email": "ann@example.com"},
}


class Seen:
    """What the client's callbacks were given."""

    def __init__(self) -> None:
        self.sampled: list[types.CreateMessageRequestParams] = []
        self.elicited: list[str] = []
        self.logs: list[types.LoggingMessageNotificationParams] = []

    async def sampling(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        self.sampled.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="Paris"),
            model="test-model", stop_reason="endTurn",
        )

    async def elicitation(self, context: Any, params: Any) -> types.ElicitResult:
        self.elicited.append(params.message)
        return types.ElicitResult(action="accept", content=ANSWERS[params.message])

    async def logging(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """Our everything server over HTTP, one process for the module."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, EXAMPLE, "--transport", "http", "--port", str(port)],
        cwd=ROOT, env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        for _ in range(200):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                    break
            except OSError:
                trio_sleep_sync(0.05)
        yield url
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
        assert b"Traceback" not in out, out.decode(errors="replace")


def trio_sleep_sync(seconds: float) -> None:
    time.sleep(seconds)


@asynccontextmanager
async def client(transport: str, url: str, mode: str, seen: Seen,
                 log_level: str | None = "debug") -> AsyncIterator[Client]:
    target: Any = url if transport == "http" else StdioServerParameters(
        command=sys.executable, args=[EXAMPLE], cwd=str(ROOT), env=subprocess_env())
    async with Client(target, mode=mode, sampling_callback=seen.sampling,  # type: ignore[arg-type]
                      elicitation_callback=seen.elicitation, logging_callback=seen.logging,
                      log_level=log_level) as c:  # type: ignore[arg-type]
        yield c


class _Reply:
    def __init__(self, status_code: int, body: bytes) -> None:
        self.status_code = status_code
        self._body = body

    def json(self) -> Any:
        return json.loads(self._body)


async def _post(url: str, headers: dict[str, str], body: dict[str, Any]) -> _Reply:
    def run() -> _Reply:
        req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers,
                                     method="POST")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return _Reply(resp.status, resp.read())
        except urllib.error.HTTPError as err:
            return _Reply(err.code, err.read())
    return await trio.to_thread.run_sync(run)


def _text(result: Any) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


@pytest.mark.parametrize("mode", ["auto", "2026-07-28"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_sdk_client_at_2026_07_28(transport: str, mode: str, http_url: str) -> None:
    seen = Seen()
    with trio.fail_after(TIMEOUT):
        async with client(transport, http_url, mode, seen) as c:
            assert c.protocol_version == "2026-07-28"
            names = {tool.name for tool in (await c.list_tools()).tools}
            assert {"test_simple_text", "test_sampling", "test_input_required_result_multi_round"} <= names
            assert _text(await c.call_tool("test_simple_text", {})) == (
                "This is a simple text response for testing.")

            progress: list[float] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append(value)

            result = await c.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
            assert "Progress reported" in _text(result)
            assert progress == [0, 50, 100]

            await c.call_tool("test_tool_with_logging", {})
            assert [log.data for log in seen.logs] == [
                "Tool execution started", "Tool processing data", "Tool execution completed"]

            # Sampling and elicitation are input rounds now: the SDK answers them through
            # the same callbacks and retries; the tool runs again with the answers.
            assert _text(await c.call_tool("test_sampling", {"prompt": "capital?"})) == (
                "LLM response: Paris")
            assert seen.sampled[-1].messages[0].content.text == "capital?"  # type: ignore[union-attr]
            result = await c.call_tool("test_elicitation", {"message": "hello?"})
            assert '"username":"ann"' in _text(result)
            assert _text(await c.call_tool("test_input_required_result_multi_round", {})) == (
                "Ann likes teal")
            assert seen.elicited[-2:] == [
                "Step 1: What is your name?", "Step 2: What is your favorite color?"]

            read = await c.read_resource("test://static-text")
            assert read.contents[0].text == (  # type: ignore[union-attr]
                "This is the content of the static text resource.")
            prompt = await c.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
            assert "a" in prompt.messages[0].content.text  # type: ignore[union-attr]
            assert _text(await c.call_tool("test_input_required_result_elicitation", {})) == (
                "Hello, Ann!")


async def test_no_logs_without_a_log_level(http_url: str) -> None:
    seen = Seen()
    with trio.fail_after(TIMEOUT):
        async with client("http", http_url, "2026-07-28", seen, log_level=None) as c:
            await c.call_tool("test_tool_with_logging", {})
    assert seen.logs == []


async def test_legacy_and_modern_clients_share_one_url(http_url: str) -> None:
    legacy_seen, modern_seen = Seen(), Seen()
    with trio.fail_after(TIMEOUT):
        async with client("http", http_url, "legacy", legacy_seen) as old, \
                client("http", http_url, "auto", modern_seen) as new:
            assert old.protocol_version == "2025-11-25"
            assert new.protocol_version == "2026-07-28"
            for c in (old, new):
                assert _text(await c.call_tool("test_sampling", {"prompt": "x"})) == (
                    "LLM response: Paris")
    assert len(legacy_seen.sampled) == len(modern_seen.sampled) == 1


async def test_removed_methods_and_version_errors_over_http(http_url: str) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    base = {"content-type": "application/json", "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28"}
    r = await _post(http_url, {**base, "mcp-method": "ping"},
                        {"jsonrpc": "2.0", "id": 5, "method": "ping",
                              "params": {"_meta": meta}})
    assert r.status_code == 404 and r.json()["error"]["code"] == -32601
    assert r.json()["id"] == 5
    r = await _post(http_url, {**base, "mcp-method": "tools/list"},
                        {"jsonrpc": "2.0", "id": 6, "method": "tools/list",
                              "params": {"_meta": {**meta, "io.modelcontextprotocol/"
                                                   "protocolVersion": "2099-01-01"}}})
    assert r.status_code == 400 and r.json()["error"]["code"] == -32020
    r = await _post(http_url, {**base, "mcp-protocol-version": "2099-01-01",
                                           "mcp-method": "tools/list"},
                        {"jsonrpc": "2.0", "id": 7, "method": "tools/list",
                              "params": {"_meta": {**meta, "io.modelcontextprotocol/"
                                                   "protocolVersion": "2099-01-01"}}})
    body = r.json()
    assert r.status_code == 400 and body["error"]["code"] == -32022 and body["id"] == 7
    assert body["error"]["data"]["requested"] == "2099-01-01"
    assert "2026-07-28" in body["error"]["data"]["supported"]
    r = await _post(http_url, {**base, "mcp-method": "tools/call",
                                           "mcp-name": "test_missing_capability"},
                        {"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                              "params": {"name": "test_missing_capability", "arguments": {},
                                         "_meta": meta}})
    body = r.json()
    assert r.status_code == 400 and body["error"]["code"] == -32021
    assert body["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
