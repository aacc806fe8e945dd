"""Rotated traces as a user meets them, and the --request views of whole-process traces."""

from __future__ import annotations

from pathlib import Path

import orjson
from replay_support import TRACES, run_cli

RACY = Path(__file__).resolve().parent / "racy"
#: A whole-process HTTP trace whose two sessions both have requests 2 to 8.
TWO_SESSIONS = TRACES / "live" / "bank-http-mcpactor-1.jsonl"


def _rotate(trace: Path, folder: Path, parts: int) -> list[Path]:
    """``trace`` cut into ``parts`` segments as a rotating recording names them."""
    lines = trace.read_bytes().splitlines()
    header, body = orjson.loads(lines[0]), lines[1:]
    size = len(body) // parts + 1
    names = [f"rot-2026010{i}T000000Z-{i:04d}.jsonl" for i in range(1, parts + 1)]
    for i, name in enumerate(names):
        head = {**header, "segment": i + 1, "previous": names[i - 1] if i else None}
        chunk = body[i * size:(i + 1) * size]
        (folder / name).write_bytes(b"\n".join([orjson.dumps(head), *chunk]) + b"\n")
    (folder / "rot.jsonl").write_bytes(b"")  # what --trace rot.jsonl leaves behind
    return [folder / n for n in names]


def test_a_middle_segment_is_named_in_its_own_errors(tmp_path: Path) -> None:
    first, middle, last = _rotate(RACY / "bank.jsonl", tmp_path, 3)
    code, _, err = run_cli("replay", str(middle))
    assert code == 2
    assert err.startswith(f"mcpactor: {middle} (read with the 1 segment(s) before it): "
                          "truncated"), err
    assert first.name not in err.split(":", 2)[1]
    code, out, _ = run_cli("replay", str(last), "--server", f"{RACY / 'bank.py'}:server")
    assert code == 0 and "faithful" in out


def test_the_empty_trace_path_of_a_rotated_recording_points_to_its_segments(
        tmp_path: Path) -> None:
    segments = _rotate(RACY / "bank.jsonl", tmp_path, 3)
    code, _, err = run_cli("replay", str(tmp_path / "rot.jsonl"))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "rotated into 3 segment(s)" in err and str(segments[-1]) in err
    lonely = tmp_path / "other.jsonl"
    lonely.write_bytes(b"")
    code, _, err = run_cli("replay", str(lonely))
    assert code == 2 and err.strip().endswith("empty file, not a trace")


def test_request_views_need_the_session_when_several_have_the_id(tmp_path: Path) -> None:
    sessions = []
    for line in TWO_SESSIONS.read_bytes().splitlines()[1:]:
        ev = orjson.loads(line)
        if ev.get("kind") == "session_started":
            sessions.append(ev["session"])
    out_html = tmp_path / "x.html"
    for argv in (["trace", "html", str(TWO_SESSIONS), "-o", str(out_html), "--request", "2"],
                 ["trace", "show", str(TWO_SESSIONS), "--request", "2"],
                 ["replay", str(TWO_SESSIONS), "--request", "2"]):
        code, _, err = run_cli(*argv)
        assert code == 2, argv
        assert "several sessions have a request 2: name one with --session SID" in err, argv
    assert not out_html.exists()
    code, _, err = run_cli("trace", "html", str(TWO_SESSIONS), "-o", str(out_html),
                             "--request", "2", "--session", sessions[0])
    assert code == 0, err
    assert out_html.exists()


def test_other_sessions_tasks_and_handlers_children_are_labelled() -> None:
    from mcpactor.replay.interleave import _label

    names = {1: "S1", 2: "S1/4", 3: "S1/4/1", 4: "S2", 5: "S2/4", 6: "S2/4/2/8", 7: "S2/3"}
    labels = {2: "handler:4", 5: "handler:4"}
    assert _label(2, labels, names, "S1") == "handler:4"
    assert _label(3, labels, names, "S1") == "handler:4 child /1"
    assert _label(5, labels, names, "S1") == "handler:4 [session S2]"
    assert _label(6, labels, names, "S1") == "handler:4 child /2/8 [session S2]"
    assert _label(7, labels, names, "S1") == "task /3 [session S2]"
