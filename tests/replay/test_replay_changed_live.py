"""Changed code (``--server``) and live targets (``--against``) on racy traces: only real
behaviour changes are listed, an unchanged server comes out "same", and a target that
cannot be driven is one line and exit 2. Real subprocesses and servers on 127.0.0.1."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import trio
from process_support import http_process
from replay_support import ROOT, run_cli

from mcpactor import ClientHandlers, connect_stdio
from mcpactor.protocol import types as t

MCPACTOR = [sys.executable, "-m", "mcpactor.cli"]
RACY = Path(__file__).resolve().parent / "racy"
#: A stdio recording of racy/bank.py (racy/drive.py): tools/list, then four rounds of
#: three withdrawals, three deposits and two audits at once, and an audit.
BANK_TRACE = RACY / "bank.jsonl"
BANK = RACY / "bank.py"
EXAMPLE = ROOT / "docs" / "examples" / "tracing_example.py"


def _variant(tmp_path: Path, name: str, old: str, new: str) -> Path:
    src = BANK.read_text()
    assert old in src
    path = tmp_path / f"{name}.py"
    path.write_text(src.replace(old, new))
    return path


def _v2(tmp_path: Path) -> Path:
    return _variant(tmp_path, "bank_v2", '"bal": balance["amount"]}',
                    '"bal": balance["amount"], "v": 2}')


def _locked(tmp_path: Path) -> Path:
    return _variant(tmp_path, "bank_locked", "    return _NoLock()", "    return LOCK")


def _with_new_tool(tmp_path: Path) -> Path:
    path = tmp_path / "bank_new.py"
    path.write_text(BANK.read_text() + '\n\n@server.tool\nasync def extra() -> str:\n'
                    '    """Unrelated."""\n    return "extra"\n')
    return path


def _rows(out: str) -> list[list[str]]:
    """The changed-responses table's rows, split on runs of spaces."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["id", "method"]
                 or line.split()[:2] == ["session", "id"])
    return [line.split() for line in lines[start + 1:] if line.startswith("  ")
            and not line.strip().startswith("note:")]


def _recorded_methods(trace: Path) -> dict[int, str]:
    """Request id -> tool name (or method) of the recorded requests."""
    names: dict[int, str] = {}
    for line in trace.read_bytes().splitlines()[1:]:
        ev = orjson.loads(line)
        msg = ev.get("msg")
        if ev.get("kind") == "message_in" and isinstance(msg, dict) and "id" in msg:
            params = msg.get("params") or {}
            names[msg["id"]] = params.get("name", msg.get("method"))
    return names


# -- --server: changed code follows the recording ------------------------------------


def test_server_change_in_one_tool_lists_that_tool_only(tmp_path: Path) -> None:
    """One key added to `audit`: the audits change, nothing else, and nothing the exact
    replay reproduced before the divergence is listed (a free run of the new code
    re-decided the withdrawal races and listed them too)."""
    code, out, _ = run_cli("replay", str(BANK_TRACE), "--server", f"{_v2(tmp_path)}:server")
    assert code == 1, out
    assert "DIVERGED" in out
    names = _recorded_methods(BANK_TRACE)
    listed = {int(row[0]) for row in _rows(out)}
    assert listed == {rid for rid, name in names.items() if name == "audit"}, out
    assert "12 of 38 response(s) changed" in out


def test_server_with_an_unrelated_new_tool_changes_only_the_tool_list(
        tmp_path: Path) -> None:
    code, out, _ = run_cli("replay", str(BANK_TRACE), "--server",
                           f"{_with_new_tool(tmp_path)}:server")
    assert code == 1, out
    assert "1 of 38 response(s) changed" in out
    [row] = _rows(out)
    assert row[:2] == ["2", "tools/list"]


def test_server_unchanged_is_faithful_and_a_lock_shows_changes(tmp_path: Path) -> None:
    code, out, _ = run_cli("replay", str(BANK_TRACE), "--server", f"{BANK}:server")
    assert code == 0 and "faithful" in out
    code, out, _ = run_cli("replay", str(BANK_TRACE), "--server", f"{_locked(tmp_path)}:server")
    assert code == 1
    answers = {row[2] for row in _rows(out) if row[1] == "tools/call"}
    assert answers & {"refused", "left"}, out


