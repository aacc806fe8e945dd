"""Request ids (and other integers) wider than 64 bits.

JSON sets no bound on integers and JSON-RPC lets a peer pick any integer id; orjson
reads an integer past 64 bits as a float (or refuses it past a double's range) and
refuses to write one. Such a message must still be answered with its id exactly as
sent, digit for digit.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio

from mcpactor import Server, connect_transport
from mcpactor.protocol import connection as pc
from mcpactor.protocol import jsonrpc
from mcpactor.protocol.connection import Connection
from mcpactor.protocol.errors import ParseError
from mcpactor.protocol.lifecycle import Role
from mcpactor.transports.memory import memory_pair

WIDE = [2**64 + 1, 2**64, -(2**63) - 1, -(2**70), int("9" * 40), int("1" + "0" * 400)]


def _name(rid: int) -> str:
    text = str(rid)
    return text if len(text) < 30 else f"{len(text)}-digits"


def raw_request(rid: str, method: str = "ping", params: str | None = None) -> bytes:
    tail = "" if params is None else f',"params":{params}'
    return f'{{"jsonrpc":"2.0","id":{rid},"method":"{method}"{tail}}}'.encode()


@pytest.mark.parametrize("rid", WIDE, ids=_name)
def test_parse_keeps_a_wide_request_id(rid: int) -> None:
    msg = jsonrpc.parse(raw_request(str(rid)))
    assert msg == jsonrpc.Request(rid, "ping", None)
    assert type(msg.id) is int  # type: ignore[union-attr]


@pytest.mark.parametrize("rid", WIDE, ids=_name)
def test_parse_keeps_wide_ids_in_responses_and_batches(rid: int) -> None:
    assert jsonrpc.parse(f'{{"jsonrpc":"2.0","id":{rid},"result":{{}}}}'.encode()) \
        == jsonrpc.Response(rid, {})
    err = jsonrpc.parse(
        f'{{"jsonrpc":"2.0","id":{rid},"error":{{"code":-1,"message":"m"}}}}'.encode()
    )
    assert isinstance(err, jsonrpc.ErrorResponse) and err.id == rid
    batch = jsonrpc.parse(b"[" + raw_request(str(rid)) + b"," + raw_request("7") + b"]")
    assert isinstance(batch, jsonrpc.Batch)
    assert [item.id for item in batch.items] == [rid, 7]  # type: ignore[union-attr]


@pytest.mark.parametrize("rid", WIDE, ids=_name)
def test_encoders_write_wide_ids_digit_for_digit(rid: int) -> None:
    digits = str(rid).encode()
    assert jsonrpc.encode_response(rid, {"a": 1}) == \
        b'{"jsonrpc":"2.0","id":' + digits + b',"result":{"a":1}}'
    err = jsonrpc.encode_error(rid, jsonrpc.ErrorObject(-32601, "nope"))
    assert err == b'{"jsonrpc":"2.0","id":' + digits + b',"error":{"code":-32601,"message":"nope"}}'
    assert jsonrpc.parse(jsonrpc.encode_request(rid, "x", {"n": rid})) == \
        jsonrpc.Request(rid, "x", {"n": rid})
    note = jsonrpc.encode_notification("notifications/cancelled", {"requestId": rid})
    assert b'"requestId":' + digits in note
    assert jsonrpc.dumps({"id": rid}) == b'{"id":' + digits + b"}"


def test_the_fast_paths_are_unchanged() -> None:
    # The common message goes through orjson alone (same bytes as before).
    assert jsonrpc.encode_response(1, {"x": 1.5}) == orjson.dumps(
        {"jsonrpc": "2.0", "id": 1, "result": {"x": 1.5}}
    )
    assert jsonrpc.loads(b'{"a":[1,2.5,"x"]}') == {"a": [1, 2.5, "x"]}


def test_wide_integers_elsewhere_in_the_message_are_exact_when_the_id_is() -> None:
    msg = jsonrpc.parse(raw_request(str(2**80), "tools/call", f'{{"n":{2**90}}}'))
    assert msg == jsonrpc.Request(2**80, "tools/call", {"n": 2**90})


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (raw_request("1" * 5000), "digits"),  # past Python's int-from-text bound
        (raw_request("1", params='{"x":1e400}'), "infinity"),  # no double holds it
        # orjson stops at the 400-digit id (no double holds it); the exact path reads on.
        (b'{"jsonrpc":"2.0","id":1' + b"0" * 400 + b',"method":"ping","x":NaN}', "NaN"),
        (b'{"jsonrpc":"2.0","id":1' + b"0" * 400 + b',"method":"\\ud800"}', "surrogate"),
        (b'{"jsonrpc":"2.0","id":1' + b"0" * 400 + b',"method":"ping"', "delimiter"),
        (b'{"jsonrpc":"2.0","id":' + b"9" * 30 + b',"method":"ping"', "unexpected end"),
    ],
)
def test_the_exact_path_is_as_strict_as_orjson(text: bytes, why: str) -> None:
    with pytest.raises(ParseError) as info:
        jsonrpc.parse(text)
    assert info.value.code == -32700
    assert why.lower() in info.value.message.lower(), info.value.message


def test_a_float_id_is_still_refused() -> None:
    for rid in ("1.5", "1e3", "18446744073709551617.0"):
        got = jsonrpc.parse(raw_request(rid))
        assert isinstance(got, jsonrpc.Invalid) and got.id is None
        assert got.error.code == -32600


def _server_conn() -> Connection:
    return Connection(Role.SERVER, info={"name": "s", "version": "1"},
                      capabilities={"tools": {}})


@pytest.mark.parametrize("rid", WIDE, ids=_name)
def test_connection_answers_a_wide_id_as_sent(rid: int) -> None:
    conn = _server_conn()
    digits = str(rid).encode()
    (reply,) = conn.receive(raw_request(str(rid)))
    assert isinstance(reply, pc.Reply)
    assert reply.data == b'{"jsonrpc":"2.0","id":' + digits + b',"result":{}}'
    # Refusals too (here: before initialization).
    (refusal,) = conn.receive(raw_request(str(rid), "tools/list"))
    assert isinstance(refusal, pc.Reply)
    assert refusal.data.startswith(b'{"jsonrpc":"2.0","id":' + digits + b',"error":')


# -- whole sessions ---------------------------------------------------------------------


def _line(text: str) -> bytes:
    return text.encode() + b"\n"


async def _read_lines(stream: Any, count: int) -> list[bytes]:
    buf = b""
    out: list[bytes] = []
    with trio.fail_after(5):
        while len(out) < count:
            buf += await stream.receive()
            *lines, buf = buf.split(b"\n")
            out.extend(x for x in lines if x.strip())
    return out


async def test_a_server_session_answers_wide_ids_over_memory() -> None:
    server = Server("wide", "1")

    @server.tool()
    async def echo(n: int) -> str:
        """Say the number back."""
        return str(n)

    a, b = memory_pair()
    rid = 2**64 + 1
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: server.serve(a))
        init = ('{"jsonrpc":"2.0","id":' + str(rid) + ',"method":"initialize","params":'
                '{"protocolVersion":"2025-03-26","capabilities":{},'
                '"clientInfo":{"name":"t","version":"1"}}}')
        await b.send([(init.encode(), None)])
        (answer,) = [await b.receive()]
        assert isinstance(answer, bytes)
        assert answer.startswith(b'{"jsonrpc":"2.0","id":%d,"result":' % rid)
        await b.send([(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', None)])
        call = raw_request(str(rid + 1), "tools/call",
                           '{"name":"echo","arguments":{"n":' + str(rid) + "}}")
        await b.send([(call, None)])
        answer = await b.receive()
        assert isinstance(answer, bytes)
        assert answer.startswith(b'{"jsonrpc":"2.0","id":%d,"result":' % (rid + 1))
        assert str(rid).encode() in answer  # the argument survived exactly too
        batch = b"[" + raw_request(str(-(2**70))) + b"," + raw_request("3") + b"]"
        await b.send([(batch, None)])
        answer = await b.receive()
        assert answer == (b'[{"jsonrpc":"2.0","id":%d,"result":{}},'
                          b'{"jsonrpc":"2.0","id":3,"result":{}}]' % -(2**70))
        await b.aclose()


async def test_a_client_answers_a_servers_wide_id() -> None:
    """A client session: the server's request with a wide id is answered with it, and a
    stray response with a wide id is dropped without harm."""
    a, b = memory_pair()
    rid = 2**72 + 5
    async with trio.open_nursery() as nursery:

        async def fake_server() -> None:
            init = orjson.loads(await b.receive())  # type: ignore[arg-type]
            await b.send([(orjson.dumps({"jsonrpc": "2.0", "id": init["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "serverInfo": {"name": "fake", "version": "1"}}}), None)])
            assert b"notifications/initialized" in await b.receive()  # type: ignore[operator]
            await b.send([(b'{"jsonrpc":"2.0","id":%d,"result":{}}' % (rid + 1), None)])
            await b.send([(raw_request(str(rid)), None)])
            answer = await b.receive()
            assert answer == b'{"jsonrpc":"2.0","id":%d,"result":{}}' % rid
            done.set()

        done = trio.Event()
        nursery.start_soon(fake_server)
        with trio.fail_after(5):
            async with connect_transport(a, mode="legacy"):  # a handshake fake server
                await done.wait()


def _initialized(conn: Connection) -> None:
    init = ('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":'
            '"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}')
    conn.receive(init.encode())
    conn.receive(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')


@pytest.mark.parametrize("rid", WIDE, ids=_name)
def test_wide_ids_in_cancellations_and_progress_tokens_are_exact(rid: int) -> None:
    """Found by tests/fuzz: an id is also a value inside params (the request a
    cancellation names, a progress token), where orjson read it as a float."""
    conn = _server_conn()
    _initialized(conn)
    call = raw_request(str(rid), "tools/list", '{"_meta":{"progressToken":' + str(rid + 1) + "}}")
    (got,) = conn.receive(call)
    assert isinstance(got, pc.RequestReceived)
    assert (got.id, got.progress_token) == (rid, rid + 1)
    assert type(got.progress_token) is int
    cancel = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}' % rid
    (cancelled,) = conn.receive(cancel)
    assert cancelled == pc.CancelReceived(rid, None)
    # The same in a batch, and as jsonrpc.parse and jsonrpc.loads see them.
    parsed = jsonrpc.parse(b"[" + cancel + b"]")
    assert isinstance(parsed, jsonrpc.Batch)
    assert parsed.items[0].params == {"requestId": rid}  # type: ignore[union-attr]
    assert jsonrpc.parse(cancel) == jsonrpc.Notification("notifications/cancelled",
                                                         {"requestId": rid})
    progress = b'{"jsonrpc":"2.0","method":"notifications/progress","params":' \
               b'{"progressToken":%d,"progress":1}}' % rid
    assert jsonrpc.parse(progress).params["progressToken"] == rid  # type: ignore[union-attr]
    assert jsonrpc.loads(cancel)["params"]["requestId"] == rid


def test_a_float_progress_token_is_no_token() -> None:
    conn = _server_conn()
    _initialized(conn)
    (got,) = conn.receive(raw_request("5", "tools/list", '{"_meta":{"progressToken":1.5}}'))
    assert isinstance(got, pc.RequestReceived) and got.progress_token is None


def test_a_float_progress_token_in_a_batch_is_no_token_not_a_crash() -> None:
    """A float token in a 2025-03-26 batch raised InexactNumber out of receive() (the
    re-read that handles it covered single messages only), ending the session's reader;
    a batch is read exactly already, so the float is the peer's."""
    conn = _server_conn()
    _initialized(conn)
    batch = b"[" + raw_request("5", "tools/list", '{"_meta":{"progressToken":1.5}}') + b"," \
        + raw_request("6", "tools/list", f'{{"_meta":{{"progressToken":{2**65}}}}}') + b"]"
    (got,) = conn.receive(batch)
    assert isinstance(got, pc.BatchReceived)
    first, second = got.events
    assert isinstance(first, pc.RequestReceived) and first.progress_token is None
    assert isinstance(second, pc.RequestReceived) and second.progress_token == 2**65
    # Single messages afterwards still take the fast path with its re-read.
    (later,) = conn.receive(raw_request("7", "tools/list", '{"_meta":{"progressToken":2.5}}'))
    assert isinstance(later, pc.RequestReceived) and later.progress_token is None
