"""Network doubles for the HTTP client's proxy and TLS tests, all on 127.0.0.1: a
forwarding/CONNECT proxy that records what passed through it, a TLS front (with an
optional client-certificate check) for a plain MCP server, and a test CA."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path
from typing import Any

import attrs
import trio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# -- a test CA -----------------------------------------------------------------------------


@attrs.frozen
class Pki:
    """PEM files: the CA, a server certificate and a client certificate."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))


def make_pki(folder: Path) -> Pki:
    """A CA made for this test run, and a server and a client certificate it signed."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder().subject_name(_name("mcpactor test CA"))
        .issuer_name(_name("mcpactor test CA")).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True,
            content_commitment=False, key_encipherment=False, data_encipherment=False,
            key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                       critical=False)
        .sign(ca_key, hashes.SHA256()))

    def leaf(cn: str, usage: Any, names: list[x509.GeneralName]) -> tuple[Any, Any]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                ca_key.public_key()), critical=False))
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return key, builder.sign(ca_key, hashes.SHA256())

    server_key, server_cert = leaf("mcp.test", ExtendedKeyUsageOID.SERVER_AUTH, [
        x509.DNSName("mcp.test"), x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    client_key, client_cert = leaf("test-client", ExtendedKeyUsageOID.CLIENT_AUTH, [])
    pki = Pki(folder / "ca.pem", folder / "server.pem", folder / "server.key",
              folder / "client.pem", folder / "client.key")
    pki.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    pki.server_cert.write_bytes(server_cert.public_bytes(serialization.Encoding.PEM))
    _write_key(server_key, pki.server_key)
    pki.client_cert.write_bytes(client_cert.public_bytes(serialization.Encoding.PEM))
    _write_key(client_key, pki.client_key)
    return pki


# -- piping ----------------------------------------------------------------------------------


async def _pipe(source: trio.abc.Stream, sink: trio.abc.Stream) -> None:
    try:
        while data := await source.receive_some(65536):
            await sink.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass
    finally:
        with trio.CancelScope(shield=True):
            try:
                await sink.aclose()
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass


async def _splice(a: trio.abc.Stream, b: trio.abc.Stream, already: bytes = b"") -> None:
    if already:
        await b.send_all(already)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_pipe, a, b)
        nursery.start_soon(_pipe, b, a)


async def _read_head(stream: trio.abc.Stream) -> tuple[bytes, bytes]:
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        data = await stream.receive_some(65536)
        if not data:
            raise EOFError
        buffer += data
    end = buffer.index(b"\r\n\r\n") + 4
    return buffer[:end], buffer[end:]


# -- the proxy -------------------------------------------------------------------------------


@attrs.define
class Seen:
    """What the proxy saw open a connection: the request line and headers."""

    method: str
    target: str
    headers: dict[str, str]


@attrs.define
class RecordingProxy:
    """An HTTP proxy on 127.0.0.1: absolute-form requests are forwarded, CONNECT opens
    a tunnel; every host name is 127.0.0.1 (so ``mcp.test`` reaches the test servers,
    and only through this proxy). ``credentials``: ``Proxy-Authorization`` it insists
    on (407 otherwise)."""

    credentials: str | None = None
    seen: list[Seen] = attrs.Factory(list)
    port: int = 0

    async def serve(self, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started(self.port)
        await trio.serve_listeners(self._handle, listeners)

    async def _handle(self, client: trio.SocketStream) -> None:
        try:
            head, rest = await _read_head(client)
        except (EOFError, trio.BrokenResourceError):
            await client.aclose()
            return
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        self.seen.append(Seen(method, target, headers))
        if self.credentials is not None and headers.get("proxy-authorization") != self.credentials:
            await client.send_all(b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                                  b"Proxy-Authenticate: Basic realm=\"test\"\r\n"
                                  b"Content-Length: 0\r\nConnection: close\r\n\r\n")
            await client.aclose()
            return
        if method == "CONNECT":
            port = int(target.rsplit(":", 1)[1])
            upstream = await trio.open_tcp_stream("127.0.0.1", port)
            await client.send_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await _splice(client, upstream, rest)
            return
        authority = target.split("://", 1)[1].split("/", 1)[0]
        port = int(authority.rsplit(":", 1)[1])
        upstream = await trio.open_tcp_stream("127.0.0.1", port)
        await _splice(client, upstream, head + rest)


# -- a TLS front for a plain server ----------------------------------------------------


@attrs.define
class TlsFront:
    """TLS on 127.0.0.1 in front of a plain HTTP server; ``client_ca``: ask for a client
    certificate signed by it (and refuse connections without one). ``peers``: the
    client certificates' subjects, one per accepted connection."""

    pki: Pki
    backend_port: int
    client_ca: Path | None = None
    peers: list[str] = attrs.Factory(list)
    port: int = 0

    async def serve(self, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(self.pki.server_cert, self.pki.server_key)
        if self.client_ca is not None:
            ctx.load_verify_locations(self.client_ca)
            ctx.verify_mode = ssl.CERT_REQUIRED
        listeners = await trio.open_ssl_over_tcp_listeners(
            0, ctx, host="127.0.0.1", https_compatible=True)
        self.port = listeners[0].transport_listener.socket.getsockname()[1]
        task_status.started(self.port)
        await trio.serve_listeners(self._handle, listeners)

    async def _handle(self, client: trio.SSLStream[trio.SocketStream]) -> None:
        try:
            await client.do_handshake()
        except (trio.BrokenResourceError, ssl.SSLError):
            return
        peer = client.getpeercert()
        if peer:
            subject = dict(item[0] for item in peer["subject"])
            self.peers.append(subject.get("commonName", "?"))
        upstream = await trio.open_tcp_stream("127.0.0.1", self.backend_port)
        await _splice(client, upstream)
