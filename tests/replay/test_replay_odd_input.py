"""Input a peer may legally (or illegally) send, recorded by a real ``mcpactor run
--trace`` process and replayed by a real ``mcpactor replay``: integers past 64 bits as
request ids, progress tokens and cancelled ids (orjson neither writes nor reads them
exactly), and lines that are not UTF-8. Each once stopped the recording, or replayed
differently from how it ran."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]
SERVER = f"{Path(__file__).with_name('odd_input_server.py')}:server"
CLI = [sys.executable, "-m", "mcpactor.cli"]
WIDE = 18446744073709551617  # 2**64 + 1


def _init(version: str) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}) + b'\n' \
        + b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'


def _record(trace: Path, version: str, lines: list[bytes]) -> tuple[bytes, str, float]:
    """Run the server over stdio with ``lines`` after the handshake; its output, its
    stderr and how long it took to exit once its input ended."""
    proc = subprocess.Popen([*CLI, "run", SERVER, "--trace", str(trace)], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(_init(version) + b"".join(line + b"\n" for line in lines))
    proc.stdin.flush()
    time.sleep(1.0)  # the answers are sent while the input is still open
    closed = time.monotonic()
    out, err = proc.communicate(b"", timeout=60)
    took = time.monotonic() - closed
    assert proc.returncode == 0, err
    return out, err.decode(), took


def _replay(trace: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "replay", str(trace)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)


def _check(trace: Path, err: str, took: float) -> list[dict[str, object]]:
    # The recording is whole: nothing the sink refused, no gap, an ordinary end.
    assert "trace" not in err, err
    assert took < 8, took  # a stopped sink made the end wait 10 s for its answer
    data = trace.read_bytes()
    assert b"trace_truncated" not in data
    replayed = _replay(trace)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "faithful" in replayed.stdout and "Traceback" not in replayed.stderr
    from mcpactor.tracing.encode import loads

    return [loads(x) for x in data.splitlines()[1:]]


def _call(rid: int, tool: str, arguments: dict[str, object]) -> bytes:
    params = orjson.dumps({"name": tool, "arguments": arguments})
    return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}' % (rid, params)


def test_wide_request_ids_are_recorded_and_replayed_exactly(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    out, err, took = _record(trace, "2025-06-18", [
        b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % WIDE,
        _call(-WIDE, "echo", {"text": "hi"}),
        _call(2**70, "slow", {"seconds": 30}),
        # The running call cancelled by its wide id; and one for no such request.
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}'
        % 2**70,
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}'
        % 2**80,
    ])
    assert b'{"jsonrpc":"2.0","id":%d,"result":{}}' % WIDE in out
    assert b'"id":%d,"result"' % -WIDE in out
    events = _check(trace, err, took)
    assert -WIDE in {e["id"] for e in events if e["kind"] == "handler_started"}
    assert 2**70 in {e["id"] for e in events if e["kind"] == "cancel_applied"}
    assert any(e["kind"] == "message_out" and e.get("related") == WIDE for e in events)
    assert any(e["kind"] == "cancel_requested" and e["id"] == 2**70 for e in events)
    # The live server read the unknown id exactly, and so must the replay (it once
    # read a float there: "cancellation without a valid requestId").
    assert any(e["kind"] == "message_dropped" and str(2**80) in str(e["reason"])
               for e in events)


def test_wide_ids_and_progress_tokens_in_a_batch(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    token = 2**65
    call = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo",' \
           b'"arguments":{"text":"a"},"_meta":{"progressToken":%d}}}' % (WIDE, token)
    out, err, took = _record(trace, "2025-03-26", [
        b"[" + call + b',{"jsonrpc":"2.0","id":%d,"method":"ping"}]' % -(2**64),
    ])
    assert b'"id":%d' % WIDE in out and b'"id":%d' % -(2**64) in out
    events = _check(trace, err, took)  # the replay once crashed: InexactNumber
    (batch,) = [e["msg"] for e in events if e["kind"] == "message_in"
                and isinstance(e["msg"], list)]
    assert batch[0]["params"]["_meta"]["progressToken"] == token  # type: ignore[index]


def test_input_that_is_not_utf8_replays_with_its_own_bytes(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    bad = b'{"jsonrpc":"2.0","id":3,"method":"ping","x":"\xff\xfe"}'
    out, err, took = _record(trace, "2025-06-18", [bad, b"hello {", b"\xc3(\xa0\xa1"])
    assert out.count(b"Parse error") == 3
    events = _check(trace, err, took)  # it once replayed as "unexpected character"
    raws = [e for e in events if e["kind"] == "message_in" and "raw" in e]
    assert [base64.b64decode(str(e["raw_b64"])) if "raw_b64" in e else
            str(e["raw"]).encode() for e in raws] == [bad, b"hello {", b"\xc3(\xa0\xa1"]
    assert "raw_b64" not in raws[1]  # UTF-8 text is exact as it is


def test_a_fifo_that_no_process_reads_is_refused_not_waited_for(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    proc = subprocess.run([*CLI, "run", SERVER, "--trace", str(fifo)], cwd=ROOT,
                          capture_output=True, text=True, timeout=30, check=False, input="")
    assert proc.returncode == 2
    assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1
    assert "FIFO that no process reads" in proc.stderr and "Traceback" not in proc.stderr


def test_a_recording_started_by_a_program_refuses_it_too(tmp_path: Path) -> None:
    # Server.run(trace=FIFO) and Recorder(...) check the path as the command does: in a
    # thread here, so that a regression (a wait in open()) fails instead of hanging.
    from mcpactor.tracing import Recorder, RecordingError, TraceHeader

    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    raised: list[BaseException] = []

    def start() -> None:
        try:
            Recorder(TraceHeader(role="server", transport="stdio"), fifo)
        except RecordingError as exc:
            raised.append(exc)

    thread = threading.Thread(target=start, daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "the recorder waits for a reader of the FIFO"
    assert raised and "FIFO that no process reads" in str(raised[0])


def test_a_fifo_with_a_reader_gets_the_trace(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as f:  # opens once a writer does: the server's check
            got.append(f.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(0.2)
    _, err, _ = _record(fifo, "2025-06-18", [b'{"jsonrpc":"2.0","id":1,"method":"ping"}'])
    reader.join(30)
    assert not reader.is_alive(), err
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(got[0])
    replayed = _replay(copy)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr



def test_the_trace_reader_keeps_wide_integers_exact() -> None:
    """A replay feeds the recorded messages back: read as floats (orjson), a cancelled
    id or a progress token past 64 bits came back as 1.18e+21, which the server then
    read differently from how it ran (or not at all: InexactNumber)."""
    from mcpactor.replay.trace import parse_trace

    from mcpactor.tracing.encode import input_bytes

    header = b'{"type":"header","format":"mcpactor-trace","format_version":2}'
    cancel = (b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":'
              b'{"requestId":1180591620717411303424}}')
    line = (b'{"seq":1,"t":0.1,"session":"s","actor":"reader","kind":"message_in","msg":'
            + cancel + b',"yields":0}')
    started = (b'{"seq":2,"t":0.1,"session":"s","actor":"handler:-18446744073709551617",'
               b'"kind":"handler_started","id":-18446744073709551617,"method":"ping"}')
    trace = parse_trace(header + b"\n" + line + b"\n" + started + b"\n", require_end=False)
    first, second = trace.events
    assert first.data["msg"]["params"]["requestId"] == 2**70
    assert input_bytes(first.data) == cancel
    assert second.data["id"] == -WIDE and type(second.data["id"]) is int


def _odd_recording(trace: Path) -> None:
    bad = b'{"jsonrpc":"2.0","id":3,"method":"ping","x":"\xff\xfe"}'
    _, err, took = _record(trace, "2025-06-18", [
        b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % WIDE,
        bad, b"\xc3(\xa0\xa1",
        _call(-WIDE, "echo", {"text": "hi"}),
    ])
    _check(trace, err, took)


def test_a_follow_run_feeds_the_exact_bytes_and_reads_wide_ids(tmp_path: Path) -> None:
    """The follow run (changed code, and a live target following its recording) hands
    the session the recorded input as its exact bytes (raw_b64) and reads what the code
    sends with wide ids exact: an unchanged server answers as recorded, every recorded
    step taken at its place."""
    from mcpactor.replay.compare import compare, server_messages
    from mcpactor.replay.exact.follow import replay_follow
    from mcpactor.replay.runner import load_server
    from mcpactor.replay.trace import load_trace

    from mcpactor.tracing import entropy

    path = tmp_path / "t.jsonl"
    _odd_recording(path)
    trace = load_trace(path)
    entropy.install()
    try:
        sent, scheduler = replay_follow(trace, load_server(SERVER, trace.path))
    finally:
        entropy.uninstall()
    assert any(isinstance(m, dict) and m.get("id") == -WIDE for _, m in sent)
    recorded, methods = server_messages(trace)
    assert compare(recorded, sent, methods).same
    # Every recorded step taken at its place but the supervisor's last two: live, its
    # closing of the real stdio took steps that a replay's transport does not take.
    assert scheduler.followed + scheduler.skipped == sum(len(b.run) for b in trace.scheds)
    assert scheduler.skipped <= 2


def test_against_a_command_gets_the_exact_bytes_too(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _odd_recording(path)
    target = " ".join([*CLI, "run", SERVER])
    done = subprocess.run([*CLI, "replay", str(path), "--against", target], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    # The recording's input ended before its answers went out: the target, following,
    # is handed the end of its input once it says it follows, not after the answers.
    assert "(following the recording): same" in done.stdout, done.stdout
    assert "Traceback" not in done.stderr
