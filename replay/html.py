"""``mcpactor trace html``: a self-contained sequence diagram of one trace.

Lanes, left to right: the peer (the client, or the server in a client's trace), the
session's actors (supervisor, reader, writer, notifier, tracker, and the client code's
own lane in a client trace), then one lane per handler. Messages are arrows between
the peer and the reader/writer; everything else is a dot on its actor's lane. Hovering
shows the event's JSON. No scripts, fonts or styles are fetched from anywhere.
"""

from __future__ import annotations

import html
from typing import Any

import orjson

from mcpactor.tracing.encode import dumps

from .interleave import Interleaving
from .render import describe
from .trace import Event, Trace

_ROW = 22
_LANE = 150
_TOP = 60
_ACTORS = ("supervisor", "reader", "writer", "notifier", "tracker")
_COLORS = {
    "message_in": "#1f6feb",
    "message_out": "#2da44e",
    "cancel_requested": "#cf222e",
    "cancel_applied": "#cf222e",
    "timer_fired": "#bc4c00",
    "handler_failed": "#cf222e",
    "actor_failed": "#cf222e",
    "transport_broken": "#cf222e",
    "message_dropped": "#8250df",
    "response_dropped": "#8250df",
}

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 16px; color: #1f2328; }
h1 { font-size: 18px; } .meta { font-size: 12px; color: #57606a; }
h2 { font-size: 15px; } table.steps { border-collapse: collapse; font-size: 12px; }
table.steps td, table.steps th { border: 1px solid #d0d7de; padding: 2px 6px; text-align: left; }
tr.other { background: #fff1e5; } tr.mine { background: #ddf4ff; }
svg text { font-family: ui-monospace, monospace; font-size: 11px; }
.lane { stroke: #d0d7de; stroke-dasharray: 4 3; }
.head { font-weight: bold; font-size: 12px; }
"""


def _lanes(trace: Trace) -> list[str]:
    handlers = sorted(
        {ev.actor for ev in trace.events if ev.actor.startswith("handler:")},
        key=lambda a: next(e.index for e in trace.events if e.actor == a),
    )
    actors = [a for a in _ACTORS if any(ev.actor == a for ev in trace.events)]
    others = sorted({ev.actor for ev in trace.events} - set(actors) - set(handlers))
    return [_PEER, *actors, *others, *handlers]


#: The lane key of the other side of the session (a name no actor has).
_PEER = "(peer)"


def _peer_name(trace: Trace) -> str:
    return "server" if trace.role == "client" else "client"


def _x(lanes: dict[str, int], actor: str) -> int:
    return 40 + lanes.get(actor, 0) * _LANE


def _row(ev: Event, y: int, lanes: dict[str, int]) -> str:
    color = _COLORS.get(ev.kind, "#57606a")
    tip = html.escape(dumps(ev.data, option=orjson.OPT_INDENT_2).decode())
    label = html.escape(f"#{ev.seq} {ev.t:.4f}s {ev.kind} {describe(ev.data)}"[:110])
    parts = [f"<g><title>{tip}</title>"]
    if ev.kind in ("message_in", "message_out"):
        x1, x2 = _x(lanes, _PEER), _x(lanes, ev.actor)
        if ev.kind == "message_out":
            x1, x2 = x2, x1
        parts.append(
            f'<line x1="{x1}" y1="{y}" x2="{x2}" y2="{y}" stroke="{color}" stroke-width="2" '
            f'marker-end="url(#arrow-{ev.kind})"/>'
        )
        lx = min(x1, x2) + 8
    else:
        x = _x(lanes, ev.actor)
        parts.append(f'<circle cx="{x}" cy="{y}" r="5" fill="{color}"/>')
        lx = x + 10
    parts.append(f'<text x="{lx}" y="{y - 4}" fill="{color}">{label}</text></g>')
    return "".join(parts)


def render_interleaving(view: Interleaving) -> str:
    """The interleaving around one request as an HTML table: the request's own steps,
    and other handlers' steps (highlighted) that ran while it waited."""
    rows = []
    for s in view.steps:
        cls = "mine" if s.mine else "other"
        waits = "then returns" if s.waits_at is None else (
            f"to {html.escape(_place(s.waits_at))}: <code>{html.escape(s.code)}</code>")
        events = "<br>".join(html.escape(e) for e in s.events)
        rows.append(f'<tr class="{cls}"><td>{s.index}</td><td>{html.escape(s.task)}</td>'
                    f"<td>from {html.escape(_place(s.resumed_at))}</td><td>{waits}</td>"
                    f"<td>{events}</td></tr>")
    head = html.escape(f"Interleaving of request {view.request!r} ({view.method}, "
                       f"{view.handler}): {len(view.others)} step(s) of other handlers ran "
                       "while it waited")
    return (f'<h2>{head}</h2><table class="steps"><tr><th>step</th><th>task</th>'
            "<th>resumed</th><th>waits</th><th>emits</th></tr>" + "".join(rows) + "</table>")


def _place(where: str | None) -> str:
    if where is None:
        return "its start"
    path, _, line = where.rpartition(":")
    return f"{path.rsplit('/', 1)[-1]}:{line}"


def render_html(trace: Trace, interleaving: Interleaving | None = None) -> str:
    """The whole page as one string (with the interleaving around a request, if given)."""
    order = _lanes(trace)
    peer = _peer_name(trace)
    lanes = {name: i for i, name in enumerate(order)}
    width = 40 + len(order) * _LANE + 420
    height = _TOP + (len(trace.events) + 1) * _ROW
    svg: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">',
        "<defs>",
    ]
    for kind in ("message_in", "message_out"):
        svg.append(
            f'<marker id="arrow-{kind}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
            f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
            f'fill="{_COLORS[kind]}"/></marker>'
        )
    svg.append("</defs>")
    for name, i in lanes.items():
        x = 40 + i * _LANE
        svg.append(f'<line class="lane" x1="{x}" y1="{_TOP - 16}" x2="{x}" y2="{height}"/>')
        svg.append(
            f'<text class="head" x="{x}" y="{_TOP - 24}" text-anchor="middle">'
            f"{html.escape(peer if name == _PEER else name)}</text>"
        )
    for i, ev in enumerate(trace.events):
        svg.append(_row(ev, _TOP + (i + 1) * _ROW, lanes))
    svg.append("</svg>")
    h: dict[str, Any] = trace.header
    meta = html.escape(
        f"role={h.get('role')} transport={h.get('transport')} protocol={h.get('protocol_version')} "
        f"entry_point={h.get('entry_point')} clock={(h.get('clock') or {}).get('kind')} "
        f"seeds={h.get('seeds')} events={len(trace.events)}"
    )
    title = html.escape(str(trace.path or "trace"))
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
        f"<title>{title}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{title}</h1><p class=\"meta\">{meta}</p>"
        f"<p class=\"meta\">Hover an event for its JSON. Blue: {peer} to {h.get('role')}; "
        f"green: {h.get('role')} to {peer}; red: cancellations and failures; orange: "
        "timeouts.</p>"
        + (render_interleaving(interleaving) if interleaving is not None else "")
        + "".join(svg)
        + "</body></html>\n"
    )
