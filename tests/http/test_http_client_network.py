"""The HTTP client in real networks: proxies (explicit and from the environment,
CONNECT for HTTPS), TLS options (a private CA, a client certificate, verification
off), headers computed per request, and a byte stream of the caller's own."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import trio
from net_support import Pki, RecordingProxy, TlsFront, make_pki

import mcpactor
from mcpactor import McpError, Server, TlsOptions
from mcpactor.transports.http_client import HttpPool
from mcpactor.transports.http_proxy import ProxyError, parse_proxy, proxy_from_env
from mcpactor.transports.http_serve import serve_http

PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUEST_METHOD")


@pytest.fixture(autouse=True)
def clean_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_ENV:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def echo_server() -> Server:
    server = Server("net")

    @server.tool
    async def echo(text: str) -> str:
        """Echo."""
        return text

    return server


async def _start(nursery: trio.Nursery, fn: Callable[..., Any]) -> int:
    port: int = await nursery.start(fn)
    return port


async def _serve(nursery: trio.Nursery) -> int:
    url: str = await nursery.start(lambda task_status: serve_http(
        echo_server(), host="127.0.0.1", port=0, quiet=True, task_status=task_status,
        allowed_hosts=frozenset({"127.0.0.1", "localhost", "mcp.test"})))
    return int(url.rsplit(":", 1)[1].split("/", 1)[0])


async def _echo(url: str, text: str = "hi", **options: Any) -> str:
    async with mcpactor.connect_http(url, timeout=10, init_timeout=10,
                                     open_get_stream=False, **options, mode="legacy") as client:
        result = await client.call_tool("echo", {"text": text})
        content = result.content[0]
        return getattr(content, "text", "")


@pytest.fixture
async def net() -> AsyncIterator[trio.Nursery]:
    async with trio.open_nursery() as nursery:
        yield nursery
        nursery.cancel_scope.cancel()


# -- proxies ---------------------------------------------------------------------------------


async def test_an_explicit_proxy_carries_plain_http_in_absolute_form(net: trio.Nursery) -> None:
    port = await _serve(net)
    proxy = RecordingProxy(credentials="Basic dXNlcjpwQHNz")  # user:p@ss
    proxy_port = await _start(net, proxy.serve)
    url = f"http://mcp.test:{port}/mcp"  # only the proxy knows where mcp.test is
    assert await _echo(url, proxy=f"http://user:p%40ss@127.0.0.1:{proxy_port}") == "hi"
    first = proxy.seen[0]
    assert (first.method, first.target) == ("POST", url)
    assert first.headers["host"] == f"mcp.test:{port}"
    assert first.headers["proxy-authorization"] == "Basic dXNlcjpwQHNz"


async def test_a_proxy_asking_for_credentials_is_named_in_the_error(net: trio.Nursery,
                                                                     pki: Pki) -> None:
    port = await _serve(net)
    front = TlsFront(pki, port)
    tls_port = await _start(net, front.serve)
    proxy = RecordingProxy(credentials="Basic c2VjcmV0")
    proxy_port = await _start(net, proxy.serve)
    with pytest.raises(McpError) as info:
        await _echo(f"https://mcp.test:{tls_port}/mcp", proxy=f"http://127.0.0.1:{proxy_port}",
                    tls=TlsOptions(ca_file=pki.ca))
    assert "the proxy asks for credentials (407)" in info.value.message
    assert f"through the proxy 127.0.0.1:{proxy_port}" in info.value.message


async def test_https_goes_through_a_connect_tunnel(net: trio.Nursery, pki: Pki) -> None:
    port = await _serve(net)
    front = TlsFront(pki, port)
    tls_port = await _start(net, front.serve)
    proxy = RecordingProxy()
    proxy_port = await _start(net, proxy.serve)
    url = f"https://mcp.test:{tls_port}/mcp"
    text = await _echo(url, text="secret", proxy=f"http://127.0.0.1:{proxy_port}",
                       tls=TlsOptions(ca_file=str(pki.ca)))
    assert text == "secret"
    assert {(s.method, s.target) for s in proxy.seen} == {("CONNECT", f"mcp.test:{tls_port}")}


async def test_the_environment_names_the_proxy(net: trio.Nursery, pki: Pki,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    port = await _serve(net)
    front = TlsFront(pki, port)
    tls_port = await _start(net, front.serve)
    proxy = RecordingProxy()
    proxy_port = await _start(net, proxy.serve)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:1")  # lowercase wins
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy_port}")
    monkeypatch.setenv("HTTPS_PROXY", f"127.0.0.1:{proxy_port}")  # curl's bare form
    assert await _echo(f"http://mcp.test:{port}/mcp") == "hi"
    assert await _echo(f"https://mcp.test:{tls_port}/mcp", tls=TlsOptions(ca_file=pki.ca)) == "hi"
    assert {s.method for s in proxy.seen} == {"POST", "CONNECT"}
    seen = len(proxy.seen)
    # Loopback never takes an environment proxy, trust_env=False ignores it altogether.
    assert await _echo(f"http://127.0.0.1:{port}/mcp") == "hi"
    monkeypatch.setenv("NO_PROXY", "other.example")
    with pytest.raises(McpError, match=r"cannot connect to mcp\.test"):
        await _echo(f"http://mcp.test:{port}/mcp", trust_env=False)
    assert len(proxy.seen) == seen
    monkeypatch.setenv("no_proxy", ".test")
    with pytest.raises(McpError) as info:
        await _echo(f"http://mcp.test:{port}/mcp")
    assert "proxy" not in info.value.message and len(proxy.seen) == seen


def test_proxy_settings_from_the_environment() -> None:
    env = {"https_proxy": "http://u:p@proxy:3128", "HTTP_PROXY": "http://plain:8080",
           "NO_PROXY": "internal.example, .corp, 10.0.0.0/8, db:5432, [fd00::1]"}
    assert proxy_from_env("https", "mcp.example.com", 443, env) == parse_proxy(
        "http://u:p@proxy:3128")
    http = proxy_from_env("http", "mcp.example.com", 80, env)
    assert http is not None and (http.host, http.port, http.headers()) == ("plain", 8080, [])
    for host, port in (("internal.example", 443), ("api.internal.example", 443),
                       ("x.corp", 443), ("corp", 443), ("10.1.2.3", 443), ("db", 5432),
                       ("fd00::1", 443), ("localhost", 443), ("127.0.0.5", 443), ("::1", 443)):
        assert proxy_from_env("https", host, port, env) is None, host
    assert proxy_from_env("https", "db", 443, env) is not None
    assert proxy_from_env("https", "notinternal.example", 443, env) is not None
    assert proxy_from_env("https", "x", 443, {"HTTPS_PROXY": "p:1", "NO_PROXY": "*"}) is None
    assert proxy_from_env("http", "x", 80, {"ALL_PROXY": "http://all:9"}) == parse_proxy(
        "http://all:9")
    # Under CGI, HTTP_PROXY is a request header ("httpoxy"): only http_proxy counts.
    assert proxy_from_env("http", "x", 80, {"HTTP_PROXY": "http://evil:1",
                                            "REQUEST_METHOD": "GET"}) is None
    proxy = parse_proxy("https://user:p%40ss@proxy.example")
    assert (proxy.scheme, proxy.port) == ("https", 443)
    assert proxy.headers() == [("proxy-authorization", "Basic dXNlcjpwQHNz")]
    assert "p@ss" not in repr(proxy) and "dXNlcjpwQHNz" not in repr(proxy)


@pytest.mark.parametrize(("setting", "said"), [
    ("socks5://proxy:1080", "only http:// and https:// proxies are supported"),
    ("http://", "names no proxy host"),
    ("http://proxy:port", "is not a proxy URL"),
])
def test_a_bad_proxy_is_a_clear_error(setting: str, said: str) -> None:
    with pytest.raises(ProxyError, match=said):
        HttpPool(proxy=setting)
    with pytest.raises(ProxyError, match="HTTPS_PROXY="):
        proxy_from_env("https", "x", 443, {"HTTPS_PROXY": setting})


# -- TLS -------------------------------------------------------------------------------------


async def test_a_private_ca_and_a_client_certificate(net: trio.Nursery, pki: Pki) -> None:
    port = await _serve(net)
    front = TlsFront(pki, port, client_ca=pki.ca)
    tls_port = await _start(net, front.serve)
    url = f"https://localhost:{tls_port}/mcp"
    with pytest.raises(McpError, match="CERTIFICATE_VERIFY_FAILED"):
        await _echo(url)  # the system's CAs do not know ours
    with pytest.raises(McpError):
        await _echo(url, tls=TlsOptions(ca_file=pki.ca))  # no client certificate
    tls = TlsOptions(ca_data=pki.ca.read_text(), cert_file=pki.client_cert,
                     key_file=pki.client_key)
    assert await _echo(url, tls=tls) == "hi"
    assert "test-client" in front.peers


async def test_verification_can_be_turned_off(net: trio.Nursery, pki: Pki) -> None:
    port = await _serve(net)
    front = TlsFront(pki, port)
    tls_port = await _start(net, front.serve)
    assert await _echo(f"https://127.0.0.1:{tls_port}/mcp", tls=TlsOptions(verify=False)) == "hi"


def test_tls_files_that_cannot_be_loaded_are_named(tmp_path: Path, pki: Pki) -> None:
    with pytest.raises(ValueError, match=r"TlsOptions\(ca_file=...\): cannot load"):
        HttpPool(tls=TlsOptions(ca_file=tmp_path / "missing.pem"))
    with pytest.raises(ValueError, match=r"cannot load the client certificate"):
        HttpPool(tls=TlsOptions(cert_file=pki.ca, key_file=tmp_path / "missing.key"))
    with pytest.raises(ValueError, match="needs cert_file"):
        HttpPool(tls=TlsOptions(key_file=pki.client_key))


# -- per-request headers and a stream of one's own ----------------------------------------------


class _Tap(trio.abc.Stream):
    """A byte stream that keeps a copy of what the client sends."""

    def __init__(self, inner: trio.abc.Stream, sent: list[bytes]) -> None:
        self.inner = inner
        self.sent = sent

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        self.sent.append(bytes(data))
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        return await self.inner.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_headers_per_request_over_a_stream_of_ones_own(net: trio.Nursery) -> None:
    port = await _serve(net)
    sent: list[bytes] = []
    opened: list[tuple[str, int]] = []
    counter = iter(range(1, 100))

    async def open_stream(host: str, p: int) -> trio.abc.Stream:
        opened.append((host, p))
        return _Tap(await trio.open_tcp_stream("127.0.0.1", p), sent)

    async def headers() -> dict[str, str]:
        return {"X-Request-Number": str(next(counter)), "X-Static": "replaced"}

    text = await _echo(f"http://mcp.test:{port}/mcp", open_stream=open_stream,
                       headers={"X-Static": "static", "X-Kept": "kept"},
                       headers_factory=headers)
    assert text == "hi"
    assert opened and all(o == ("mcp.test", port) for o in opened)
    requests = [chunk for chunk in sent if chunk.startswith((b"POST", b"DELETE"))]
    assert len(requests) >= 3  # initialize, initialized, tools/call (+ DELETE)
    numbers = [int(r.lower().split(b"x-request-number: ")[1].split(b"\r\n")[0])
               for r in requests]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    assert all(b"x-kept: kept" in r.lower() and b"x-static: replaced" in r.lower()
               for r in requests)


async def test_networking_options_and_a_pool_do_not_mix() -> None:
    with pytest.raises(TypeError, match="pass proxy, tls to the HttpPool given as pool="):
        async with mcpactor.connect_http("http://127.0.0.1:1/mcp", pool=HttpPool(),
                                         proxy="http://p:1", tls=TlsOptions(), mode="legacy"):
            pass
