"""The sans-I/O Connection, driven without an event loop (as h11's tests drive h11)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from mcpactor.protocol import connection as pc
from mcpactor.protocol import types as t
from mcpactor.protocol.connection import Connection
from mcpactor.protocol.errors import CapabilityNotSupported, LocalProtocolError
from mcpactor.protocol.lifecycle import Role, State

SERVER_CAPS = {"tools": {"listChanged": True}, "logging": {}}


def server(caps: dict[str, Any] | None = None) -> Connection:
    return Connection(
        Role.SERVER, info={"name": "s", "version": "1"}, capabilities=caps or dict(SERVER_CAPS)
    )


def client(caps: dict[str, Any] | None = None) -> Connection:
    return Connection(Role.CLIENT, info={"name": "c", "version": "1"}, capabilities=caps or {})


def msg(obj: Any) -> bytes:
    return orjson.dumps(obj)


def req(rid: Any, method: str, params: Any = None) -> bytes:
    m: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        m["params"] = params
    return msg(m)


def note(method: str, params: Any = None) -> bytes:
    m: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        m["params"] = params
    return msg(m)


def replies(events: list[pc.Event]) -> list[dict[str, Any]]:
    return [orjson.loads(e.data) for e in events if isinstance(e, pc.Reply)]


def init(conn: Connection, version: str = "2025-11-25", caps: dict[str, Any] | None = None) -> None:
    ev = conn.receive(
        req(0, "initialize", {"protocolVersion": version, "capabilities": caps or {},
                              "clientInfo": {"name": "c", "version": "1"}})
    )
    assert any(isinstance(e, pc.Initialized) for e in ev)
    conn.receive(note("notifications/initialized"))
    assert conn.state is State.OPERATING


def error_code(events: list[pc.Event]) -> int:
    (r,) = replies(events)
    return int(r["error"]["code"])


# -- JSON-RPC error cases -------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [b"{not json", b'{"jsonrpc": "2.0", "id": 1, "method": "ping"', b"\xff\xfe{}", b""],
)
def test_parse_errors_answer_32700_with_null_id(data: bytes) -> None:
    r = replies(server().receive(data))
    assert r == [{"jsonrpc": "2.0", "id": None, "error": r[0]["error"]}]
    assert r[0]["error"]["code"] == -32700


@pytest.mark.parametrize(
    ("obj", "rid"),
    [
        ([], None),  # empty batch
        (42, None),  # not an object
        ({"id": 1, "method": "ping"}, 1),  # no jsonrpc member
        ({"jsonrpc": "1.0", "id": 1, "method": "ping"}, 1),
        ({"jsonrpc": "2.0", "id": 1, "method": 7}, 1),
        ({"jsonrpc": "2.0", "id": None, "method": "tools/list"}, None),  # null id
        ({"jsonrpc": "2.0", "id": True, "method": "tools/list"}, None),  # bool id
        ({"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}, None),  # float id
        ({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": [1]}, 3),
        ({"jsonrpc": "2.0", "id": 3}, 3),  # neither request nor response
    ],
)
def test_invalid_requests_answer_32600(obj: Any, rid: Any) -> None:
    conn = server()
    init(conn)
    r = replies(conn.receive(msg(obj)))
    assert len(r) == 1
    assert r[0]["error"]["code"] == -32600
    assert r[0]["id"] == rid


def test_unknown_method_is_32601_and_session_goes_on() -> None:
    conn = server()
    init(conn)
    assert error_code(conn.receive(req(5, "no/such"))) == -32601
    ev = conn.receive(req(6, "tools/list"))
    assert isinstance(ev[0], pc.RequestReceived) and ev[0].id == 6


def test_undeclared_capability_is_32601() -> None:
    conn = server({"tools": {}})
    init(conn)
    r = replies(conn.receive(req(1, "resources/list")))
    assert r[0]["error"]["code"] == -32601
    assert "resources" in r[0]["error"]["message"]


def test_wrong_direction_is_32601() -> None:
    conn = server()
    init(conn)
    assert error_code(conn.receive(req(1, "sampling/createMessage", {"messages": [], "maxTokens": 1}))) == -32601


@pytest.mark.parametrize(
    "params",
    [{"name": 5}, {"arguments": {}}, {"name": "x", "arguments": [1, 2]}],
)
def test_malformed_params_are_32602_with_path(params: dict[str, Any]) -> None:
    conn = server()
    init(conn)
    (r,) = replies(conn.receive(req(9, "tools/call", params)))
    assert r["id"] == 9
    assert r["error"]["code"] == -32602
    assert "path" in r["error"]["data"]


def test_params_are_structured_into_types() -> None:
    conn = server()
    init(conn)
    (ev,) = conn.receive(req(1, "tools/call", {"name": "add", "arguments": {"a": 1}, "_meta": {"progressToken": "tok"}}))
    assert isinstance(ev, pc.RequestReceived)
    assert ev.params == t.CallToolRequestParams(name="add", arguments={"a": 1}, meta={"progressToken": "tok"})
    assert ev.progress_token == "tok"


def test_duplicate_inflight_request_id_is_refused() -> None:
    conn = server()
    init(conn)
    conn.receive(req(1, "tools/list"))
    (r,) = replies(conn.receive(req(1, "tools/list")))
    assert r["error"]["code"] == -32600 and "already in use" in r["error"]["message"]
    # Once answered, the id may be seen again without complaint.
    assert conn.send_response(1, {"tools": []}) is not None
    assert isinstance(conn.receive(req(1, "tools/list"))[0], pc.RequestReceived)


def test_int_and_string_ids_are_distinct() -> None:
    conn = server()
    init(conn)
    a = conn.receive(req(1, "tools/list"))
    b = conn.receive(req("1", "tools/list"))
    assert isinstance(a[0], pc.RequestReceived) and isinstance(b[0], pc.RequestReceived)


# -- lifecycle --------------------------------------------------------------------------


def test_request_before_initialize_is_refused_but_ping_is_not() -> None:
    conn = server()
    (r,) = replies(conn.receive(req(1, "tools/list")))
    assert r["error"]["code"] == -32600 and "not initialized" in r["error"]["message"]
    (p,) = replies(conn.receive(req(2, "ping")))
    assert p == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert conn.state is State.AWAITING_INIT


def test_initialize_negotiates_requested_version_or_latest() -> None:
    for asked, answered in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ]:
        conn = server()
        ev = conn.receive(req(0, "initialize", {"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}))
        (r,) = replies(ev)
        assert r["result"]["protocolVersion"] == answered
        assert r["result"]["capabilities"] == SERVER_CAPS
        assert r["result"]["serverInfo"] == {"name": "s", "version": "1"}
        assert conn.protocol_version == answered


def test_initialize_without_version_is_32602() -> None:
    conn = server()
    assert error_code(conn.receive(req(0, "initialize", {"capabilities": {}}))) == -32602
    assert conn.state is State.AWAITING_INIT


def test_second_initialize_is_refused() -> None:
    conn = server()
    init(conn)
    r = replies(conn.receive(req(9, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})))
    assert r[0]["error"]["code"] == -32600


def test_requests_accepted_between_initialize_result_and_initialized() -> None:
    conn = server()
    conn.receive(req(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}))
    assert conn.state is State.INITIALIZING
    assert isinstance(conn.receive(req(1, "tools/list"))[0], pc.RequestReceived)
    assert isinstance(conn.receive(note("notifications/initialized"))[0], pc.OperationStarted)


def test_server_may_not_send_requests_before_initialized() -> None:
    conn = server()
    conn.receive(req(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {"sampling": {}}}))
    with pytest.raises(LocalProtocolError):
        conn.send_request("sampling/createMessage", {"messages": [], "maxTokens": 1})
    conn.send_request("ping")  # ping is always allowed
    conn.send_notification("notifications/message", {"level": "info", "data": "x"})


def test_server_may_not_use_undeclared_client_capability() -> None:
    conn = server()
    init(conn, caps={})
    with pytest.raises(CapabilityNotSupported):
        conn.send_request("sampling/createMessage", {"messages": [], "maxTokens": 1})
    with pytest.raises(CapabilityNotSupported):
        conn.send_request("roots/list")


def test_version_gates_elicitation() -> None:
    conn = server()
    init(conn, version="2025-03-26", caps={"elicitation": {}})
    with pytest.raises(CapabilityNotSupported, match="2025-03-26"):
        conn.send_request("elicitation/create", {"message": "x", "requestedSchema": {}})


def test_server_may_not_notify_undeclared_own_capability() -> None:
    conn = server({"tools": {}})
    init(conn)
    with pytest.raises(CapabilityNotSupported):
        conn.send_notification("notifications/resources/list_changed")


def test_client_handshake_end_to_end() -> None:
    c, s = client({"sampling": {}}), server()
    _, data = c.start_initialize("2025-06-18")
    assert c.state is State.INITIALIZING
    with pytest.raises(LocalProtocolError):
        c.send_request("tools/list")
    sev = s.receive(data)
    (answer,) = [e for e in sev if isinstance(e, pc.Reply)]
    cev = c.receive(answer.data)
    kinds = [type(e) for e in cev]
    # initialized is sent before anything else, then the result is delivered
    assert kinds == [pc.Reply, pc.Initialized, pc.ResponseReceived]
    assert orjson.loads(cev[0].data)["method"] == "notifications/initialized"  # type: ignore[union-attr]
    assert c.state is State.OPERATING and c.protocol_version == "2025-06-18"
    assert c.peer_capabilities == SERVER_CAPS
    s.receive(cev[0].data)  # type: ignore[union-attr]
    assert s.state is State.OPERATING
    with pytest.raises(CapabilityNotSupported):
        c.send_request("prompts/list")


def test_client_refuses_unsupported_server_version() -> None:
    c = client()
    rid, _ = c.start_initialize()
    bad = msg({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": "1999-01-01", "capabilities": {}, "serverInfo": {"name": "x", "version": "1"}}})
    (ev,) = c.receive(bad)
    assert isinstance(ev, pc.ErrorReceived) and "1999-01-01" in ev.error.message
    assert c.state is State.CLOSED


def test_client_refuses_server_request_before_initialized() -> None:
    c = client({"roots": {}})
    c.start_initialize()
    assert error_code(c.receive(req(1, "roots/list"))) == -32600


# -- batches ----------------------------------------------------------------------------


def test_batch_refused_outside_2025_03_26() -> None:
    conn = server()
    init(conn, version="2025-06-18")
    (r,) = replies(conn.receive(msg([orjson.loads(req(1, "tools/list")), orjson.loads(req(2, "ping"))])))
    assert r["id"] is None and r["error"]["code"] == -32600 and "batch" in r["error"]["message"]


def test_batch_accepted_in_2025_03_26() -> None:
    conn = server()
    init(conn, version="2025-03-26")
    batch = [
        orjson.loads(req(1, "tools/list")),
        orjson.loads(req(2, "ping")),
        orjson.loads(note("notifications/roots/list_changed")),
        {"jsonrpc": "2.0", "id": 3},
    ]
    (ev,) = conn.receive(msg(batch))
    assert isinstance(ev, pc.BatchReceived)
    kinds = [type(e) for e in ev.events]
    assert kinds == [pc.RequestReceived, pc.Reply, pc.NotificationReceived, pc.Reply]
    assert ev.expected == 3


def test_initialize_in_batch_is_refused() -> None:
    conn = server()
    conn.protocol_version = "2025-03-26"  # as if batches were allowed already
    (ev,) = conn.receive(msg([orjson.loads(req(0, "initialize", {"protocolVersion": "2025-03-26"}))]))
    assert isinstance(ev, pc.BatchReceived)
    (r,) = [orjson.loads(e.data) for e in ev.events if isinstance(e, pc.Reply)]
    assert r["error"]["code"] == -32600


# -- responses, cancellation, progress ---------------------------------------------------


def operating_client(server_caps: dict[str, Any] | None = None) -> Connection:
    c = client({"sampling": {}})
    rid, _ = c.start_initialize()
    c.receive(msg({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": "2025-11-25", "capabilities": server_caps or SERVER_CAPS, "serverInfo": {"name": "s", "version": "1"}}}))
    return c


def test_response_to_unknown_id_is_dropped() -> None:
    c = operating_client()
    (ev,) = c.receive(msg({"jsonrpc": "2.0", "id": 999, "result": {}}))
    assert isinstance(ev, pc.Dropped) and "unknown" in ev.reason


def test_responses_are_structured_and_malformed_results_are_errors() -> None:
    c = operating_client()
    rid, _ = c.send_request("tools/list")
    (ev,) = c.receive(msg({"jsonrpc": "2.0", "id": rid, "result": {"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}}))
    assert isinstance(ev, pc.ResponseReceived) and ev.result.tools[0].name == "a"
    rid2, _ = c.send_request("tools/list")
    (bad,) = c.receive(msg({"jsonrpc": "2.0", "id": rid2, "result": {"tools": "nope"}}))
    assert isinstance(bad, pc.ErrorReceived)


def test_error_response_reaches_the_request() -> None:
    c = operating_client()
    rid, _ = c.send_request("tools/list")
    (ev,) = c.receive(msg({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "nope", "data": {"x": 1}}}))
    assert isinstance(ev, pc.ErrorReceived) and ev.error.code == -32601 and ev.error.data == {"x": 1}


def test_ids_are_unique_and_increasing() -> None:
    c = operating_client()
    ids = [c.send_request("ping")[0] for _ in range(50)]
    assert len(set(ids)) == 50 and ids == sorted(ids)


def test_cancel_outbound_then_late_response_is_dropped() -> None:
    c = operating_client()
    rid, _ = c.send_request("tools/call", {"name": "slow"})
    data = c.cancel_request(rid, "user")
    assert data is not None
    assert orjson.loads(data) == {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid, "reason": "user"}}
    (ev,) = c.receive(msg({"jsonrpc": "2.0", "id": rid, "result": {"content": []}}))
    assert isinstance(ev, pc.Dropped) and "cancelled" in ev.reason
    assert c.cancel_request(rid) is None  # already gone


def test_initialize_is_never_cancelled() -> None:
    c = client()
    rid, _ = c.start_initialize()
    with pytest.raises(LocalProtocolError):
        c.cancel_request(rid)
    s = server()
    s.receive(req(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}))
    # the initialize request was answered at once, so a cancel for it is for a finished request
    (ev,) = s.receive(note("notifications/cancelled", {"requestId": 0}))
    assert isinstance(ev, pc.Dropped)


def test_inbound_cancel_suppresses_the_response() -> None:
    conn = server()
    init(conn)
    conn.receive(req(7, "tools/call", {"name": "x"}))
    (ev,) = conn.receive(note("notifications/cancelled", {"requestId": 7, "reason": "bored"}))
    assert ev == pc.CancelReceived(7, "bored")
    assert conn.is_cancelled(7)
    assert conn.send_response(7, {"content": []}) is None
    assert 7 not in conn.inbound_ids


def test_cancel_after_response_and_for_unknown_id_are_dropped() -> None:
    conn = server()
    init(conn)
    conn.receive(req(7, "tools/list"))
    assert conn.send_response(7, {"tools": []}) is not None
    (late,) = conn.receive(note("notifications/cancelled", {"requestId": 7}))
    assert isinstance(late, pc.Dropped)
    (unknown,) = conn.receive(note("notifications/cancelled", {"requestId": "nope"}))
    assert isinstance(unknown, pc.Dropped)
    (bad,) = conn.receive(note("notifications/cancelled", {}))
    assert isinstance(bad, pc.Dropped)


def test_progress_outbound_rules() -> None:
    conn = server()
    init(conn)
    conn.receive(req(1, "tools/call", {"name": "x", "_meta": {"progressToken": "p"}}))
    assert conn.send_progress("p", 1, 10, "one") is not None
    assert conn.send_progress("p", 1, 10) is None  # not increasing
    assert conn.send_progress("p", 0.5) is None
    assert conn.send_progress("other", 5) is None  # unknown token
    body = orjson.loads(conn.send_progress("p", 2) or b"")
    assert body["params"] == {"progressToken": "p", "progress": 2}
    conn.send_response(1, {"content": []})
    assert conn.send_progress("p", 3) is None  # nothing after completion


def test_progress_message_not_sent_to_2024_11_05() -> None:
    conn = server()
    init(conn, version="2024-11-05")
    conn.receive(req(1, "tools/call", {"name": "x", "_meta": {"progressToken": 1}}))
    body = orjson.loads(conn.send_progress(1, 1, 2, "hello") or b"")
    assert "message" not in body["params"]


def test_progress_inbound_correlates_and_drops_non_increasing() -> None:
    c = operating_client()
    rid, data = c.send_request("tools/call", {"name": "slow"}, want_progress=True)
    token = orjson.loads(data)["params"]["_meta"]["progressToken"]
    (p1,) = c.receive(note("notifications/progress", {"progressToken": token, "progress": 1, "total": 3}))
    assert p1 == pc.ProgressReceived(rid, token, 1, 3, None)
    (dup,) = c.receive(note("notifications/progress", {"progressToken": token, "progress": 1}))
    assert isinstance(dup, pc.Dropped)
    (other,) = c.receive(note("notifications/progress", {"progressToken": "zzz", "progress": 9}))
    assert isinstance(other, pc.Dropped)
    c.receive(msg({"jsonrpc": "2.0", "id": rid, "result": {"content": []}}))
    (after,) = c.receive(note("notifications/progress", {"progressToken": token, "progress": 5}))
    assert isinstance(after, pc.Dropped)


def test_progress_token_of_a_request_answered_with_a_task_stays_valid() -> None:
    """2025-11-25: the token of a request that created a task is valid until the task
    ends (progress arrives after the CreateTaskResult); then it is forgotten."""
    c = operating_client()
    rid, data = c.send_request("tools/call", {"name": "slow", "task": {}}, want_progress=True)
    token = orjson.loads(data)["params"]["_meta"]["progressToken"]
    task = {"taskId": "t1", "status": "working", "createdAt": "x", "lastUpdatedAt": "x",
            "ttl": None}
    c.receive(msg({"jsonrpc": "2.0", "id": rid, "result": {"task": task}}))
    assert c.keeps_progress(rid)
    (p1,) = c.receive(note("notifications/progress", {"progressToken": token, "progress": 1}))
    assert p1 == pc.ProgressReceived(rid, token, 1, None, None)
    (dup,) = c.receive(note("notifications/progress", {"progressToken": token, "progress": 1}))
    assert isinstance(dup, pc.Dropped)  # still strictly increasing
    assert c.end_task_progress("other") == []
    assert c.end_task_progress("t1") == [rid] and not c.keeps_progress(rid)
    (after,) = c.receive(note("notifications/progress", {"progressToken": token, "progress": 2}))
    assert isinstance(after, pc.Dropped)
    # A plain answer does not keep the token.
    rid2, _ = c.send_request("tools/call", {"name": "quick"}, want_progress=True)
    c.receive(msg({"jsonrpc": "2.0", "id": rid2, "result": {"content": []}}))
    assert not c.keeps_progress(rid2)


def test_kept_task_progress_tokens_are_bounded() -> None:
    c = operating_client()
    task = {"status": "working", "createdAt": "x", "lastUpdatedAt": "x", "ttl": None}
    first = None
    for n in range(pc.MAX_KEPT_TOKENS + 1):
        rid, _ = c.send_request("tools/call", {"name": "slow", "task": {}}, want_progress=True)
        first = first if first is not None else rid
        c.receive(msg({"jsonrpc": "2.0", "id": rid,
                       "result": {"task": {**task, "taskId": f"t{n}"}}}))
    assert not c.keeps_progress(first) and c.keeps_progress(rid)


def test_unknown_notification_is_dropped_not_answered() -> None:
    conn = server()
    init(conn)
    (ev,) = conn.receive(note("notifications/whatever"))
    assert isinstance(ev, pc.Dropped)


def test_result_that_cannot_be_encoded_leaves_request_open_for_error() -> None:
    conn = server()
    init(conn)
    conn.receive(req(1, "tools/list"))
    with pytest.raises(TypeError):
        conn.send_response(1, {"bad": object()})
    from mcpactor.protocol.errors import InternalError

    data = conn.send_error(1, InternalError("boom"))
    assert data is not None and orjson.loads(data)["error"]["code"] == -32603


def test_closed_connection_drops_everything() -> None:
    conn = server()
    init(conn)
    conn.close()
    (ev,) = conn.receive(req(1, "tools/list"))
    assert isinstance(ev, pc.Dropped)


def test_completions_capability_not_declared_to_2024_11_05() -> None:
    caps = {"completions": {}, "tools": {}}
    for version, expected in [("2024-11-05", {"tools": {}}), ("2025-03-26", caps)]:
        conn = server(dict(caps))
        (r,) = replies(conn.receive(req(0, "initialize", {"protocolVersion": version, "capabilities": {}})))
        assert r["result"]["capabilities"] == expected
        conn.receive(note("notifications/initialized"))
        # the method itself existed in 2024-11-05 and stays callable
        assert isinstance(conn.receive(req(1, "completion/complete", {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}}))[0], pc.RequestReceived)
