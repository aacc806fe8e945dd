"""Generated JSON-RPC against a live server, over stdio and over HTTP (issue 16).

A Hypothesis state machine talks to a real ``mcpactor run`` process of
``fuzz_server.py`` (a subprocess on stdio, or on 127.0.0.1 over Streamable HTTP). It
sends what a broken or hostile peer might: bytes that are not JSON, JSON that is not
JSON-RPC, wrong types in every field, random methods, ids of every kind (huge
integers, strings, floats, booleans, null, objects), batches (allowed or not by the
negotiated revision), stray responses, cancellations for anything, interleaved with
valid calls and calls that hang (they fill the two handler slots and the queue, so
the head-of-line rules are exercised too).

Invariants:

- the server process stays up, never logs a traceback and never answers -32603 (its
  tools cannot fail, so an internal error is a bug) or an HTTP 5xx;
- every well-formed request (``"jsonrpc": "2.0"``, a string or integer id, a string
  method, an object or no params) that the server accepted gets exactly one answer,
  carrying its own id digit for digit (at most one once it was cancelled); no id is
  answered twice, and nothing is answered with an id we never sent;
- a valid call after all of it works.

Every message that carries a string or integer id gets a fresh one, so answers can be
matched by id alone. The runs are derandomized and bounded (examples and steps) to
keep CI stable and within its budget.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

HERE = Path(__file__).parent
TARGET = f"{HERE / 'fuzz_server.py'}:server"
VERSIONS = ["2025-03-26", "2025-11-25"]  # with and without batches
WAIT = 10.0

SETTINGS = settings(
    derandomize=True,  # the same examples on every run: CI stays stable
    database=None,
    deadline=None,
    stateful_step_count=20,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)

# -- what we send ---------------------------------------------------------------------

WIDE = [2**64 + 1, 2**64, 2**63, -(2**63) - 1, -(2**70), 10**40, int("9" * 30)]
ids = st.one_of(st.integers(-(2**70), 2**70), st.sampled_from(WIDE), st.text(max_size=10))
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.sampled_from(WIDE),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=10,
)
bad_ids = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False),
                    st.lists(scalars, max_size=2), st.dictionaries(st.text(max_size=4), scalars,
                                                                  max_size=2))
METHODS = ["ping", "tools/list", "tools/call", "initialize", "resources/list", "prompts/list",
           "completion/complete", "logging/setLevel", "sampling/createMessage",
           "notifications/cancelled", "notifications/progress", "notifications/initialized",
           "notifications/roots/list_changed"]
methods = st.one_of(st.sampled_from(METHODS), st.text(max_size=12))
params = st.one_of(
    st.none(),
    st.fixed_dictionaries({"name": st.sampled_from(["echo", "nope", ""]),
                           "arguments": json_values}),
    st.dictionaries(st.text(max_size=8), json_values, max_size=3),
    json_values,  # wrong types: lists, numbers, strings
)


@st.composite
def messages(draw: st.DrawFn) -> Any:
    """One message as a peer might send it: valid, or wrong in any field."""
    shape = draw(st.sampled_from(["request", "request", "notification", "response", "error",
                                  "junk"]))
    if shape == "junk":
        return draw(json_values)  # often not even an object
    obj: dict[str, Any] = {}
    if draw(st.integers(0, 5)):
        obj["jsonrpc"] = "2.0"
    elif draw(st.booleans()):
        obj["jsonrpc"] = draw(json_values)
    if shape in ("request", "response", "error"):
        obj["id"] = draw(ids) if draw(st.integers(0, 4)) else draw(bad_ids)
    if shape in ("request", "notification"):
        obj["method"] = draw(methods) if draw(st.integers(0, 5)) else draw(json_values)
        p = draw(params)
        if p is not None or draw(st.booleans()):
            obj["params"] = p
    if shape == "response":
        obj["result"] = draw(st.one_of(st.dictionaries(st.text(max_size=4), scalars, max_size=2),
                                       json_values))
    if shape == "error":
        obj["error"] = draw(st.one_of(
            st.fixed_dictionaries({"code": st.integers(-33000, 0), "message": st.text(max_size=8)}),
            json_values))
    return obj


garbage = st.one_of(
    st.binary(min_size=1, max_size=40),
    st.sampled_from([b"{", b"[", b"]", b"{}", b"[]", b"null", b"1e400", b"NaN", b"\xff\xfe",
                     b'{"jsonrpc":"2.0","id":1e999,"method":"ping"}',
                     b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}']),
).map(lambda b: b.replace(b"\n", b" "))  # one message per line over stdio


SERVER_BUSY = -32005


def _int(text: str) -> Any:
    # An id past Python's int-from-text bound (4,300 digits) is answered digit for
    # digit: read it as its digits.
    try:
        return int(text)
    except ValueError:
        return text


_DECODER = json.JSONDecoder(parse_int=_int)


def _loads(data: bytes | str) -> Any:
    return _DECODER.decode(data.decode() if isinstance(data, bytes) else data)


def final_call(rid: Any) -> dict[str, Any]:
    """The valid call that must work after everything else."""
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "after"}}}


def key(rid: Any) -> str:
    """An id as a dict key: exact (huge integers) and type-aware (1 is not "1")."""
    return json.dumps(rid)


def encode(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def is_request(obj: Any) -> bool:
    """A well-formed request: it must get exactly one answer."""
    if type(obj) is not dict or obj.get("jsonrpc") != "2.0" or type(obj.get("method")) is not str:
        return False
    if "id" not in obj or type(obj["id"]) not in (int, str):
        return False
    p = obj.get("params")
    return p is None or type(p) is dict


# -- the model ----------------------------------------------------------------------------


class Model:
    """What was sent, what must be answered, and what came back."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.used: set[str] = set()
        self.counter = 0
        #: key -> cancelled? for the well-formed requests the server accepted.
        self.expected: dict[str, bool] = {}
        self.cancelled: set[str] = set()
        self.hangs: list[Any] = []

    def fresh(self, rid: Any) -> Any:
        """``rid`` if no message used it yet, else a new id of the same type."""
        while key(rid) in self.used:
            self.counter += 1
            rid = (2**64 + self.counter) * (-1 if self.counter % 2 else 1) \
                if type(rid) is int else f"fresh-{self.counter}"
        self.used.add(key(rid))
        return rid

    def freshen(self, obj: Any) -> Any:
        if type(obj) is dict and type(obj.get("id")) in (int, str):
            obj["id"] = self.fresh(obj["id"])
        return obj

    def note_cancels(self, obj: Any) -> None:
        # Conservative: any cancellation for an id relaxes that id to "at most once".
        for item in obj if type(obj) is list else [obj]:
            if type(item) is dict and item.get("method") == "notifications/cancelled":
                p = item.get("params")
                if type(p) is dict and type(p.get("requestId")) in (int, str):
                    self.cancelled.add(key(p["requestId"]))

    def requests_in(self, obj: Any) -> list[str]:
        """Keys of the well-formed requests the server must answer in ``obj``."""
        if type(obj) is list:
            if not obj or self.version != "2025-03-26":
                return []  # an empty or refused batch: one error for the whole of it
            return [key(item["id"]) for item in obj if is_request(item)]
        return [key(obj["id"])] if is_request(obj) else []


