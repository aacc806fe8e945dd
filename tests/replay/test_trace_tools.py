"""`mcpactor trace show | diff | html`."""

from __future__ import annotations

import re
from pathlib import Path

from replay_support import TRACES, run_cli


def test_show_pairs_requests_with_responses_and_marks_races() -> None:
    code, out, _ = run_cli("trace", "show", str(TRACES / "timeout_same_instant.jsonl"))
    assert code == 0
    assert "TIMEOUT" in out and "CANCEL" in out and "DROPPED" in out
    table = out.split("requests:")[1]
    assert "tools/call" in table and "1000.000ms" in table
    assert "timed out, answered anyway" in table


def test_show_marks_cancellations() -> None:
    code, out, _ = run_cli("trace", "show", str(TRACES / "cancel_during_sampling.jsonl"))
    assert code == 0
    row = next(line for line in out.split("requests:")[1].splitlines() if "tools/call" in line)
    assert row.rstrip().endswith("cancelled")


def test_diff_of_identical_traces_is_empty_and_different_traces_differ(tmp_path: Path) -> None:
    a = TRACES / "racy_withdraw.jsonl"
    code, out, _ = run_cli("trace", "diff", str(a), str(a))
    assert code == 0 and out.startswith("identical")
    replayed = tmp_path / "r.jsonl"
    assert run_cli("replay", str(a), "-o", str(replayed))[0] == 0
    code, out, _ = run_cli("trace", "diff", str(a), str(replayed), "--messages")
    assert code == 0, out  # the replay says the same things on the wire
    code, out, _ = run_cli("trace", "diff", str(a), str(TRACES / "late_cancel.jsonl"))
    assert code == 1
    assert "- #" in out and "+ #" in out and "difference(s)" in out


def test_html_is_one_self_contained_sequence_diagram(tmp_path: Path) -> None:
    page = tmp_path / "out.html"
    code, _, _ = run_cli("trace", "html", str(TRACES / "reverse_responses.jsonl"), "-o", str(page))
    assert code == 0
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html
    for lane in ("client", "reader", "writer", "handler:1"):
        assert f">{lane}</text>" in html
    assert "marker-end" in html  # message arrows
    assert "sampling/createMessage" in html
    assert "<script" not in html and "src=" not in html and "href=" not in html


def test_html_of_a_client_trace_puts_the_server_opposite_the_client_code(
    tmp_path: Path,
) -> None:
    page = tmp_path / "client.html"
    trace = TRACES / "client_side_first_done_first.jsonl"
    code, _, _ = run_cli("trace", "html", str(trace), "-o", str(page))
    assert code == 0
    html = page.read_text()
    heads = re.findall(r'<text class="head" x="(\d+)"[^>]*>([^<]+)</text>', html)
    lanes = {name: int(x) for x, name in heads}
    # The peer's lane is the server's; the client code (client_failed) has its own.
    assert heads[0][1] == "server" and "client" in lanes
    assert lanes["client"] != lanes["server"]
    assert "Blue: server to client; green: client to server" in html
    # Every message arrow starts or ends on the server's lane.
    arrows = re.findall(r'<line x1="(\d+)" y1="\d+" x2="(\d+)" y2="\d+" stroke', html)
    assert arrows and all(lanes["server"] in (int(a), int(b)) for a, b in arrows)
