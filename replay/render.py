"""One-line descriptions of trace events, shared by every text view."""

from __future__ import annotations

from typing import Any

from mcpactor.tracing.encode import dumps


def _short(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else dumps(value).decode()
    return text if len(text) <= width else text[: width - 3] + "..."


def describe_message(msg: Any) -> str:
    """``tools/call #2``, ``result #2``, ``error #2 -32603``, ``batch of 3``."""
    if isinstance(msg, list):
        return f"batch of {len(msg)}"
    if not isinstance(msg, dict):
        return _short(msg)
    rid = msg.get("id")
    ident = f" #{_short(rid, 20)}" if rid is not None else ""
    if "method" in msg:
        method = str(msg["method"])
        params = msg.get("params") or {}
        if method == "tools/call" and isinstance(params, dict):
            method += f" {params.get('name')}"
        elif method == "notifications/cancelled" and isinstance(params, dict):
            method += f" (request #{params.get('requestId')})"
        elif method == "notifications/progress" and isinstance(params, dict):
            method += f" {params.get('progress')}/{params.get('total')}"
        return f"{method}{ident}"
    if "error" in msg:
        err = msg.get("error") or {}
        code = err.get("code") if isinstance(err, dict) else None
        return f"error{ident} {code}"
    if "result" in msg:
        result = msg.get("result")
        flag = " isError" if isinstance(result, dict) and result.get("isError") else ""
        return f"result{ident}{flag}"
    return _short(msg)


def describe(ev: dict[str, Any]) -> str:
    """What happened, in a few words."""
    kind = ev.get("kind")
    if kind in ("message_in", "message_out"):
        if "raw" in ev:
            return f"unparsable input {_short(ev['raw'], 40)}"
        return describe_message(ev.get("msg"))
    skip = {"seq", "t", "session", "actor", "kind"}
    rest = {k: v for k, v in ev.items() if k not in skip and v is not None}
    return " ".join(f"{k}={_short(v, 40)}" for k, v in rest.items())


def event_line(ev: dict[str, Any]) -> str:
    """``#12     0.104000  writer       message_out  result #2``."""
    return (
        f"#{ev.get('seq', '?'):<5} {float(ev.get('t', 0.0)):10.6f}  "
        f"{ev.get('actor')!s:<12} {ev.get('kind')!s:<17} {describe(ev)}"
    )
