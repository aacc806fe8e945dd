"""``subscriptions/listen`` (2026-07-28): change notifications on a long-lived request.

A listen request stays open: its handler sends ``notifications/subscriptions/
acknowledged`` first (the filter the server agreed to), then each change notification
the client opted in to, all tagged ``io.modelcontextprotocol/subscriptionId`` (the
listen request's id) and sent as notifications of that request, so over HTTP they go
on its response stream and on stdio they are told apart by the tag. The
:class:`ListenHub` of a :class:`~mcpactor.server.app.Server` fans a change out to the
listeners whose filter takes it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import attrs
import trio

from mcpactor.protocol.errors import InvalidParams
from mcpactor.protocol.lifecycle import has_capability
from mcpactor.protocol.modern import META_SUBSCRIPTION_ID
from mcpactor.session.context import RequestContext

if TYPE_CHECKING:
    from mcpactor.server.app import Server

log = logging.getLogger("mcpactor.server")

__all__ = ["ListenHub", "Listener", "listen"]

#: Filter field → (notification it admits, the server capability it needs).
_FLAGS: dict[str, tuple[str, tuple[str, ...]]] = {
    "toolsListChanged": ("notifications/tools/list_changed", ("tools", "listChanged")),
    "promptsListChanged": ("notifications/prompts/list_changed", ("prompts", "listChanged")),
    "resourcesListChanged": (
        "notifications/resources/list_changed", ("resources", "listChanged")
    ),
}
#: How many changes may wait for a slow listener before the oldest are dropped.
_BACKLOG = 256


@attrs.define(eq=False)
class Listener:
    """One open listen request: what it takes, and its mailbox."""

    methods: frozenset[str]
    uris: frozenset[str]
    mailbox: trio.MemorySendChannel[tuple[str, dict[str, Any] | None]]

    def wants(self, method: str, uri: str | None) -> bool:
        """Whether this listener asked for ``method`` (for ``uri``)."""
        if method == "notifications/resources/updated":
            return uri is not None and uri in self.uris
        return method in self.methods


class ListenHub:
    """The server's open listen requests."""

    def __init__(self) -> None:
        self.listeners: list[Listener] = []

    def publish(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Queue a change for every listener that takes it; how many took it."""
        uri = params.get("uri") if params else None
        told = 0
        for listener in list(self.listeners):
            if listener.wants(method, uri):
                try:
                    listener.mailbox.send_nowait((method, params))
                    told += 1
                except trio.WouldBlock:
                    log.warning("a subscriptions/listen client is not reading: %s dropped",
                                method)
                except trio.BrokenResourceError:
                    pass
        return told


def _agreed(filter_: Any, caps: dict[str, Any]) -> dict[str, Any]:
    """The part of the client's filter this server honours."""
    if filter_ is None:
        filter_ = {}
    if type(filter_) is not dict:
        raise InvalidParams("Invalid params: notifications must be an object",
                            data={"path": "params.notifications"})
    agreed: dict[str, Any] = {}
    for name, (_, cap) in _FLAGS.items():
        if filter_.get(name) is True and has_capability(caps, cap):
            agreed[name] = True
    uris = filter_.get("resourceSubscriptions")
    if uris is not None:
        if type(uris) is not list or not all(type(u) is str for u in uris):
            raise InvalidParams("Invalid params: resourceSubscriptions must be a list of URIs",
                                data={"path": "params.notifications.resourceSubscriptions"})
        if has_capability(caps, ("resources", "subscribe")):
            agreed["resourceSubscriptions"] = list(uris)
    return agreed


async def listen(rc: RequestContext, server: Server) -> dict[str, Any]:
    """Serve one ``subscriptions/listen`` until the client ends it (cancellation: the
    stream closed over HTTP, ``notifications/cancelled`` on stdio) or the session ends."""
    raw = rc.raw_params or {}
    caps = rc.session.connection.capabilities
    agreed = _agreed(raw.get("notifications"), caps)
    tag = {META_SUBSCRIPTION_ID: rc.id}
    send, receive = trio.open_memory_channel[tuple[str, "dict[str, Any] | None"]](_BACKLOG)
    listener = Listener(
        methods=frozenset(_FLAGS[name][0] for name in agreed if name in _FLAGS),
        uris=frozenset(agreed.get("resourceSubscriptions", ())),
        mailbox=send,
    )
    hub = server.listen_hub
    hub.listeners.append(listener)
    # The stream ends with an answer (the graceful close) when the session winds down:
    # the server shutting down (Session.close(graceful=True)) or stdin closed.
    forget = rc.session.when_winding_down(send.close)
    try:
        await rc.notify("notifications/subscriptions/acknowledged",
                        {"_meta": tag, "notifications": agreed})
        async with receive:
            async for method, params in receive:
                await rc.notify(method, {**(params or {}), "_meta": tag})
    finally:
        forget()
        hub.listeners.remove(listener)
        send.close()
    return {"_meta": tag}

