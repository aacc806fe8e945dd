"""docs/guide/resources.md: resources, templates, data, not-found, subscriptions."""

from typing import Any

import trio

from mcpactor import (
    Client,
    ClientHandlers,
    Context,
    RequestError,
    ResourceNotFound,
    Server,
)
from mcpactor.protocol import types as t

server = Server("resources-example", version="1.0.0")
notes = {"1": "buy milk", "2": "call Ada"}


@server.resource("notes://readme", mime_type="text/markdown")
async def readme() -> str:
    """What this server holds."""
    return "# Notes\nOne resource per note: notes://note/{id}"


@server.resource("notes://note/{note_id}", mime_type="text/plain")
async def note(note_id: str) -> str:
    """One note (a template: every URI that matches is served)."""
    if note_id not in notes:
        raise ResourceNotFound(f"notes://note/{note_id}")  # -32002 (-32602 from 2026-07-28)
    return notes[note_id]


@server.resource("notes://index")
def index() -> dict[str, Any]:
    """Data is one application/json text (a plain def runs in a worker thread)."""
    return {"count": len(notes), "ids": sorted(notes)}


@server.resource("notes://logo", mime_type="image/png")
async def logo() -> bytes:
    """bytes are a blob."""
    return b"\x89PNG\r\n\x1a\n"


@server.tool
async def edit(note_id: str, text: str, ctx: Context) -> str:
    """Change a note and tell the sessions subscribed to it."""
    notes[note_id] = text
    await ctx.notify_resource_updated(f"notes://note/{note_id}")
    return "saved"


async def demo(client: Client) -> None:
    assert [r.uri for r in await client.list_all_resources()] == [
        "notes://readme", "notes://index", "notes://logo"]
    templates = await client.list_all_resource_templates()
    assert templates[0].uri_template == "notes://note/{note_id}"

    text = (await client.read_resource("notes://note/1")).contents[0]
    assert text.text == "buy milk" and text.mime_type == "text/plain"  # type: ignore[union-attr]
    data = (await client.read_resource("notes://index")).contents[0]
    assert data.mime_type == "application/json"
    assert data.text == '{"count":2,"ids":["1","2"]}'  # type: ignore[union-attr]
    blob = (await client.read_resource("notes://logo")).contents[0]
    assert isinstance(blob, t.BlobResourceContents) and blob.blob  # base64 on the wire

    try:
        await client.read_resource("notes://note/99")
        raise AssertionError("expected an error")
    except RequestError as exc:
        assert exc.data == {"uri": "notes://note/99"}
        assert exc.code == (-32602 if client.stateless else -32002)

    # Updates about a resource while the block runs (subscriptions/listen in 2026-07-28,
    # resources/subscribe in a handshake session); they reach on_resource_updated.
    async with client.listen(resource_uris=["notes://note/2"]) as sub:
        assert (sub.acknowledged or {})["resourceSubscriptions"] == ["notes://note/2"]
        await client.call_tool("edit", {"note_id": "2", "text": "call Ada at 5"})


async def demo_updates(mode: str) -> list[str]:
    """The same, watching for resources/updated (used by the docs tests)."""
    from mcpactor.testing import open_client

    seen: list[str] = []
    arrived = trio.Event()

    def updated(params: t.ResourceUpdatedNotificationParams) -> None:
        seen.append(params.uri)
        arrived.set()

    handlers = ClientHandlers(on_resource_updated=updated)
    async with open_client(server, handlers=handlers, mode=mode) as client:
        async with client.listen(resource_uris=["notes://note/1"]):
            await client.call_tool("edit", {"note_id": "1", "text": "buy oat milk"})
            with trio.fail_after(5):
                await arrived.wait()
    return seen
