"""Conformance client: what the official MCP conformance suite runs in client mode.

The suite starts a mock server and runs this program with the server URL as the last
argument and the scenario name in ``MCP_CONFORMANCE_SCENARIO`` (see
docs/conformance.md). Every scenario uses mcpactor's Streamable HTTP client:

    scripts/conformance.sh client .venv/bin/python examples/conformance_client.py

Exit status 0 when the scenario's steps ran, 1 otherwise.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

import trio

from mcpactor import ClientHandlers, connect_http
from mcpactor.auth import (
    AuthorizationCodeGrant,
    ClientConfig,
    ClientCredentialsGrant,
    CrossAppAccessGrant,
    HeadlessRedirectHandler,
    OAuthClient,
    WorkloadIdentityGrant,
)
from mcpactor.auth.grants import Grant
from mcpactor.protocol.types import ElicitRequestParams, ElicitResult, Root


def _defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """The form a user accepts without typing anything: every schema default filled in."""
    out: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        if isinstance(prop, dict) and "default" in prop:
            out[name] = prop["default"]
    return out


async def accept_with_defaults(params: ElicitRequestParams) -> ElicitResult:
    """Elicitation handler: accept, filling in the schema's defaults (SEP-1034)."""
    schema = getattr(params, "requested_schema", None) or {}
    return ElicitResult(action="accept", content=_defaults(schema))


async def initialize(url: str) -> None:
    """Handshake, list the tools, close."""
    async with connect_http(url, timeout=10) as client:
        if "tools" in client.server_capabilities:
            await client.list_tools()


async def tools_call(url: str) -> None:
    """Call ``add_numbers`` with two numbers."""
    async with connect_http(url, timeout=10) as client:
        tools = await client.list_tools()
        names = {t.name for t in tools.tools}
        if "add_numbers" in names:
            await client.call_tool("add_numbers", {"a": 5, "b": 3})


async def elicitation_defaults(url: str) -> None:
    """Call the tool that elicits; the handler accepts with the schema defaults."""
    handlers = ClientHandlers(elicitation=accept_with_defaults)
    async with connect_http(url, handlers=handlers, timeout=10) as client:
        await client.call_tool("test_client_elicitation_defaults", {})


async def sse_retry(url: str) -> None:
    """Call ``test_reconnection``: the server ends the POST stream early, the client
    resumes with Last-Event-ID after the ``retry:`` delay."""
    async with connect_http(url, timeout=10) as client:
        await client.call_tool("test_reconnection", {})


async def _sample(params: Any) -> dict[str, Any]:
    """Sampling handler: a fixed assistant answer."""
    return {"role": "assistant", "content": {"type": "text", "text": "sampled"},
            "model": "conformance-model", "stopReason": "endTurn"}


def _every_handler() -> ClientHandlers:
    """Handlers for everything a server may ask: the client declares every capability."""
    return ClientHandlers(sampling=_sample, elicitation=accept_with_defaults,
                          roots=[Root(uri="file:///tmp", name="tmp")])


async def request_metadata(url: str) -> None:
    """2026-07-28: every request carries its ``_meta`` and version header; the server
    refuses the first one with -32022 and the client retries with a version it lists."""
    async with connect_http(url, handlers=_every_handler(), timeout=10) as client:
        if "tools" in client.server_capabilities:
            await client.list_tools()


async def accept_confirm(params: ElicitRequestParams) -> ElicitResult:
    """Elicitation handler for the MRTR scenario: confirm."""
    return ElicitResult(action="accept", content={"confirmed": True})


async def request_state(url: str) -> None:
    """SEP-2322: answer ``input_required`` rounds (echoing ``requestState`` exactly,
    omitting it when there is none), a plain call between them, and a result with no
    ``resultType`` taken as complete."""
    handlers = ClientHandlers(elicitation=accept_confirm)
    async with connect_http(url, handlers=handlers, timeout=10) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        for name in ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state",
                     "test_mrtr_no_result_type"):
            if name in names:
                await client.call_tool(name, {})


def _sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments that satisfy a simple schema's required properties."""
    props = schema.get("properties") or {}
    samples = {"string": "us-west1", "integer": 1, "number": 1.5, "boolean": True,
               "object": {}, "array": [], "null": None}
    return {name: samples.get(props.get(name, {}).get("type"), "x")
            for name in schema.get("required") or []}


async def standard_headers(url: str) -> None:
    """SEP-2243: every kind of request, so that each carries its Mcp-Method (and
    Mcp-Name) header."""
    async with connect_http(url, timeout=10) as client:
        for tool in (await client.list_tools()).tools:
            await client.call_tool(tool.name, _sample_arguments(tool.input_schema))
        for resource in (await client.list_resources()).resources:
            await client.read_resource(resource.uri)
        for prompt in (await client.list_prompts()).prompts:
            await client.get_prompt(prompt.name)


