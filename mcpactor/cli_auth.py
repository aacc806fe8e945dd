"""``mcpactor run --auth-*``: protect the HTTP endpoint as an OAuth 2.1 resource server.

The flags build the :class:`~mcpactor.auth.resource_server.ResourceServer` that
``server.run("http", auth=...)`` takes from code: the authorization server that issues
the tokens, how tokens are checked (the issuer's JWKS for JWT access tokens, or its
introspection endpoint), the server's canonical URI (the tokens' audience) and the
scopes every request needs. Secrets never go on the command line: the introspection
client's credentials come from the environment.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the auth stack (PyJWT, cryptography) loads only when a flag asks for it
    from mcpactor.auth.resource_server import ResourceServer

__all__ = ["CLIENT_ID_ENV", "CLIENT_SECRET_ENV", "add_auth_arguments", "resource_server"]

#: Where ``--auth-introspect`` finds the credentials it authenticates with.
CLIENT_ID_ENV = "MCPACTOR_AUTH_CLIENT_ID"
CLIENT_SECRET_ENV = "MCPACTOR_AUTH_CLIENT_SECRET"
_FLAGS = ("--auth-issuer", "--auth-jwks", "--auth-introspect", "--auth-resource", "--auth-scope")


def add_auth_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``--auth-*`` options (a group of their own) to ``mcpactor run``."""
    group = parser.add_argument_group(
        "OAuth (HTTP only): require bearer tokens from an authorization server")
    group.add_argument("--auth-issuer", metavar="URL",
                       help="the authorization server that issues the tokens (turns it on)")
    group.add_argument("--auth-jwks", metavar="URL",
                       help="check JWT access tokens against the issuer's keys at URL")
    group.add_argument("--auth-introspect", metavar="URL",
                       help="ask the issuer's introspection endpoint about each token "
                       f"(client credentials from ${CLIENT_ID_ENV} and ${CLIENT_SECRET_ENV})")
    group.add_argument("--auth-resource", metavar="URI",
                       help="this server's canonical URI, the tokens' audience "
                       "(default: http://HOST:PORT/PATH)")
    group.add_argument("--auth-scope", action="append", default=[], metavar="SCOPE",
                       help="a scope every request needs (repeat for several)")


def resource_server(args: argparse.Namespace) -> ResourceServer | None:
    """The resource server the ``--auth-*`` options ask for, None without them.

    Raises ValueError with a message for the user when the options do not fit together.
    """
    given = [flag for flag in _FLAGS if getattr(args, flag[2:].replace("-", "_"))]
    if not given:
        return None
    from mcpactor.auth.resource_server import ResourceServer
    from mcpactor.auth.verifier import IntrospectionVerifier, JwtVerifier, TokenVerifier
    from mcpactor.transports.http_client import split_url

    if args.auth_issuer is None:
        verb = "needs" if len(given) == 1 else "need"
        raise ValueError(f"{', '.join(given)} {verb} --auth-issuer URL (the authorization "
                         "server that issues the tokens)")
    if args.transport != "http":
        raise ValueError("--auth-* protect the Streamable HTTP endpoint: use them with "
                         "--transport http")
    if (args.auth_jwks is None) == (args.auth_introspect is None):
        raise ValueError("say how tokens are checked: --auth-jwks URL (JWT access tokens) "
                         "or --auth-introspect URL (token introspection), one of the two")
    for flag, url in (("--auth-issuer", args.auth_issuer), ("--auth-jwks", args.auth_jwks),
                      ("--auth-introspect", args.auth_introspect),
                      ("--auth-resource", args.auth_resource)):
        if url is not None:
            try:
                split_url(url)
            except ValueError:
                raise ValueError(f"{flag} {url!r} is not an http(s) URL") from None
    resource = args.auth_resource
    if resource is None:
        if args.port == 0 or args.host in ("0.0.0.0", "::", ""):
            raise ValueError("pass --auth-resource URI: with --port 0 or a wildcard --host "
                             "the URI clients reach this server at (the tokens' audience) "
                             "cannot be guessed")
        host = f"[{args.host}]" if ":" in args.host else args.host
        resource = f"http://{host}:{args.port}{args.path}"
    verifier: TokenVerifier
    if args.auth_jwks is not None:
        verifier = JwtVerifier(issuer=args.auth_issuer, audience=resource,
                               jwks_url=args.auth_jwks)
    else:
        verifier = IntrospectionVerifier(
            introspection_endpoint=args.auth_introspect, audience=resource,
            client_id=os.environ.get(CLIENT_ID_ENV) or None,
            client_secret=os.environ.get(CLIENT_SECRET_ENV) or None,
        )
    return ResourceServer(resource=resource, authorization_servers=[args.auth_issuer],
                          verifier=verifier, required_scopes=args.auth_scope)
