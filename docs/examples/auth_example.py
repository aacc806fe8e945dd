"""docs/guide/authorization.md: a server that wants OAuth tokens, and the clients that
get through: a user's (browser login, tokens kept, DPoP-bound when the server asks), a
workload's (its platform-issued JWT), a service's (client credentials).

    mcpactor run docs/examples/auth_example.py:server --transport http \\
        --auth-issuer https://auth.example.com --auth-jwks https://auth.example.com/jwks \\
        --auth-resource https://mcp.example.com/mcp --auth-scope notes:read
"""

import os
import webbrowser
from collections.abc import Callable
from pathlib import Path

from mcpactor import Client, Context, Server
from mcpactor.auth import (
    ClientConfig,
    ClientCredentialsGrant,
    DPoPKey,
    FileTokenStorage,
    OAuthClient,
    WorkloadIdentityGrant,
)
from mcpactor.auth.grants import AuthorizationCodeGrant
from mcpactor.auth.redirect import LoopbackRedirectHandler
from mcpactor.auth.resource_server import ResourceServer
from mcpactor.auth.verifier import JwtVerifier

server = Server("auth-example", version="1.0.0")


@server.tool(scopes=["notes:read"])
async def whoami(ctx: Context) -> str:
    """Who the token speaks for."""
    if ctx.auth is None:  # served without protection
        return "anonymous"
    return ctx.auth.subject or ctx.auth.client_id or "unknown"


def protection(url: str, issuer: str) -> ResourceServer:
    """What ``server.run("http", auth=...)`` takes: the tokens ``issuer`` signs for
    ``url`` (JWTs checked against its key set)."""
    return ResourceServer(
        resource=url, authorization_servers=[issuer], scopes_supported=["notes:read"],
        verifier=JwtVerifier(issuer=issuer, audience=url, jwks_url=f"{issuer}/jwks"))


def kept_key(path: Path) -> DPoPKey:
    """The DPoP key kept in ``path`` (made on first use, readable by its owner only),
    so that tokens bound to it outlive the process."""
    if path.exists():
        return DPoPKey.from_pem(path.read_text())
    key = DPoPKey.generate("ES256")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(key.private_pem())
    return key


def user_client(url: str, folder: Path,
                open_url: Callable[[str], object] = webbrowser.open) -> OAuthClient:
    """A person's client: logs in through the browser once, keeps the tokens and the
    DPoP key in ``folder``; the tokens are DPoP-bound when the server asks for it."""
    return OAuthClient(
        url,
        grant=AuthorizationCodeGrant(LoopbackRedirectHandler(open_url=open_url)),
        storage=FileTokenStorage(folder / "tokens.json"),
        dpop_key=kept_key(folder / "dpop-key.pem"),
    )


def workload_client(url: str, token_file: Path) -> OAuthClient:
    """A workload's client (SEP-1933): the JWT its platform puts in ``token_file``
    (a Kubernetes projected service account token...) is the grant. The file is read
    for every token request, so a rotated token is picked up."""
    return OAuthClient(url, grant=WorkloadIdentityGrant(assertion_file=token_file))


def service_client(url: str) -> OAuthClient:
    """A service's client: pre-registered credentials from the environment."""
    config = ClientConfig(client_id=os.environ["CLIENT_ID"],
                          client_secret=os.environ["CLIENT_SECRET"])
    return OAuthClient(url, config=config, grant=ClientCredentialsGrant())


async def demo(client: Client) -> str:
    said = await client.call_tool("whoami", {})
    return said.content[0].text  # type: ignore[union-attr]
