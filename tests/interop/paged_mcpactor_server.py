"""An mcpactor server with small pages and client-facing features the everything
example does not use (roots, sampling options, structured output, custom logger).

Served over stdio by tests/interop/test_sdk_client_stdio.py:

    python -m mcpactor.cli run tests/interop/paged_mcpactor_server.py:server
"""

from __future__ import annotations

from typing import Any, TypedDict

from mcpactor import Context, Server

server = Server("paged-interop-server", version="2.0.0", page_size=2)

ROOTS_CHANGED: list[int] = []


class Point(TypedDict):
    """A structured result."""

    x: int
    y: int


def _make_tool(n: int) -> None:
    async def numbered() -> str:
        return f"tool {n}"

    numbered.__doc__ = f"Numbered tool {n}."
    server.tool(name=f"tool_{n}")(numbered)


for _n in range(5):
    _make_tool(_n)


def _make_resource(n: int) -> None:
    async def numbered() -> str:
        return f"resource {n}"

    numbered.__doc__ = f"Numbered resource {n}."
    server.resource(f"paged://resource/{n}", mime_type="text/plain")(numbered)


for _n in range(5):
    _make_resource(_n)


def _make_prompt(n: int) -> None:
    async def numbered() -> str:
        return f"prompt {n}"

    numbered.__doc__ = f"Numbered prompt {n}."
    server.prompt(name=f"prompt_{n}")(numbered)


for _n in range(3):
    _make_prompt(_n)


@server.tool()
async def point(x: int, y: int) -> Point:
    """A structured (object) result."""
    return Point(x=x, y=y)


@server.tool()
async def roots(ctx: Context) -> list[str]:
    """The client's root URIs (asks the client with roots/list)."""
    return [root.uri for root in await ctx.list_roots()]


@server.tool()
async def roots_changed_count() -> int:
    """How many notifications/roots/list_changed arrived."""
    return len(ROOTS_CHANGED)


@server.tool()
async def sample_with_options(ctx: Context) -> dict[str, Any]:
    """Sampling with every option set; returns what the client answered."""
    result = await ctx.sample(
        "Say hi",
        max_tokens=7,
        system_prompt="Be brief.",
        temperature=0.25,
        stop_sequences=["STOP"],
        model_preferences={"hints": [{"name": "small"}], "speedPriority": 0.9},
        include_context="thisServer",
        metadata={"trace": "abc"},
    )
    content = result.content
    return {"model": result.model, "stopReason": result.stop_reason, "text": content.text}


@server.tool()
async def log_with_logger(ctx: Context) -> str:
    """Logs one warning with a logger name and structured data."""
    await ctx.warning({"code": 7, "detail": "structured"}, logger="interop.logger")
    return "logged"


@server.on_roots_changed()
async def on_roots_changed(session: Any) -> None:
    ROOTS_CHANGED.append(1)
