"""Sans-I/O parts of the HTTP client's proxy and TLS support.

Proxies: an explicit ``proxy="http://host:port"`` (``https://`` for TLS to the proxy;
``user:password@`` sends ``Proxy-Authorization: Basic``), or the environment as curl
and requests read it: ``http_proxy``/``HTTP_PROXY`` for http:// URLs,
``https_proxy``/``HTTPS_PROXY`` for https:// ones, ``all_proxy``/``ALL_PROXY`` for
either, the lowercase name first, and ``no_proxy``/``NO_PROXY`` for the hosts that go
direct (``*``; host names, which match their subdomains too, with or without a leading
dot; an optional ``:port``; IP addresses and CIDR blocks). As Go's HTTP client does,
loopback destinations (``localhost``, 127.0.0.0/8, ::1) never take an environment
proxy; an explicit one applies to every destination. A plain-HTTP destination is
requested from the proxy in absolute form (``GET http://host/path``); an HTTPS one
through a ``CONNECT host:port`` tunnel, with TLS to the destination inside.

TLS: :class:`TlsOptions` (a CA bundle, a client certificate and key, verification off)
becomes the ``ssl.SSLContext`` of every https:// connection.
"""

from __future__ import annotations

import base64
import ipaddress
import os
import re
import ssl
from collections.abc import Mapping
from typing import Final
from urllib.parse import unquote, urlsplit

import attrs

__all__ = [
    "Proxy",
    "ProxyError",
    "TlsOptions",
    "connect_request",
    "parse_connect_response",
    "parse_proxy",
    "proxy_from_env",
]

_STATUS_LINE: Final = re.compile(rb"HTTP/1\.[01] ([0-9]{3})(?: ([^\r\n]*))?\Z")
#: A CONNECT answer's head may not be larger than this.
MAX_CONNECT_HEAD = 16 * 1024


class ProxyError(ValueError):
    """A proxy setting that cannot be used (the message names the setting)."""


