"""``mcpactor trace export --format perfetto``: a real recording (a server over stdio
with concurrent calls, progress and a cancellation) exported, and checked against the
Trace Event Format: a JSON Schema of its JSON Object Format and of the event phases we
write, and the rules Perfetto's and Chrome's importers apply (complete slices on one
thread nest; every flow starts once and ends once, later, inside a slice of its track;
every process and thread used is named). Perfetto's trace processor itself cannot be
installed here (its Python package downloads the binary at run time)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
import trio

from mcpactor import connect_stdio
from mcpactor.protocol.errors import RequestTimeout

HERE = Path(__file__).resolve().parent
SERVER = f"{HERE / 'observed_server.py'}:server"

EVENT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["traceEvents"],
    "properties": {
        "traceEvents": {"type": "array", "items": {"$ref": "#/$defs/event"}},
        "displayTimeUnit": {"enum": ["ms", "ns"]},
        "otherData": {"type": "object"},
    },
    "$defs": {
        "event": {
            "type": "object",
            "required": ["ph", "pid", "tid"],
            "properties": {
                "ph": {"enum": ["X", "s", "t", "f", "M"]},
                "name": {"type": "string", "minLength": 1},
                "cat": {"type": "string"},
                "ts": {"type": "number", "minimum": 0},
                "dur": {"type": "number", "minimum": 0},
                "pid": {"type": "integer", "minimum": 0},
                "tid": {"type": "integer", "minimum": 0},
                "id": {"type": ["integer", "string"]},
                "bp": {"const": "e"},
                "args": {"type": "object"},
            },
            "allOf": [
                {"if": {"properties": {"ph": {"const": "X"}}},
                 "then": {"required": ["name", "ts", "dur"]}},
                {"if": {"properties": {"ph": {"enum": ["s", "t", "f"]}}},
                 "then": {"required": ["name", "cat", "ts", "id"]}},
                {"if": {"properties": {"ph": {"const": "f"}}}, "then": {"required": ["bp"]}},
                {"if": {"properties": {"ph": {"const": "M"}}},
                 "then": {"required": ["name", "args"],
                          "properties": {"name": {"enum": ["process_name", "thread_name",
                                                           "thread_sort_index"]}}}},
            ],
        },
    },
}


def check_trace_event_format(doc: dict[str, Any]) -> None:
    """The schema, then the importers' rules."""
    jsonschema.Draft202012Validator(EVENT_SCHEMA).validate(doc)
    events = doc["traceEvents"]
    named_p = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    named_t = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M"
               and e["name"] == "thread_name"}
    slices: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for e in events:
        if e["ph"] != "M":
            assert e["pid"] in named_p and (e["pid"], e["tid"]) in named_t, e
        if e["ph"] == "X":
            slices.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for track, spans in slices.items():
        spans.sort()
        stack: list[float] = []
        for start, end in spans:
            while stack and stack[-1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1], f"slices overlap on {track}: {spans}"
            stack.append(end)

    def inside(e: dict[str, Any]) -> bool:
        return any(a <= e["ts"] <= b for a, b in slices.get((e["pid"], e["tid"]), []))

    flows: dict[Any, list[dict[str, Any]]] = {}
    for e in events:
        if e["ph"] in "stf":
            flows.setdefault(e["id"], []).append(e)
            assert inside(e), f"flow event outside any slice of its track: {e}"
    for fid, chain in flows.items():
        phases = [e["ph"] for e in chain]
        assert phases[0] == "s" and phases.count("s") == 1, (fid, phases)
        assert phases.count("f") <= 1 and all(p == "t" for p in phases[1:-1]), (fid, phases)
        times = [e["ts"] for e in chain]
        assert times == sorted(times), (fid, chain)


async def _record(trace_file: Path) -> None:
    command = [sys.executable, "-m", "mcpactor", "run", SERVER, "--trace", str(trace_file)]
    async with connect_stdio(command) as client:
        async with trio.open_nursery() as nursery:
            for city in ("a", "b", "c"):
                nursery.start_soon(client.call_tool, "lookup", {"city": city})
            nursery.start_soon(lambda: client.call_tool("steps", {"n": 3},
                                                        on_progress=lambda *a: None))
        with pytest.raises(RequestTimeout):
            await client.call_tool("hold", {"seconds": 5}, timeout=0.2)
        await client.list_tools()


def _export(trace_file: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcpactor", "trace", "export", str(trace_file),
                           "--format", "perfetto", "-o", str(out)],
                          capture_output=True, text=True, timeout=60)


async def test_export_is_valid_trace_event_json(tmp_path: Path) -> None:
    trace_file = tmp_path / "t.jsonl"
    await _record(trace_file)
    out = tmp_path / "t.json"
    done = _export(trace_file, out)
    assert done.returncode == 0, done.stderr
    assert "ui.perfetto.dev" in done.stdout
    doc = orjson.loads(out.read_bytes())
    check_trace_event_format(doc)
    events = doc["traceEvents"]
    threads = {e["args"]["name"] for e in events if e["ph"] == "M"
               and e["name"] == "thread_name"}
    assert {"reader", "writer", "supervisor"} <= threads
    handlers = [t for t in threads if t.startswith("handler:")]
    assert len(handlers) == 6  # three lookups, steps, hold, tools/list
    runs = {e["name"] for e in events if e["ph"] == "X" and e["cat"] == "handler"}
    assert {"tools/call lookup", "tools/call steps", "tools/call hold"} <= runs
    hold = next(e for e in events if e["ph"] == "X" and e["name"] == "tools/call hold")
    assert hold["args"]["outcome"] == "cancelled"
    cats = {}
    for e in events:
        if e["ph"] == "f":
            cats[e["cat"]] = cats.get(e["cat"], 0) + 1
    # request -> response flows for every answered request, one cancellation flow.
    assert cats.get("request", 0) >= 6 and cats.get("cancel") == 1


def test_the_schema_check_can_fail() -> None:
    good = {"traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "p"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "t"}},
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
        {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 2, "dur": 3},
        {"ph": "s", "name": "f", "cat": "c", "id": 1, "pid": 1, "tid": 1, "ts": 1},
        {"ph": "f", "bp": "e", "name": "f", "cat": "c", "id": 1, "pid": 1, "tid": 1, "ts": 4},
    ]}
    check_trace_event_format(good)
    bad_overlap = orjson.loads(orjson.dumps(good))
    bad_overlap["traceEvents"][3]["dur"] = 30
    with pytest.raises(AssertionError, match="overlap"):
        check_trace_event_format(bad_overlap)
    bad_flow = orjson.loads(orjson.dumps(good))
    bad_flow["traceEvents"][5]["ts"] = 50
    with pytest.raises(AssertionError, match="outside"):
        check_trace_event_format(bad_flow)
    no_dur = orjson.loads(orjson.dumps(good))
    del no_dur["traceEvents"][2]["dur"]
    with pytest.raises(jsonschema.ValidationError):
        check_trace_event_format(no_dur)


def test_export_errors_are_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "mcpactor", "trace", "export",
                           str(tmp_path / "missing.jsonl"), "--format", "perfetto", "-o",
                           str(tmp_path / "x.json")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().endswith("no such trace file")