# -- the two ways to reach the server ----------------------------------------------------


class StdioWire:
    """A fresh ``mcpactor run`` subprocess, its stdout read by a thread."""

    def __init__(self) -> None:
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcpactor", "run", TARGET],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
        )
        self.answers: list[Any] = []
        self.bad_output: list[bytes] = []
        self.changed = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                msg = _loads(line)
            except ValueError:
                msg = None
                self.bad_output.append(line)
            with self.changed:
                if msg is not None:
                    self.answers.extend(msg if type(msg) is list else [msg])
                self.changed.notify_all()

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def wait_for(self, cond: Callable[[], bool]) -> bool:
        deadline = time.monotonic() + WAIT
        with self.changed:
            while not cond():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(left)
        return True

    def close(self) -> tuple[int | None, str]:
        assert self.proc.stdin is not None
        self.proc.stdin.close()  # a clean end of input
        try:
            code: int | None = self.proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            code = None
        self.reader.join(timeout=WAIT)
        self.err.seek(0)
        text = self.err.read().decode("utf-8", "replace")
        self.err.close()
        return code, text


class HttpWire:
    """One session on a running HTTP server; every POST in a thread of its own (a
    call that hangs holds its POST open until it is cancelled)."""

    def __init__(self, port: int, version: str) -> None:
        self.port = port
        self.version = version
        self.pool = ThreadPoolExecutor(max_workers=12)
        self.posts: list[tuple[list[str], Future[tuple[int, list[Any], Any]]]] = []
        init = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "1"}}}
        status, answers, headers = self._post(encode(init), with_session=False)
        assert status == 200, answers
        self.sid = headers
        status, _, _ = self._post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        assert status == 202

    def _post(self, body: bytes, with_session: bool = True) -> tuple[int, list[Any], Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT + 15)
        try:
            headers = {"Content-Type": "application/json",
                       "Accept": "application/json, text/event-stream"}
            if with_session:
                headers["Mcp-Session-Id"] = self.sid
                headers["Mcp-Protocol-Version"] = self.version
            conn.request("POST", "/mcp", body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            kind = resp.getheader("content-type") or ""
            answers: list[Any] = []
            if kind.startswith("text/event-stream"):
                for line in data.decode().split("\n"):
                    if line.startswith("data:") and line[5:].strip():
                        msg = _loads(line[5:])
                        answers.extend(msg if type(msg) is list else [msg])
            elif kind.startswith("application/json") and data:
                msg = _loads(data)
                answers.extend(msg if type(msg) is list else [msg])
            return resp.status, answers, resp.getheader("mcp-session-id")
        finally:
            conn.close()

    def send(self, data: bytes, requests: list[str]) -> Future[tuple[int, list[Any], Any]]:
        """POST in a thread of its own."""
        future = self.pool.submit(self._post, data)
        self.posts.append((requests, future))
        return future

    def close(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT)
        try:
            conn.request("DELETE", "/mcp", headers={"Mcp-Session-Id": self.sid,
                                                    "Mcp-Protocol-Version": self.version})
            conn.getresponse().read()
        finally:
            conn.close()
        self.pool.shutdown(wait=False, cancel_futures=True)


# -- the machine --------------------------------------------------------------------------


class WireMachine(RuleBasedStateMachine):
    """The rules are shared; ``open``/``deliver``/``finish`` are the transport's."""

    port: int | None = None  # HTTP: the running server's port

    def __init__(self) -> None:
        super().__init__()
        self.model: Model | None = None

    # -- transport hooks --

    def open(self, version: str) -> None:
        raise NotImplementedError

    def deliver(self, data: bytes, obj: Any) -> None:
        raise NotImplementedError

    def alive(self) -> bool:
        raise NotImplementedError

    def finish(self) -> None:
        raise NotImplementedError

    # -- rules --

    @initialize(version=st.sampled_from(VERSIONS))
    def start(self, version: str) -> None:
        self.model = Model(version)
        self.open(version)

    def _send(self, obj: Any) -> None:
        assert self.model is not None
        if type(obj) is list:
            obj = [self.model.freshen(item) for item in obj]
        else:
            obj = self.model.freshen(obj)
        self.model.note_cancels(obj)
        self.deliver(encode(obj), obj)

    @rule(text=st.text(max_size=20), rid=ids)
    def valid_call(self, text: str, rid: Any) -> None:
        self._send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": text}}})

    @rule(rid=ids)
    def ping(self, rid: Any) -> None:
        self._send({"jsonrpc": "2.0", "id": rid, "method": "ping"})

    @rule(method=st.sampled_from(["ping", "tools/list"]))
    def long_id(self, method: str) -> None:
        """An id past Python's int-from-text bound (4,300 digits), answered digit for
        digit; written by hand (json cannot), tracked as its digits (as _loads reads it)."""
        assert self.model is not None
        self.model.counter += 1
        digits = "7" * 4400 + str(self.model.counter)
        self.model.used.add(key(digits))
        self.deliver(b'{"jsonrpc":"2.0","id":%s,"method":"%s"}' % (digits.encode(),
                                                                  method.encode()),
                     {"jsonrpc": "2.0", "id": digits, "method": method})

    @precondition(lambda self: self.model is not None and len(self.model.hangs) < 3)
    @rule(rid=ids)
    def hanging_call(self, rid: Any) -> None:
        assert self.model is not None
        msg = self.model.freshen({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                  "params": {"name": "hang", "arguments": {}}})
        self.model.hangs.append(msg["id"])
        self.deliver(encode(msg), msg)

    @rule(msg=messages())
    def anything(self, msg: Any) -> None:
        self._send(msg)

    @rule(items=st.lists(messages(), max_size=5))
    def batch(self, items: list[Any]) -> None:
        self._send(items)

    @rule(data=garbage)
    def not_json(self, data: bytes) -> None:
        self.deliver(data, None)

    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        assert self.model is not None
        known = sorted(self.model.used)
        target = json.loads(data.draw(st.sampled_from(known))) if known and data.draw(
            st.booleans()) else data.draw(st.one_of(ids, bad_ids))
        self._send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": target, "reason": "fuzz"}})

    @invariant()
    def server_is_up(self) -> None:
        if self.model is not None:
            assert self.alive(), "the server process died"

    def teardown(self) -> None:
        if self.model is not None:
            self.finish()


def check_answers(model: Model, answers: list[Any], expected: list[str]) -> None:
    """Each expected request answered once (at most once if cancelled), no id twice,
    no id we never sent, no internal error."""
    counts: Counter[str] = Counter()
    for msg in answers:
        if type(msg) is not dict or "method" in msg:
            continue  # a notification (logs, list changes) or a server request
        assert msg.get("jsonrpc") == "2.0" and ("result" in msg) != ("error" in msg), msg
        if "error" in msg:
            assert msg["error"]["code"] != -32603, f"internal error: {msg}"
        rid = msg.get("id")
        if rid is None:
            continue
        k = key(rid)
        assert k in model.used, f"answered an id never sent: {msg}"
        counts[k] += 1
    twice = [k for k, n in counts.items() if n > 1]
    assert not twice, f"answered more than once: {twice}"
    missing = [k for k in expected if counts[k] == 0 and k not in model.cancelled]
    assert not missing, f"never answered: {missing}"


class StdioMachine(WireMachine):
    """Over stdio: a fresh server process per example."""

    wire: StdioWire

    def open(self, version: str) -> None:
        self.wire = StdioWire()
        self.expected: list[str] = []
        self.wire.send(encode({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                               "params": {"protocolVersion": version, "capabilities": {},
                                          "clientInfo": {"name": "fuzz", "version": "1"}}}))
        assert self.model is not None
        self.model.used.add(key("init"))
        assert self.wire.wait_for(lambda: any(a.get("id") == "init" for a in self.wire.answers
                                              if type(a) is dict))
        self.wire.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def deliver(self, data: bytes, obj: Any) -> None:
        assert self.model is not None
        self.expected.extend(self.model.requests_in(obj) if obj is not None else [])
        self.wire.send(data)

    def alive(self) -> bool:
        return self.wire.proc.poll() is None

    def finish(self) -> None:
        model = self.model
        assert model is not None
        wire = self.wire
        try:
            for rid in model.hangs:  # let everything queued behind them run
                self._send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": rid}})
            done = wire.wait_for(lambda: all(
                self._answered_key(k) for k in self.expected if k not in model.cancelled))
            assert done, "timed out waiting for answers"
            # A valid call works after all of it (retried while the server says it is
            # busy: a burst of calls may fill its two slots and its queue).
            for _ in range(50):
                final = model.fresh("final")
                self.deliver(encode(final_call(final)), None)
                assert wire.wait_for(lambda rid=final: self._answered(rid)), "no answer"
                last = next(a for a in wire.answers if type(a) is dict and a.get("id") == final)
                if last.get("error", {}).get("code") != SERVER_BUSY:
                    break
                time.sleep(0.05)
            assert last.get("result", {}).get("content", [{}])[0].get("text") == "after", last
            check_answers(model, list(wire.answers), self.expected)
            assert not wire.bad_output, wire.bad_output
        finally:
            code, err = wire.close()
        assert "Traceback" not in err, err
        assert code == 0, (code, err)

    def _answered(self, rid: Any) -> bool:
        return self._answered_key(key(rid))

    def _answered_key(self, k: str) -> bool:
        return any(type(a) is dict and "method" not in a and "id" in a and key(a["id"]) == k
                   for a in self.wire.answers)


class HttpMachine(WireMachine):
    """Over Streamable HTTP: one server for the test, a new session per example."""

    wire: HttpWire

    def open(self, version: str) -> None:
        assert self.port is not None
        self.wire = HttpWire(self.port, version)
        self.hang_posts: list[tuple[Any, Future[tuple[int, list[Any], Any]]]] = []
        assert self.model is not None
        self.model.used.add(key("init"))

    def deliver(self, data: bytes, obj: Any) -> None:
        assert self.model is not None
        future = self.wire.send(data, self.model.requests_in(obj) if obj is not None else [])
        if type(obj) is dict and obj.get("id") in self.model.hangs:
            self.hang_posts.append((obj["id"], future))

    #: The server process (set by the test).
    proc: subprocess.Popen[bytes] | None = None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def finish(self) -> None:
        model = self.model
        assert model is not None
        wire = self.wire
        try:
            for rid, future in self.hang_posts:
                # POSTs race each other: a cancellation that overtook its request was
                # rightly dropped, so cancel until the call's POST ends.
                model.cancelled.add(key(rid))
                deadline = time.monotonic() + WAIT
                while not future.done() and time.monotonic() < deadline:
                    wire._post(encode({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                       "params": {"requestId": rid}}))
                    try:
                        future.result(timeout=0.2)
                    except TimeoutError:
                        pass
            all_answers: list[Any] = []
            for requests, future in wire.posts:
                status, answers, _ = future.result(timeout=WAIT)
                assert status < 500, (status, answers)
                all_answers.extend(answers)
                if status == 200:
                    check_answers(model, answers, requests)
                elif status == 202:
                    assert not requests or all(k in model.cancelled for k in requests), requests
                    assert not answers, answers
                else:  # a refusal of the whole POST: its requests were not run
                    assert all(type(a) is dict and "error" in a for a in answers), answers
            check_answers(model, all_answers, [])
            for _ in range(50):  # as over stdio, retried while busy
                final = model.fresh("final")
                status, answers, _ = wire._post(encode(final_call(final)))
                assert status == 200, answers
                (last,) = [a for a in answers if a.get("id") == final]
                if last.get("error", {}).get("code") != SERVER_BUSY:
                    break
                time.sleep(0.05)
            assert last.get("result", {}).get("content", [{}])[0].get("text") == "after", last
        finally:
            wire.close()
        assert self.alive(), "the server process died"


# -- the tests ----------------------------------------------------------------------------


def test_generated_input_over_stdio() -> None:
    run_state_machine_as_test(StdioMachine, settings=settings(SETTINGS, max_examples=30))


@pytest.fixture
def http_port(http_server: Callable[..., tuple[subprocess.Popen[bytes], str]]) -> Iterator[
        tuple[int, subprocess.Popen[bytes]]]:
    proc, url = http_server(TARGET)
    yield int(url.rsplit(":", 1)[1].split("/")[0]), proc


def test_generated_input_over_http(http_port: tuple[int, subprocess.Popen[bytes]]) -> None:
    port, proc = http_port

    class Machine(HttpMachine):
        pass

    Machine.port = port
    Machine.proc = proc
    run_state_machine_as_test(Machine, settings=settings(SETTINGS, max_examples=100))