def test_follow_run_of_unchanged_code_takes_every_recorded_step() -> None:
    from mcpactor.replay.compare import compare, server_messages
    from mcpactor.replay.exact.follow import replay_follow
    from mcpactor.replay.runner import load_server
    from mcpactor.replay.trace import load_trace

    from mcpactor.tracing import entropy

    trace = load_trace(BANK_TRACE)
    entropy.install()
    try:
        sent, scheduler = replay_follow(trace, load_server(f"{BANK}:server", trace.path))
    finally:
        entropy.uninstall()
    recorded, methods = server_messages(trace)
    assert compare(recorded, sent, methods).same
    assert scheduler.skipped == 0 and scheduler.followed == sum(
        len(b.run) for b in trace.scheds)


def _follow(trace_path: Path, server: str) -> tuple[Any, Any]:
    from mcpactor.replay.exact.follow import replay_follow
    from mcpactor.replay.runner import load_server
    from mcpactor.replay.trace import load_trace

    from mcpactor.tracing import entropy

    trace = load_trace(trace_path)
    entropy.install()
    try:
        return replay_follow(trace, load_server(server, trace.path))
    finally:
        entropy.uninstall()


_AUDIT = '''    audits["n"] += 1
    await trio.sleep(random.random() / 100)
    return {"n": audits["n"], "id": str(uuid.uuid4()), "r": random.random(),
            "bal": balance["amount"]}'''

_NESTED_AUDIT = '''    out: dict[str, object] = {}

    async def body() -> None:
        async def name() -> None:
            out["id"] = str(uuid.uuid4())

        audits["n"] += 1
        await trio.sleep(random.random() / 100)
        async with trio.open_nursery() as inner:
            inner.start_soon(name)
        out.update(n=audits["n"], r=random.random(), bal=balance["amount"])

    async with trio.open_nursery() as nursery:
        nursery.start_soon(body)
    return out'''


def test_follow_run_numbers_tasks_the_recording_does_not_have(tmp_path: Path) -> None:
    """The audit's work moved into a task it spawns, which spawns one more: tasks the
    recording does not have. Each gets a number past the recorded ones in the run's
    task table (the grandchild too: it is named under its new parent), so their uuid4
    and random values are the replay's derived ones, the same every run; the other
    tools' answers are the recorded ones."""
    from mcpactor.replay.compare import compare, server_messages
    from mcpactor.replay.trace import load_trace

    path = _variant(tmp_path, "bank_nested", _AUDIT, _NESTED_AUDIT)
    first, scheduler = _follow(BANK_TRACE, f"{path}:server")
    again, _ = _follow(BANK_TRACE, f"{path}:server")
    assert first == again  # derived values: the same every run
    trace = load_trace(BANK_TRACE)
    tools = _recorded_methods(BANK_TRACE)
    audits = sum(1 for name in tools.values() if name == "audit")
    extra = [tid for tid in scheduler.tasks if tid > max(trace.names)]
    assert len(extra) == 2 * audits, (extra, audits)  # each audit's body and its child
    recorded, methods = server_messages(trace)
    changes = compare(recorded, first, methods).changes
    assert changes and {tools[c.id] for c in changes} == {"audit"}, changes
    for c in changes:
        assert set(c.replayed["result"]["structuredContent"]) == {"n", "id", "r", "bal"}



# -- --against a command: the target follows the recording ----------------------------


def _live(server: str) -> str:
    return " ".join([*MCPACTOR, "run", server])


def _record_withdraw_race(trace: Path) -> None:
    """The tracing example's race: two `withdraw 60` at once, over real stdio."""
    async def main() -> None:
        command = [*MCPACTOR, "run", f"{EXAMPLE}:server", "--trace", str(trace)]
        async with connect_stdio(command) as client, trio.open_nursery() as nursery:
            for _ in range(2):
                nursery.start_soon(client.call_tool, "withdraw", {"amount": 60})

    trio.run(main)


def test_against_an_unchanged_server_is_same_every_time(tmp_path: Path) -> None:
    """Live, the two withdrawals' answers swapped in about half the runs, and uuid4 and
    random values changed in every run; a target that follows the recording answers as
    recorded, 20 times out of 20."""
    trace = tmp_path / "ex.jsonl"
    _record_withdraw_race(trace)
    for i in range(20):
        code, out, err = run_cli("replay", str(trace), "--against", _live(f"{EXAMPLE}:server"))
        assert code == 0, (i, out, err)
        assert "(following the recording): same: 3 response(s)" in out
    for i in range(3):
        code, out, err = run_cli("replay", str(BANK_TRACE), "--against", _live(f"{BANK}:server"))
        assert code == 0, (i, out, err)
        assert "same: 38 response(s)" in out


