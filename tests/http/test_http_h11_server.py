"""The lean HTTP/1.1 server on raw sockets: the fast path, the h11 fallback and the
hand-over between them on one keep-alive connection."""

from __future__ import annotations

import socket
import time

import h11
import orjson
import trio
from http_support import init_body, running_app

TIMEOUT = 15


def _post(body: bytes, *, extra: bytes = b"", length: bool = True) -> bytes:
    """A POST to /mcp carrying ``body`` (``extra``: more header lines)."""
    return (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\n" + extra
        + (b"Content-Length: %d\r\n" % len(body) if length else b"") + b"\r\n" + body
    )


def _chunked_post(body: bytes) -> bytes:
    half = len(body) // 2
    return (
        _post(b"", extra=b"Transfer-Encoding: chunked\r\n", length=False)
        + b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (half, body[:half], len(body) - half, body[half:])
    )


def _responses(data: bytes, count: int) -> list[tuple[int, dict[bytes, bytes], bytes]]:
    """Read ``count`` responses (to non-HEAD requests) out of ``data`` with h11."""
    out = []
    for _ in range(count):
        conn = h11.Connection(h11.CLIENT)
        conn.send(h11.Request(method="POST", target="/", headers=[("host", "h")]))
        conn.receive_data(data)
        status, headers, body = 0, {}, b""
        while True:
            ev = conn.next_event()
            if type(ev) is h11.Response:
                status, headers = ev.status_code, dict(ev.headers)
            elif type(ev) is h11.Data:
                body += ev.data
            elif type(ev) is h11.EndOfMessage:
                break
            elif type(ev) is h11.InformationalResponse:
                continue
            else:
                raise AssertionError(f"incomplete response: {ev!r} after {data!r}")
        out.append((status, headers, body))
        data = conn.trailing_data[0]
    assert data == b"", data
    return out


def _exchange(port: int, pieces: list[bytes], count: int, pause: float = 0.05) -> bytes:
    """Send ``pieces`` with a pause between them, then read until ``count`` responses
    are complete or the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i, piece in enumerate(pieces):
            if i:
                time.sleep(pause)
            s.sendall(piece)
        got = b""
        while True:
            try:
                _responses(got, count)
                return got
            except (AssertionError, h11.ProtocolError):
                pass
            chunk = s.recv(65536)
            if not chunk:
                return got
            got += chunk


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


async def _run(url: str, pieces: list[bytes], count: int, pause: float = 0.05) -> bytes:
    return await trio.to_thread.run_sync(_exchange, _port(url), pieces, count, pause)


async def test_pipelined_requests_mix_the_fast_path_and_h11_in_order() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app() as (app, url):
            fast = _post(init_body(rid="a"))
            chunked = _chunked_post(init_body(rid="b"))
            continued = _post(init_body(rid="c"), extra=b"Expect: 100-continue\r\n")
            http10 = _post(init_body(rid="d")).replace(b"HTTP/1.1", b"HTTP/1.0", 1)
            got = await _run(url, [fast + chunked + fast.replace(b'"a"', b'"e"') + continued
                                   + http10], 5)
            answers = _responses(got, 5)
            ids = [orjson.loads(body)["id"] for _, _, body in answers]
            assert ids == ["a", "b", "e", "c", "d"]
            assert all(status == 200 for status, _, _ in answers)
            assert len(app.sessions) == 5


async def test_a_request_split_across_reads_is_answered() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app() as (_, url):
            req = _post(init_body())
            cut_head = req.index(b"Content-Type")
            cut_body = len(req) - 10
            got = await _run(url, [req[:cut_head], req[cut_head:cut_body], req[cut_body:]], 1)
            [(status, headers, body)] = _responses(got, 1)
            assert status == 200 and b"mcp-session-id" in headers
            assert orjson.loads(body)["result"]["protocolVersion"]


async def test_oversize_head_and_body_and_unread_bodies() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app(max_body_size=1000) as (_, url):
            huge_head = _post(init_body(), extra=b"X-Big: " + b"a" * 20_000 + b"\r\n")
            got = await _run(url, [huge_head], 1)
            assert got.startswith(b"HTTP/1.1 431 "), got[:100]
            big = _post(b"[" + b"1," * 2000 + b"1]")
            got = await _run(url, [big], 1)
            assert got.startswith(b"HTTP/1.1 413 "), got[:100]
            # A refused request's unread body is skipped: the next one is answered.
            refused = _post(b'{"a":1}').replace(b"application/json\r\nAccept", b"text/plain\r\nAccept")
            got = await _run(url, [refused + _post(init_body())], 2)
            (s1, _, _), (s2, _, body) = _responses(got, 2)
            assert (s1, s2) == (415, 200) and orjson.loads(body)["id"] == 1


async def test_malformed_input_gets_h11_answers() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app() as (_, url):
            for bad, status in [
                (b"POST /mcp HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 400),  # no Host
                (b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: x\r\n\r\n", 400),
                (b"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
                (b"GARBAGE\r\n\r\n", 400),
            ]:
                got = await _run(url, [bad], 1)
                assert got.startswith(b"HTTP/1.1 %d " % status), (bad, got[:80])


async def test_client_leaving_mid_body_and_mid_head_leaves_the_server_serving() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app() as (_, url):
            req = _post(init_body())

            def leave(cut: int) -> None:
                with socket.create_connection(("127.0.0.1", _port(url)), timeout=5) as s:
                    s.sendall(req[:cut])

            await trio.to_thread.run_sync(leave, len(req) - 5)
            await trio.to_thread.run_sync(leave, 30)
            got = await _run(url, [req], 1)
            assert _responses(got, 1)[0][0] == 200


async def test_idle_and_trickling_connections_are_closed() -> None:
    from mcpactor.transports.h11_server import H11Options, serve_h11

    async def app(scope: dict[str, object], receive: object, send: object) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": []})  # type: ignore[operator]
        await send({"type": "http.response.body", "body": b""})  # type: ignore[operator]

    def idle_then_eof(port: int, first: bytes, trickle: bool) -> tuple[bytes, float]:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(first)
            t0 = time.monotonic()
            got = b""
            while True:
                if trickle:
                    try:
                        s.sendall(b"X")
                    except OSError:
                        return got, time.monotonic() - t0
                    s.settimeout(0.05)
                try:
                    chunk = s.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    return got, time.monotonic() - t0
                if not chunk:
                    return got, time.monotonic() - t0
                got += chunk

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            opts = H11Options(keep_alive_timeout=0.3, head_timeout=0.3)
            [url] = await nursery.start(
                lambda task_status: serve_h11(app, port=0, options=opts, task_status=task_status)
            )
            port = _port(url)
            req = b"GET / HTTP/1.1\r\nHost: h\r\n\r\n"
            # Kept alive after a response, then closed for idling.
            got, waited = await trio.to_thread.run_sync(idle_then_eof, port, req, False)
            assert got.startswith(b"HTTP/1.1 204 ") and 0.25 < waited < 2
            # A head that never ends, a byte at a time, is bounded as a whole.
            got, waited = await trio.to_thread.run_sync(idle_then_eof, port, b"GET / HT", True)
            assert got == b"" and waited < 2
            nursery.cancel_scope.cancel()
