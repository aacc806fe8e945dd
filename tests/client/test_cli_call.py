"""``mcpactor call``: a shell client for any MCP server, run as a real process against
real servers over stdio and Streamable HTTP."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MCPACTOR = [sys.executable, "-m", "mcpactor"]
RACE_SERVER = f"{ROOT / 'traces' / 'servers' / 'race_server.py'}:server"
RACE = shlex.join([*MCPACTOR, "run", RACE_SERVER])
DEMO = shlex.join([sys.executable, str(ROOT / "examples" / "demo_server.py")])


def call(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPACTOR, "call", *argv], capture_output=True, text=True,
                          timeout=120)


def test_lists_the_tools_then_calls_one() -> None:
    listed = call(RACE)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert "quick()  Answer at once." in lines
    assert any(line.startswith("sleepy(seconds)") for line in lines)
    called = call(RACE, "sleepy", '{"seconds": 0.1}')
    assert (called.returncode, called.stdout) == (0, "slept 0.1\n")
    raw = call(RACE, "withdraw", '{"amount": 10}', "--json")
    assert raw.returncode == 0
    assert json.loads(raw.stdout)["structuredContent"] == {"withdrawn": 10, "balance": 90}


def test_a_tool_error_is_exit_status_1() -> None:
    failed = call(RACE, "crash_mid_stream", '{"steps": 1}')
    assert failed.returncode == 1
    assert "crashed after 1 progress notifications" in failed.stdout


def test_resources_and_prompts() -> None:
    read = call(DEMO, "--read", "demo://greeting")
    assert read.returncode == 0, read.stderr
    assert read.stdout.strip()
    prompt = call(DEMO, "--prompt", "review", "--args", '{"code": "print(1)"}')
    assert prompt.returncode == 0, prompt.stderr
    assert "print(1)" in json.dumps(json.loads(prompt.stdout))


def test_mistakes_are_one_line_with_exit_status_2() -> None:
    cases = [
        ((RACE, "sleepy", "[1]"), "ARGUMENTS must be a JSON object"),
        ((RACE, "sleepy", "{bad"), "ARGUMENTS must be a JSON object"),
        ((RACE, "nope"), "the server has no tool 'nope' (its tools: ask_model"),
        (("no-such-command-x",), "cannot reach no-such-command-x"),
        ((shlex.join([sys.executable, "-c", "pass"]),), "closed its output before answering"),
        (("http://127.0.0.1:9/mcp",), "cannot connect to 127.0.0.1:9"),
        ((RACE, "--header", "nocolon"), "--header 'nocolon': use NAME:VALUE"),
        ((RACE, "--header", "A: b"), "--header applies to http(s):// and ws(s):// targets"),
        ((DEMO, "add", "--read", "demo://greeting"), "--read URI takes no tool name"),
        ((DEMO, "--prompt", "review", "--args", "[]"), "--args must be a JSON object"),
    ]
    for argv, message in cases:
        done = call(*argv)
        assert done.returncode == 2, (argv, done.stdout, done.stderr)
        assert done.stderr.startswith("mcpactor: ") and message in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1


def test_over_streamable_http_with_a_recorded_trace(
    tmp_path: Path, http_server: Callable[..., tuple[subprocess.Popen[bytes], str]],
) -> None:
    _, url = http_server(RACE_SERVER)
    trace = tmp_path / "call.jsonl"
    done = call(url, "quick", "--header", "X-Test: 1", "--trace", str(trace))
    assert (done.returncode, done.stdout) == (0, "quick\n"), done.stderr
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert events[0]["role"] == "client" and events[0]["transport"] == "http"
    sent = [e["msg"].get("method") for e in events[1:] if e.get("kind") == "message_out"]
    assert sent[-1] == "tools/call"


def test_a_traced_call_replays_as_a_mock_server(tmp_path: Path) -> None:
    trace = tmp_path / "call.jsonl"
    live = call(RACE, "roll", '{"sides": 1000000}', "--trace", str(trace))
    assert live.returncode == 0, live.stderr
    mock = shlex.join([*MCPACTOR, "replay", "--serve", str(trace)])
    again = call(mock, "roll", '{"sides": 1000000}')
    assert again.returncode == 0, again.stderr
    assert again.stdout == live.stdout  # the recorded roll, not a new one
