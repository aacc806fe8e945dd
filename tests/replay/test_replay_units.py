"""Small pieces of the replayer: JSON comparison, diffs, actor streams."""

from __future__ import annotations

from mcpactor.replay.jsondiff import json_diff
from mcpactor.replay.matcher import same_json
from mcpactor.replay.trace import stream_key


def test_same_json_tolerates_only_float_noise() -> None:
    assert same_json({"deadline": 1.0}, {"deadline": 1.0000000000000002})
    assert same_json([1, 2.0], [1, 2])
    assert not same_json({"deadline": 1.0}, {"deadline": 1.001})
    assert not same_json({"a": 1}, {"a": 1, "b": 2})
    assert not same_json(True, 1.0) and not same_json([1], [1, 2])
    assert not same_json("1", 1)


def test_json_diff_names_each_differing_path() -> None:
    lines = json_diff(
        {"msg": {"result": {"content": [{"text": "3"}]}, "id": 1}, "related": 1},
        {"msg": {"result": {"content": [{"text": "4"}], "isError": True}, "id": 1}},
    )
    assert lines == [
        '$.msg.result.content[0].text: expected "3", got "4"',
        "$.msg.result.isError: not recorded, replay has true",
        "$.related: expected 1, missing in replay",
    ]
    assert json_diff([1, 2], [1]) == ["$: expected 2 items, replay has 1"]
    assert json_diff(1, True) == ["$: expected 1, got true"]


def test_tracker_events_form_one_stream_per_request() -> None:
    assert stream_key("tracker", {"id": 3}) != stream_key("tracker", {"id": "3"})
    assert stream_key("tracker", {"id": 3}) == stream_key("tracker", {"id": 3, "x": 1})
    assert stream_key("handler:3", {"id": 3}) == "handler:3"
