"""Shared helpers for the replay tests (imported by name; tests have no packages)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "traces"
RACE_SERVER = f"{TRACES / 'servers' / 'race_server.py'}:server"


def record_module() -> ModuleType:
    """``traces/record.py`` (the corpus generator), imported once."""
    if "mcpactor_trace_record" in sys.modules:
        return sys.modules["mcpactor_trace_record"]
    sys.path.insert(0, str(TRACES))
    spec = importlib.util.spec_from_file_location("mcpactor_trace_record", TRACES / "record.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mcpactor_trace_record"] = module
    spec.loader.exec_module(module)
    return module


def run_cli(*argv: str) -> tuple[int, str, str]:
    """Run ``mcpactor ARGV`` in this process: (exit status, stdout, stderr)."""
    from mcpactor.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def events_of(lines: tuple[bytes, ...] | list[bytes]) -> list[dict[str, Any]]:
    """Decoded events of a replay output (header dropped)."""
    decoded = [orjson.loads(x) for x in lines]
    return [e for e in decoded if e.get("type") != "header"]


def answers(events: list[dict[str, Any]], rid: Any) -> list[dict[str, Any]]:
    """Responses the server sent to the client's request ``rid``."""
    return [
        e["msg"] for e in events
        if e["kind"] == "message_out" and isinstance(e["msg"], dict)
        and e["msg"].get("id") == rid and "method" not in e["msg"]
    ]


def kinds(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The events of one kind."""
    return [e for e in events if e["kind"] == kind]


def assert_replays_as_recorded(trace: Path, ids: Iterable[Any], *, times: int,
                               before: Callable[[], None] | None = None) -> None:
    """Replay ``trace`` ``times`` times (``-o`` beside it): each replay is faithful and
    answers each request id in ``ids`` as the recording did, byte for byte.
    ``before``: run before each replay (to let a live clock move on, say)."""
    original = events_of(trace.read_bytes().splitlines())
    wanted = list(ids)
    out = trace.with_name(trace.stem + ".replayed.jsonl")
    for _ in range(times):
        if before is not None:
            before()
        code, stdout, stderr = run_cli("replay", str(trace), "-o", str(out))
        assert code == 0, (stdout, stderr)
        assert "faithful" in stdout
        replayed = events_of(out.read_bytes().splitlines())
        for rid in wanted:
            assert answers(replayed, rid) == answers(original, rid)