async def custom_headers(url: str) -> None:
    """SEP-2243: the calls the suite names in its context, each mirroring the arguments
    its tool marks with ``x-mcp-header`` into Mcp-Param-* headers."""
    async with connect_http(url, timeout=10) as client:
        await client.list_tools()
        for call in _context().get("toolCalls") or []:
            await client.call_tool(call["name"], call.get("arguments") or {})


async def invalid_tool_headers(url: str) -> None:
    """SEP-2243: tools with invalid ``x-mcp-header`` annotations are left out of
    ``tools/list``; every tool that remains is called."""
    async with connect_http(url, timeout=10) as client:
        for tool in (await client.list_tools()).tools:
            await client.call_tool(tool.name, _sample_arguments(tool.input_schema))


async def list_tools_only(url: str) -> None:
    """List the tools (SEP-2106: a network ``$ref`` in a schema is never fetched)."""
    async with connect_http(url, timeout=10) as client:
        await client.list_tools()


async def schema_preservation(url: str) -> None:
    """Echo the 2020-12 tool's inputSchema back unchanged through ``json_schema_echo``."""
    async with connect_http(url, timeout=10) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        focal = tools.get("json_schema_2020_12_tool")
        if focal is not None and "json_schema_echo" in tools:
            await client.call_tool("json_schema_echo", {"schema": focal.input_schema})


#: The client id the suite expects when its authorization server supports Client ID
#: Metadata Documents (the URL need not resolve).
CIMD_CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


def _context() -> dict[str, Any]:
    """Scenario data the suite passes in ``MCP_CONFORMANCE_CONTEXT`` (credentials...)."""
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    data = json.loads(raw) if raw else {}
    return data if isinstance(data, dict) else {}


def oauth_for(url: str, scenario: str) -> OAuthClient:
    """The OAuth client each auth scenario calls for."""
    ctx = _context()
    grant: Grant
    if scenario in ("auth/client-credentials-jwt", "auth/client-credentials-basic"):
        config = ClientConfig(
            client_id=ctx["client_id"], client_secret=ctx.get("client_secret"),
            private_key_pem=ctx.get("private_key_pem"),
            signing_algorithm=ctx.get("signing_algorithm") or "ES256",
        )
        grant = ClientCredentialsGrant()
    elif scenario == "auth/wif-jwt-bearer":
        # SEP-1933: the workload's platform-issued JWT is the grant; no registration,
        # no secret. (The suite also hands out an expired and a wrong-audience JWT, for
        # clients that want to see the refusals.)
        config = ClientConfig()
        grant = WorkloadIdentityGrant(ctx["valid_jwt"])
    elif scenario in ("auth/cross-app-access-complete-flow",
                      "auth/enterprise-managed-authorization"):
        config = ClientConfig(client_id=ctx["client_id"], client_secret=ctx["client_secret"])
        grant = CrossAppAccessGrant(
            idp_token_endpoint=ctx["idp_token_endpoint"], id_token=ctx["idp_id_token"],
            idp_client_id=ctx["idp_client_id"],
        )
    else:
        # The suite's authorization server approves at once: follow its redirect
        # headlessly instead of opening a browser. (auth/dpop and auth/dpop-nonce go
        # this way too: their resource server's challenge is DPoP-only, and
        # OAuthClient's default dpop="auto" binds the tokens when a resource asks.)
        config = ClientConfig(
            client_id=ctx.get("client_id"), client_secret=ctx.get("client_secret"),
            client_metadata_url=CIMD_CLIENT_METADATA_URL, client_name="mcpactor-conformance",
        )
        grant = AuthorizationCodeGrant(HeadlessRedirectHandler())
    return OAuthClient(url, config=config, grant=grant)


async def auth_scenario(url: str) -> None:
    """Connect through OAuth, list the tools, call ``test-tool`` when there is one."""
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    auth = oauth_for(url, scenario)
    async with connect_http(url, auth=auth, timeout=10) as client:
        tools = await client.list_tools()
        if any(t.name == "test-tool" for t in tools.tools):
            await client.call_tool("test-tool", {})


SCENARIOS = {
    "initialize": initialize,
    "tools_call": tools_call,
    "tools-call": tools_call,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
    "request-metadata": request_metadata,
    "sep-2322-client-request-state": request_state,
    "http-standard-headers": standard_headers,
    "http-custom-headers": custom_headers,
    "http-invalid-tool-headers": invalid_tool_headers,
    "json-schema-ref-no-deref": list_tools_only,
    "json-schema-2020-12-preservation": schema_preservation,
}


def main() -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if len(sys.argv) < 2:
        print("usage: conformance_client.py [...] SERVER_URL", file=sys.stderr)
        return 2
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize")
    run = SCENARIOS.get(scenario) or (auth_scenario if scenario.startswith("auth/") else None)
    if run is None:
        print(f"conformance_client: scenario {scenario!r} is not supported", file=sys.stderr)
        return 1
    try:
        trio.run(run, url)
    except Exception as exc:
        print(f"conformance_client: {scenario} failed: {exc!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