def test_against_a_fixed_server_shows_the_changed_responses(tmp_path: Path) -> None:
    trace = tmp_path / "ex.jsonl"
    _record_withdraw_race(trace)
    code, out, _ = run_cli("replay", str(trace), "--against", _live(f"{EXAMPLE}:fixed"))
    assert code == 1, out
    assert "refused" in out
    code, out, _ = run_cli("replay", str(BANK_TRACE), "--against",
                           _live(f"{_v2(tmp_path)}:server"))
    assert code == 1 and "12 of 38 response(s) changed" in out


# -- 2026-07-28 input rounds: the retry quotes the live server's requestState ---------


ASKER = '''
from dataclasses import dataclass
import random, uuid
import trio
from mcpactor import Context, Server

server = Server("asker", version="1.0")
count = {"n": 0}


@dataclass
class Pick:
    n: int


@server.tool
async def ask(ctx: Context) -> str:
    answer = await ctx.elicit("pick", Pick)
    count["n"] += 1
    await trio.sleep(random.random() / 100)
    return f"picked {answer.data.n if answer.data else -1} #{count['n']} {uuid.uuid4().hex[:8]}"
'''


async def _pick(params: Any) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content={"n": 7})


def _record_elicit(tmp_path: Path) -> tuple[Path, Path]:
    server = tmp_path / "asker.py"
    server.write_text(ASKER)
    trace = tmp_path / "ask.jsonl"

    async def main() -> None:
        command = [*MCPACTOR, "run", f"{server}:server", "--trace", str(trace)]
        async with connect_stdio(command, mode="auto",
                                 handlers=ClientHandlers(elicitation=_pick)) as client:
            async with trio.open_nursery() as nursery:
                for _ in range(3):
                    nursery.start_soon(client.call_tool, "ask", {})

    trio.run(main)
    assert b"requestState" in trace.read_bytes()
    return server, trace


def test_against_input_rounds_command_and_url(tmp_path: Path) -> None:
    server, trace = _record_elicit(tmp_path)
    code, out, err = run_cli("replay", str(trace), "--against", _live(f"{server}:server"))
    assert code == 0, (out, err)
    for url, _ in http_process([*MCPACTOR, "run", f"{server}:server"]):
        # Not following: the retries carry the live server's own requestState.
        code, out, err = run_cli("replay", str(trace), "--against", url)
    assert code == 0, (out, err)
    assert "signature" not in out


# -- --against a URL ------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_against_a_fresh_http_server_gets_its_answers(tmp_path: Path) -> None:
    """A fresh server answers every request (no "(no response)"); the race's answers,
    which a server that does not follow the recording decides by its own timing, are
    compared by form, so the unchanged server is the same and the fix is not."""
    trace = tmp_path / "ex.jsonl"
    _record_withdraw_race(trace)
    for _ in range(3):
        for url, _ in http_process([*MCPACTOR, "run", f"{EXAMPLE}:server"]):
            code, out, err = run_cli("replay", str(trace), "--against", url)
        assert code == 0, (out, err)
        assert "racy response(s) compared by form): same: 3 response(s)" in out
    for url, _ in http_process([*MCPACTOR, "run", f"{EXAMPLE}:fixed"]):
        code, out, _ = run_cli("replay", str(trace), "--against", url)
    assert code == 1 and "refused" in out and "(no response)" not in out


# -- a target that cannot be driven ---------------------------------------------------


