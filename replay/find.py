"""``mcpactor trace find TRACE_ID PATH...``: from a span in Jaeger (Tempo, Honeycomb...)
to the recorded request, and the command that replays it.

A trace file knows a request's W3C trace id two ways: the ``otel_span`` record an
observed server writes beside the request's handler (its span's trace and span ids),
and the ``traceparent`` in the ``_meta`` of a message that crossed the wire (the
client's context on a request a server received, or the one a recorded client sent).
Each file is scanned line by line; only lines that hold the id (or start a handler) are
decoded, so a large folder of traces is searched at the speed of reading it.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import attrs

from mcpactor.tracing.encode import dumps, loads

_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")


class BadTraceId(ValueError):
    """What was given is not a W3C trace id."""


@attrs.frozen
class Found:
    """One request of the trace id in one file."""

    file: Path
    session: str | None
    request: Any
    method: str | None
    #: The event that ties the request to the trace id: ``otel_span`` (the server's own
    #: span), ``message_in``/``message_out`` (a ``traceparent`` on the wire).
    via: str
    via_seq: int
    span_id: str | None
    #: The request's ``handler_started`` event, if the file has one.
    handler_seq: int | None

    def replay_command(self) -> str:
        """The command that replays the file up to this request and shows its steps (a
        request a recorded client sent: up to its sending)."""
        if self.via == "message_out" and self.handler_seq is None:
            return f"mcpactor replay {shlex.quote(str(self.file))} --until {self.via_seq}"
        rid = dumps(self.request).decode()
        # "--opt=value": a session id or request id may begin with "-", which argparse
        # would take for an option if it were a separate argument.
        cmd = f"mcpactor replay {shlex.quote(str(self.file))} --request={shlex.quote(rid)}"
        return cmd + (f" --session={shlex.quote(self.session)}" if self.session else "")


def parse_trace_id(text: str) -> str:
    """A trace id as Jaeger shows it (32 hex digits) or a whole ``traceparent``."""
    t = text.strip().lower()
    if _TRACE_ID.match(t):
        if t == "0" * 32:
            raise BadTraceId("the all-zero trace id is invalid")
        return t
    m = _TRACEPARENT.match(t)
    if m:
        return m.group(1)
    raise BadTraceId(f"{text!r} is not a trace id: give its 32 hex digits (as a tracing UI "
                     "shows it) or a whole traceparent (00-<trace id>-<span id>-01)")


def trace_files(paths: list[str]) -> Iterator[Path]:
    """The ``.jsonl`` files among ``paths`` (folders searched recursively)."""
    for text in paths:
        p = Path(text)
        if p.is_dir():
            for root, _dirs, files in os.walk(p):
                for name in sorted(files):
                    if name.endswith(".jsonl"):
                        yield Path(root) / name
        elif p.is_file():
            yield p
        else:
            raise FileNotFoundError(f"{text}: no such file or folder")


def find(trace_id: str, paths: list[str]) -> list[Found]:
    """Every request of ``trace_id`` in the traces under ``paths``."""
    out: list[Found] = []
    for path in trace_files(paths):
        out.extend(_scan(path, trace_id))
    return out


def _scan(path: Path, trace_id: str) -> list[Found]:
    needle = trace_id.encode()
    starts: dict[tuple[Any, str], tuple[int, str | None]] = {}
    hits: list[tuple[dict[str, Any], Any, str | None]] = []
    try:
        with open(path, "rb") as f:
            first = f.readline()
            if b'"mcpactor-trace"' not in first:
                return []
            for raw in f:
                if b'"handler_started"' in raw:
                    ev = _loads(raw)
                    if ev is not None and ev.get("kind") == "handler_started":
                        key = (dumps(ev.get("id")), str(ev.get("session")))
                        starts[key] = (int(ev.get("seq", 0)), ev.get("method"))
                if needle not in raw.lower():
                    continue
                ev = _loads(raw)
                if ev is None:
                    continue
                hits.extend(_matches(ev, trace_id))
    except OSError:
        return []
    found: list[Found] = []
    seen: set[tuple[Any, ...]] = set()
    # One answer per request: the server's own span first, then the wire's traceparent.
    hits.sort(key=lambda hit: hit[0].get("kind") != "otel_span")
    for ev, rid, span_id in hits:
        session = ev.get("session")
        key = (dumps(rid), str(session))
        start = starts.get(key)
        method = ev.get("method") if isinstance(ev.get("method"), str) else None
        msg = ev.get("msg")
        if method is None and isinstance(msg, dict):
            method = msg.get("method")
        if method is None and start is not None:
            method = start[1]
        ident = key
        if ident in seen:
            continue
        seen.add(ident)
        found.append(Found(path, None if session is None else str(session), rid, method,
                           str(ev.get("kind")), int(ev.get("seq", 0)), span_id,
                           start[0] if start is not None else None))
    found.sort(key=lambda f: f.via_seq if f.handler_seq is None else f.handler_seq)
    return found


def _matches(ev: dict[str, Any], trace_id: str) -> Iterator[tuple[dict[str, Any], Any, str | None]]:
    kind = ev.get("kind")
    if kind == "otel_span":
        if str(ev.get("trace_id", "")).lower() == trace_id:
            yield ev, ev.get("id"), ev.get("span_id")
        return
    if kind not in ("message_in", "message_out"):
        return
    msg = ev.get("msg")
    for item in msg if isinstance(msg, list) else [msg]:
        if not isinstance(item, dict) or "method" not in item or "id" not in item:
            continue
        params = item.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        tp = meta.get("traceparent") if isinstance(meta, dict) else None
        if isinstance(tp, str):
            m = _TRACEPARENT.match(tp.strip().lower())
            if m and m.group(1) == trace_id:
                yield {**ev, "msg": item}, item.get("id"), tp.split("-")[2]


def _loads(raw: bytes) -> dict[str, Any] | None:
    try:
        obj = loads(raw)  # request ids past 64 bits exact
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def print_found(found: list[Found], trace_id: str, out: TextIO) -> None:
    """Each request of the trace id: the file, the event, and the replay command."""
    if not found:
        print(f"trace {trace_id}: no recorded request", file=out)
        return
    for f in found:
        what = f"request {dumps(f.request).decode()}"
        if f.method:
            what += f" ({f.method})"
        where = f"{f.file}: session {f.session}, {what}"
        event = (f"handler_started #{f.handler_seq}, " if f.handler_seq is not None else "")
        via = {"otel_span": "the server's span", "message_in": "traceparent received",
               "message_out": "traceparent sent"}.get(f.via, f.via)
        span = f", span {f.span_id}" if f.span_id else ""
        print(where, file=out)
        print(f"  event: {event}{f.via} #{f.via_seq} ({via}{span})", file=out)
        print(f"  replay: {f.replay_command()}", file=out)
