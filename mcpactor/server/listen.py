"""``subscriptions/listen`` (2026-07-28): change notifications on a long-lived request.

A listen request stays open: its handler sends ``notifications/subscriptions/
acknowledged`` first (the filter the server agreed to), then each change notification
the client opted in to, all tagged ``io.modelcontextprotocol/subscriptionId`` (the
listen request's id) and sent as notifications of that request, so over HTTP they go
on its response stream and on stdio they are told apart by the tag. The
:class:`ListenHub` of a :class:`~mcpactor.server.app.Server` fans a change out to the
listeners whose filter takes it.

With the tasks extension (SEP-2663) a client may name task ids (``taskIds``): it then
hears ``notifications/tasks`` (the task as ``tasks/get`` shows it) on each change of
those tasks, starting with their state when the stream opens. That needs the extension
in the listen request's client capabilities (-32021 otherwise), and only the tasks the
requester may see are agreed to.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import trio

from mcpactor.protocol import types as t
from mcpactor.protocol.errors import InvalidParams, McpError, MissingClientCapability
from mcpactor.protocol.lifecycle import has_capability
from mcpactor.protocol.modern import META_SUBSCRIPTION_ID
from mcpactor.session.context import RequestContext
from mcpactor.tasks import wire_ext
from mcpactor.tasks.wire import requester_of

if TYPE_CHECKING:
    from mcpactor.server.app import Server
    from mcpactor.tasks.runtime import RunningTask
    from mcpactor.tasks.store import TaskRecord

log = logging.getLogger("mcpactor.server")

__all__ = ["ListenHub", "Listener", "listen", "task_observer"]

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
    #: The tasks whose ``notifications/tasks`` it takes (the tasks extension).
    task_ids: frozenset[str] = frozenset()

    def wants(self, method: str, uri: str | None) -> bool:
        """Whether this listener asked for ``method`` (for ``uri``, or the task id of a
        ``notifications/tasks``)."""
        if method == "notifications/resources/updated":
            return uri is not None and uri in self.uris
        if method == t.TASK_STATUS_NOTIFICATION:
            return uri is not None and uri in self.task_ids
        return method in self.methods


class ListenHub:
    """The server's open listen requests."""

    def __init__(self) -> None:
        self.listeners: list[Listener] = []

    def publish(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Queue a change for every listener that takes it; how many took it."""
        key = "taskId" if method == t.TASK_STATUS_NOTIFICATION else "uri"
        uri = params.get(key) if params else None
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


def task_observer(hub: ListenHub) -> Callable[[TaskRecord, RunningTask | None], None]:
    """The task runtime's observer that tells the hub's listeners of each change of a
    task (``notifications/tasks``, the task as ``tasks/get`` shows it)."""

    def changed(record: TaskRecord, running: RunningTask | None) -> None:
        if any(record.task_id in listener.task_ids for listener in hub.listeners):
            hub.publish(t.TASK_STATUS_NOTIFICATION, wire_ext.detailed(record, running))

    return changed


async def _agreed_tasks(rc: RequestContext, server: Server, filter_: Any) -> list[str] | None:
    """The task ids of the client's filter this server agrees to tell about: those it
    may see (None: it named none)."""
    ids = filter_.get("taskIds") if type(filter_) is dict else None
    if ids is None:
        return None
    if type(ids) is not list or not all(type(i) is str for i in ids):
        raise InvalidParams("Invalid params: taskIds must be a list of task ids",
                            data={"path": "params.notifications.taskIds"})
    if not t.declares_tasks_extension(rc.peer_capabilities):
        raise MissingClientCapability(t.TASKS_EXTENSION, "notifications of tasks (taskIds)",
                                      extension=True)
    if not t.declares_tasks_extension(rc.session.connection.capabilities):
        return []  # this server runs no tasks
    requester = requester_of(rc)
    agreed = []
    for task_id in dict.fromkeys(ids):
        try:
            await server.task_runtime.get(task_id, requester)
        except McpError:
            continue  # unknown, gone, or someone else's: not agreed to
        agreed.append(task_id)
    return agreed


async def listen(rc: RequestContext, server: Server) -> dict[str, Any]:
    """Serve one ``subscriptions/listen`` until the client ends it (cancellation: the
    stream closed over HTTP, ``notifications/cancelled`` on stdio) or the session ends."""
    raw = rc.raw_params or {}
    caps = rc.session.connection.capabilities
    agreed = _agreed(raw.get("notifications"), caps)
    task_ids = await _agreed_tasks(rc, server, raw.get("notifications"))
    if task_ids is not None:
        agreed["taskIds"] = task_ids
    tag = {META_SUBSCRIPTION_ID: rc.id}
    send, receive = trio.open_memory_channel[tuple[str, "dict[str, Any] | None"]](_BACKLOG)
    listener = Listener(
        methods=frozenset(_FLAGS[name][0] for name in agreed if name in _FLAGS),
        uris=frozenset(agreed.get("resourceSubscriptions", ())),
        mailbox=send,
        task_ids=frozenset(task_ids or ()),
    )
    hub = server.listen_hub
    hub.listeners.append(listener)
    # The stream ends with an answer (the graceful close) when the session winds down:
    # the server shutting down (Session.close(graceful=True)) or stdin closed.
    forget = rc.session.when_winding_down(send.close)
    try:
        await rc.notify("notifications/subscriptions/acknowledged",
                        {"_meta": tag, "notifications": agreed})
        # Each agreed task's state now: a change from before the stream opened is not
        # lost (a task that ended already is told at once).
        for task_id in task_ids or ():
            record = await server.task_runtime.store.get(task_id)
            if record is not None:
                running = server.task_runtime.running(task_id)
                await rc.notify(t.TASK_STATUS_NOTIFICATION,
                                {**wire_ext.detailed(record, running), "_meta": tag})
        async with receive:
            async for method, params in receive:
                await rc.notify(method, {**(params or {}), "_meta": tag})
    finally:
        forget()
        hub.listeners.remove(listener)
        send.close()
    return {"_meta": tag}