def _one_line_exit_2(trace: Path, target: str, said: str, within: float) -> None:
    started = time.monotonic()
    code, out, err = run_cli("replay", str(trace), "--against", target, "--timeout", "3")
    took = time.monotonic() - started
    assert code == 2, (target, out, err)
    assert said in err, (target, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not out.strip(), out
    assert took < within, (target, took)


def test_targets_that_cannot_be_driven(tmp_path: Path) -> None:
    dead = _free_port()
    for target, said in (
            (f"http://127.0.0.1:{dead}/mcp", f"cannot reach http://127.0.0.1:{dead}/mcp"),
            (f"https://127.0.0.1:{dead}/mcp", f"cannot reach https://127.0.0.1:{dead}/mcp"),
            (f"ws://127.0.0.1:{dead}/mcp", f"cannot reach ws://127.0.0.1:{dead}/mcp")):
        _one_line_exit_2(BANK_TRACE, target, said, 15)
    # Echoes its input and never answers: not a table of "(no response)".
    _one_line_exit_2(BANK_TRACE, "cat", "cat never answered", 15)
    # The server's own one-line error, at once (not after the timeout), and only ours.
    missing = _live(str(tmp_path / "missing.py") + ":server")
    _one_line_exit_2(BANK_TRACE, missing, "exited with status 2", 10)
    code, _, err = run_cli("replay", str(BANK_TRACE), "--against", missing)
    assert "no such file" in err and "missing.py" in err
    code, out, err = run_cli("replay", str(BANK_TRACE), "--against", "")
    assert code == 2 and "--against needs a command" in err and not out


def test_ws_urls_are_targets(tmp_path: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen([*MCPACTOR, "run", f"{BANK}:server", "--transport", "ws",
                             "--port", str(port)], stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        code, out, err = run_cli("replay", str(BANK_TRACE), "--against",
                                 f"ws://127.0.0.1:{port}/mcp")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert "cannot start" not in err
    assert code in (0, 1), (out, err)
    assert "response(s)" in out and "(no response)" not in out


# -- the table -------------------------------------------------------------------------


def test_the_table_names_the_session_when_ids_repeat_across_sessions() -> None:
    import io

    from mcpactor.replay.compare import Change, Comparison, print_comparison

    ok = {"result": {"content": [{"type": "text", "text": "ok"}]}}
    bad = {"result": {"content": [{"type": "text", "text": "no"}]}}
    cmp = Comparison((Change("aaaaaaaa1111", 11, "tools/call", ok, bad),
                      Change("bbbbbbbb2222", 11, "tools/call", ok, bad)), 4, (),
                     ("aaaaaaaa1111", "bbbbbbbb2222"))
    out = io.StringIO()
    print_comparison(cmp, out, what="responses")
    lines = out.getvalue().splitlines()
    assert lines[1].split() == ["session", "id", "method", "recorded", "now"]
    assert lines[2].split()[:2] == ["aaaaaaaa", "11"]
    assert lines[3].split()[:2] == ["bbbbbbbb", "11"]
    one = Comparison((Change("a", 3, "tools/call", ok, bad),), 1, (), ("a",))
    out = io.StringIO()
    print_comparison(one, out, what="responses")
    assert out.getvalue().splitlines()[1].split() == ["id", "method", "recorded", "now"]


def test_racy_answers_are_compared_by_form_only() -> None:
    from mcpactor.replay.compare import form

    def text(s: str) -> dict[str, Any]:
        return {"result": {"content": [{"type": "text", "text": s}]}}

    assert form(text("took 60, 40 left")) == form(text("took 60, -20 left"))
    assert form(text("refused")) != form(text("took 60, 40 left"))
    assert form(text('{"id": "3060576d-73c7-47d1-98a1-c2b04cabd07e", "r": 0.5}')) == form(
        text('{"id": "11e0daf3-8581-4b22-bb7d-fe5592e2707a", "r": 0.25}'))
    assert form(text("picked 7 #3 48b42b99")) == form(text("picked 7 #3 62004210"))
    assert form({"error": {"code": -32602, "message": "x"}}) != form(text("x"))


def test_against_a_command_on_whole_process_traces_of_several_sessions() -> None:
    """Each session's process replays the recording's other sessions in-process, so the
    state they share (a balance, a counter) is as it was; HTTP and WebSocket recordings,
    and one whose tools run in worker threads that race a deadline."""
    live = ROOT / "traces" / "live"
    for name, server in (("bank-http-mcpactor-1", "bank_server.py"),
                         ("entropy-http-mcpactor-1", "entropy_server.py"),
                         ("bank-ws-mcpactor-1", "bank_server.py"),
                         ("threads-http-sdk-1", "threads_server.py")):
        code, out, err = run_cli("replay", str(live / f"{name}.jsonl"), "--against",
                                 _live(f"{ROOT / 'traces' / 'servers' / server}:server"))
        assert code == 0, (name, out, err)
        assert "(following the recording): same" in out, (name, out)