@attrs.frozen(kw_only=True)
class Proxy:
    """An HTTP proxy: where it is, and its credentials (kept out of ``repr``)."""

    scheme: str
    host: str
    port: int
    authorization: str | None = attrs.field(default=None, repr=False)

    @property
    def authority(self) -> str:
        """``host:port`` (for messages)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def headers(self) -> list[tuple[str, str]]:
        """Headers every request to the proxy carries (its credentials)."""
        if self.authorization is None:
            return []
        return [("proxy-authorization", self.authorization)]


def parse_proxy(url: str, setting: str = "proxy") -> Proxy:
    """A :class:`Proxy` from its URL (``http://[user:password@]host[:port]``);
    :class:`ProxyError` naming ``setting`` for anything else."""
    text = url.strip()
    if "://" not in text:
        text = "http://" + text  # curl's reading of a bare host:port
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ProxyError(f"{setting}={url!r} is not a proxy URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise ProxyError(f"{setting}={url!r}: only http:// and https:// proxies are "
                         f"supported, not {parts.scheme}://")
    if not parts.hostname:
        raise ProxyError(f"{setting}={url!r} names no proxy host")
    authorization = None
    if parts.username is not None:
        secret = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(secret.encode()).decode("ascii")
    return Proxy(scheme=parts.scheme, host=parts.hostname,
                 port=port or (443 if parts.scheme == "https" else 80),
                 authorization=authorization)


def _env(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name.lower())
    if value is None and not (name == "HTTP_PROXY" and "REQUEST_METHOD" in env):
        # Under CGI, HTTP_PROXY is a request header anyone can set ("httpoxy").
        value = env.get(name)
    return value.strip() if value and value.strip() else None


def _is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.") or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _bypassed(host: str, port: int, no_proxy: str) -> bool:
    host = host.lower().strip("[]").rstrip(".")
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        entry_port: int | None = None
        if entry.startswith("["):  # [v6]:port
            inner, _, rest = entry[1:].partition("]")
            entry = inner
            if rest.startswith(":") and rest[1:].isdigit():
                entry_port = int(rest[1:])
        elif entry.count(":") == 1:
            name, _, maybe = entry.partition(":")
            if maybe.isdigit():
                entry, entry_port = name, int(maybe)
        if entry_port is not None and entry_port != port:
            continue
        if address is not None:
            try:
                if address in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
            continue
        entry = entry.lstrip(".").rstrip(".")
        if entry and (host == entry or host.endswith("." + entry)):
            return True
    return False


def proxy_from_env(scheme: str, host: str, port: int,
                   env: Mapping[str, str] | None = None) -> Proxy | None:
    """The proxy the environment names for a destination, None to go direct."""
    env = os.environ if env is None else env
    if _is_loopback(host):
        return None
    name = "HTTPS_PROXY" if scheme == "https" else "HTTP_PROXY"
    url = _env(env, name)
    setting = name
    if url is None:
        url, setting = _env(env, "ALL_PROXY"), "ALL_PROXY"
    if url is None:
        return None
    no_proxy = _env(env, "NO_PROXY")
    if no_proxy is not None and _bypassed(host, port, no_proxy):
        return None
    return parse_proxy(url, setting)


def connect_request(host: str, port: int, proxy: Proxy) -> bytes:
    """The ``CONNECT`` request opening a tunnel to ``host:port``."""
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    lines = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}"]
    lines += [f"{k}: {v}" for k, v in proxy.headers()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")


def parse_connect_response(buffer: bytes) -> tuple[int, str, int] | None:
    """``(status, reason, head length)`` once ``buffer`` holds the whole answer head,
    None while it does not; ValueError for an answer that is not HTTP."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        if len(buffer) > MAX_CONNECT_HEAD:
            raise ValueError("the proxy's answer to CONNECT has no end")
        return None
    status_line = buffer[: buffer.find(b"\r\n")]
    match = _STATUS_LINE.match(status_line)
    if match is None:
        raise ValueError(f"the proxy's answer to CONNECT is not HTTP: {status_line[:80]!r}")
    reason = (match.group(2) or b"").decode("latin-1").strip()
    return int(match.group(1)), reason, end + 4


@attrs.frozen(kw_only=True)
class TlsOptions:
    """TLS for https:// connections (and https:// proxies).

    ``ca_file``/``ca_data``: trust these CA certificates (PEM) instead of the system's;
    ``cert_file`` (+ ``key_file``, ``key_password``): a client certificate;
    ``verify=False`` accepts any certificate and host name (for tests only).
    """

    ca_file: str | os.PathLike[str] | None = None
    ca_data: str | None = attrs.field(default=None, repr=False)
    cert_file: str | os.PathLike[str] | None = None
    key_file: str | os.PathLike[str] | None = None
    key_password: str | None = attrs.field(default=None, repr=False)
    verify: bool = True

    def context(self) -> ssl.SSLContext:
        """The ``ssl.SSLContext``; ValueError naming the option whose file cannot be
        loaded."""
        if self.ca_file is not None or self.ca_data is not None:
            # Only these CAs: a private CA is trusted instead of the system's, not beside.
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            try:
                ctx.load_verify_locations(
                    cafile=os.fspath(self.ca_file) if self.ca_file is not None else None,
                    cadata=self.ca_data)
            except (OSError, ssl.SSLError) as exc:
                which = "ca_file" if self.ca_file is not None else "ca_data"
                raise ValueError(f"TlsOptions({which}=...): cannot load the CA "
                                 f"certificates: {exc}") from None
        else:
            ctx = ssl.create_default_context()
        if self.cert_file is not None:
            try:
                ctx.load_cert_chain(
                    os.fspath(self.cert_file),
                    os.fspath(self.key_file) if self.key_file is not None else None,
                    self.key_password)
            except (OSError, ssl.SSLError) as exc:
                raise ValueError(f"TlsOptions(cert_file=..., key_file=...): cannot load "
                                 f"the client certificate: {exc}") from None
        elif self.key_file is not None:
            raise ValueError("TlsOptions(key_file=...) needs cert_file=... too")
        if not self.verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        return ctx
