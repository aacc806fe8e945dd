"""Real subprocesses over stdio: our client with our server, and raw bad input on the pipe."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

from mcpactor import McpError, connect_stdio
from mcpactor.tracing import MemoryRecorder

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "tests" / "transports" / "stdio_server.py"
RUN = [sys.executable, "-m", "mcpactor.cli", "run", f"{DEMO}:server"]


async def test_client_and_server_over_a_real_pipe(tmp_path: Path) -> None:
    trace = tmp_path / "server.jsonl"
    client_trace = MemoryRecorder()
    with trio.fail_after(30):
        async with connect_stdio([*RUN, "--trace", str(trace)], tracer=client_trace, mode="legacy") as client:
            assert client.server_info["name"] == "stdio-test"
            assert client.protocol_version == "2025-11-25"
            res = await client.call_tool("add", {"a": 2, "b": 40})
            assert res.structured_content == {"result": 42}
            progress: list[float] = []
            res = await client.call_tool("count", {"n": 3}, on_progress=lambda p, t, m: progress.append(p))
            assert res.content[0].text == "counted 3"  # type: ignore[union-attr]
            assert progress == [1, 2, 3]
            with pytest.raises(McpError) as info:
                await client.call_tool("nope", {})
            assert info.value.code == -32602
            # print() in a handler goes to stderr, not into the message stream
            res = await client.call_tool("noisy", {})
            assert res.content[0].text == "still fine"  # type: ignore[union-attr]
            await client.ping()
            proc = client.session.transport.process  # type: ignore[attr-defined]
    # Closing stdin is enough for a well-behaved server: it exits by itself, status 0.
    assert proc.returncode == 0
    # Every line the client read was a protocol message (the print() went to stderr).
    inbound = [e for e in client_trace.events() if e["kind"] == "message_in"]
    assert inbound and all("msg" in e for e in inbound)
    lines = trace.read_bytes().splitlines()
    header = orjson.loads(lines[0])
    assert header["type"] == "header" and header["role"] == "server"
    assert header["entry_point"].endswith("stdio_server.py:server")
    events = [orjson.loads(x) for x in lines[1:]]
    assert [e["protocol_version"] for e in events if e["kind"] == "initialized"] == ["2025-11-25"]
    kinds = [e["kind"] for e in events if e["kind"] not in ("sched", "read")]
    assert kinds.count("message_in") >= 5 and kinds.count("message_out") >= 5
    assert kinds[-1] == "session_closed"


async def test_a_server_that_ignores_stdin_close_is_terminated() -> None:
    cmd = [sys.executable, str(ROOT / "tests" / "transports" / "stubborn_server.py")]
    with trio.fail_after(30):
        async with connect_stdio(cmd, shutdown_timeout=0.5, mode="legacy") as client:
            await client.ping()
            proc = client.session.transport.process  # type: ignore[attr-defined]
    assert proc.returncode is not None and proc.returncode != 0  # SIGTERM ended it


def _exchange(lines: list[bytes], timeout: float = 20) -> list[dict[str, Any]]:
    """Write raw lines to a server's stdin, close it, and decode every line it wrote."""
    proc = subprocess.run(
        RUN, input=b"".join(lines), capture_output=True, timeout=timeout, check=False
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()
    return [orjson.loads(x) for x in proc.stdout.splitlines() if x.strip()]


def _line(obj: Any) -> bytes:
    return orjson.dumps(obj) + b"\n"


INIT = _line(
    {"jsonrpc": "2.0", "id": "init", "method": "initialize",
     "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
) + _line({"jsonrpc": "2.0", "method": "notifications/initialized"})


def _by_id(msgs: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    return {m.get("id"): m for m in msgs if "id" in m}


def test_bad_input_on_a_real_pipe_gets_the_right_codes_and_the_session_goes_on() -> None:
    big = b'{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"' + b"x" * (17 * 1024 * 1024) + b'"}}\n'
    msgs = _exchange(
        [
            _line({"jsonrpc": "2.0", "id": "early", "method": "tools/list"}),  # before initialize
            INIT,
            b"{this is not json\n",
            b'{"jsonrpc":"2.0","id":"u","method":"ping","params":{"s":"\xff\xfe"}}\n',  # invalid UTF-8
            _line({"jsonrpc": "2.0", "id": "m", "method": "no/such/method"}),
            _line({"jsonrpc": "2.0", "id": "t", "method": "tools/call", "params": {"name": 12}}),
            _line({"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {"name": "add", "arguments": {"a": "x", "b": 1}}}),
            big,
            _line({"jsonrpc": "2.0", "id": "ok", "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 1}}}),
        ],
        timeout=60,
    )
    by_id = _by_id(msgs)
    assert by_id["early"]["error"]["code"] == -32600
    assert by_id["init"]["result"]["protocolVersion"] == "2025-06-18"
    nulls = [m for m in msgs if m.get("id") is None]
    codes = sorted(m["error"]["code"] for m in nulls)
    # parse error, invalid UTF-8 (also a parse error), oversize message
    assert codes == [-32700, -32700, -32600]
    assert by_id["m"]["error"]["code"] == -32601
    assert by_id["t"]["error"]["code"] == -32602
    assert by_id["a"]["result"]["isError"] is True  # argument validation is a tool error
    assert by_id["ok"]["result"]["structuredContent"] == {"result": 2}


def test_notifications_are_never_answered_even_when_wrong() -> None:
    msgs = _exchange(
        [
            INIT,
            _line({"jsonrpc": "2.0", "method": "notifications/unknown"}),
            _line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "ghost"}}),
            _line({"jsonrpc": "2.0", "id": "p", "method": "ping"}),
        ]
    )
    assert [m.get("id") for m in msgs] == ["init", "p"]


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("missing_file.py:server", "no such file"),
        ("tests/transports/stdio_server.py:nothing", "has no attribute 'nothing'"),
        ("json:dumps", "not an mcpactor Server"),
        ("no_such_module_xyz:server", "cannot import module"),
    ],
)
def test_cli_entry_point_mistakes_are_one_line_errors(target: str, message: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcpactor.cli", "run", target],
        capture_output=True, text=True, timeout=30, cwd=ROOT, check=False,
    )
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_cli_trace_path_mistakes_are_one_line_errors(tmp_path: Path) -> None:
    # A path that cannot be created, a folder that is a file: one line naming the
    # problem, exit 2, nothing on stdout.
    a_file = tmp_path / "file"
    a_file.write_text("")
    for trace, message in (("/proc/no/such/trace.jsonl", "cannot write the trace"),
                           (f"{a_file}/", "is a file: a recording of one file per session "
                                          "takes a folder")):
        proc = subprocess.run(
            [sys.executable, "-m", "mcpactor.cli", "run", "tests/transports/stdio_server.py:server",
             "--trace", trace],
            capture_output=True, text=True, timeout=30, cwd=ROOT, check=False, input="",
        )
        assert proc.returncode == 2, proc.stderr
        assert message in proc.stderr and "Traceback" not in proc.stderr
        assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1


def _init_line(version: str) -> bytes:
    return _line(
        {"jsonrpc": "2.0", "id": "init", "method": "initialize",
         "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    ) + _line({"jsonrpc": "2.0", "method": "notifications/initialized"})


def test_batches_answered_as_one_array_in_2025_03_26() -> None:
    batch = orjson.dumps([
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "count", "arguments": {"n": 2}}},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"jsonrpc": "2.0", "id": 3, "method": "no/such"},
    ]) + b"\n"
    proc = subprocess.run(
        RUN, input=_init_line("2025-03-26") + batch, capture_output=True, timeout=30, check=False
    )
    out = [orjson.loads(x) for x in proc.stdout.splitlines() if x.strip()]
    assert out[0]["id"] == "init" and out[0]["result"]["protocolVersion"] == "2025-03-26"
    (array,) = [m for m in out if isinstance(m, list)]
    by_id = {m["id"]: m for m in array}
    assert set(by_id) == {1, 2, 3}
    assert by_id[1]["result"]["content"][0]["text"] == "counted 2"
    assert by_id[2]["result"] == {} and by_id[3]["error"]["code"] == -32601


def test_batches_refused_in_2025_06_18() -> None:
    batch = orjson.dumps([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]) + b"\n"
    msgs = _exchange([_init_line("2025-06-18"), batch, _line({"jsonrpc": "2.0", "id": 9, "method": "ping"})])
    assert msgs[1]["id"] is None and msgs[1]["error"]["code"] == -32600
    assert msgs[2] == {"jsonrpc": "2.0", "id": 9, "result": {}}
