"""``subscriptions/listen`` (2026-07-28) on the client: :class:`Subscription`.

A listen request stays open for as long as the client wants the server's change
notifications. The server first acknowledges it (``notifications/subscriptions/
acknowledged``: the part of the filter it agreed to), then sends each notification the
filter admits, every one tagged ``io.modelcontextprotocol/subscriptionId`` (the listen
request's id): that tag is how a client with several subscriptions on one stdio pipe
tells them apart. The client ends a subscription by cancelling the request (closing its
stream over HTTP, ``notifications/cancelled`` on stdio); the server ends it by answering
the request (a graceful close) or by cancelling it.

:meth:`mcpactor.client.Client.listen` opens one; this module holds the subscription
itself and the routing of tagged notifications to it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Callable, Iterable
from typing import TYPE_CHECKING, Any

import attrs
import trio

from mcpactor.protocol.errors import ConnectionClosed, McpError, RequestCancelled
from mcpactor.protocol.jsonrpc import ID_TYPES, RequestId
from mcpactor.protocol.modern import META_SUBSCRIPTION_ID

if TYPE_CHECKING:
    from mcpactor.session.session import Session

log = logging.getLogger("mcpactor.client")

__all__ = ["ListenNotification", "Subscription", "listen_filter", "subscription_of"]

ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
_LIST_FLAGS = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
}


@attrs.frozen(kw_only=True)
class ListenNotification:
    """One notification a subscription delivered: its method and its params as sent
    (``_meta`` included)."""

    method: str
    params: dict[str, Any]

    @property
    def uri(self) -> str | None:
        """The resource of a ``notifications/resources/updated``, else None."""
        uri = self.params.get("uri")
        return uri if isinstance(uri, str) else None


def listen_filter(
    *, tools: bool = False, prompts: bool = False, resources: bool = False,
    resource_uris: Iterable[str] = (), task_ids: Iterable[str] = (),
) -> dict[str, Any]:
    """The ``notifications`` filter of a listen request (wire form)."""
    out: dict[str, Any] = {}
    if tools:
        out["toolsListChanged"] = True
    if prompts:
        out["promptsListChanged"] = True
    if resources:
        out["resourcesListChanged"] = True
    uris = list(resource_uris)
    if uris:
        out["resourceSubscriptions"] = uris
    ids = list(task_ids)
    if ids:
        out["taskIds"] = ids  # the tasks extension (SEP-2663)
    return out


def subscription_of(params: Any) -> RequestId | None:
    """The subscription id a notification's params are tagged with, or None."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    sid = meta.get(META_SUBSCRIPTION_ID) if isinstance(meta, dict) else None
    return sid if type(sid) in ID_TYPES else None


class Subscription:
    """An open ``subscriptions/listen``: iterate it for its notifications.

    ``async for note in sub`` yields each :class:`ListenNotification` in the order the
    server sent them, and stops when the server ends the subscription (``ended`` then
    says how: ``"complete"`` for its graceful answer, ``"cancelled"`` when it cancelled
    the request). A session that closes under it raises :class:`ConnectionClosed` from
    the iteration: an abrupt end, after which a client may listen again.
    """

    def __init__(self, session: Session, filter_: dict[str, Any], backlog: int) -> None:
        self._session = session
        #: The filter asked for (wire form).
        self.requested = filter_
        #: The listen request's id, which tags everything on this subscription.
        self.id: RequestId | None = None
        #: The filter the server agreed to (set once acknowledged).
        self.acknowledged: dict[str, Any] | None = None
        #: ``"complete"`` or ``"cancelled"`` once the server ended it, else None.
        self.ended: str | None = None
        #: The final result of a graceful end.
        self.result: dict[str, Any] | None = None
        self._acked = trio.Event()
        self._error: McpError | None = None
        self._send, self._receive = trio.open_memory_channel[ListenNotification](
            backlog if backlog > 0 else math.inf)

    # -- what the client's notification routing calls -----------------------------------

    def deliver(self, method: str, params: dict[str, Any]) -> None:
        """Take one tagged notification (the acknowledgement, or a change)."""
        if method == ACKNOWLEDGED:
            agreed = params.get("notifications")
            self.acknowledged = agreed if isinstance(agreed, dict) else {}
            self._acked.set()
            return
        try:
            self._send.send_nowait(ListenNotification(method=method, params=params))
        except trio.WouldBlock:
            # A full backlog: the reader never waits on one slow consumer.
            log.warning(
                "subscription %r: the backlog is full, %s dropped", self.id, method)
        except trio.ClosedResourceError:
            pass

    def admits(self, method: str, params: dict[str, Any]) -> bool:
        """(A handshake-era listen, whose notifications come untagged) whether its
        filter takes ``method``."""
        agreed = self.acknowledged or {}
        if method == "notifications/resources/updated":
            return params.get("uri") in (agreed.get("resourceSubscriptions") or ())
        if method == "notifications/tasks/status":
            return params.get("taskId") in (agreed.get("taskIds") or ())
        flag = _LIST_FLAGS.get(method)
        return flag is not None and bool(agreed.get(flag))

    def close(self) -> None:
        """End the iteration (a handshake-era listen whose block was left)."""
        if self.ended is None:
            self.ended = "complete"
        self._send.close()

    # -- running the request ------------------------------------------------------------

    async def run(self, register: Callable[[RequestId], None]) -> None:
        """Send the listen request and wait for its end (in the subscription's task)."""
        def on_id(rid: RequestId) -> None:
            self.id = rid
            register(rid)

        try:
            result = await self._session.request(
                "subscriptions/listen", {"notifications": self.requested}, timeout=None,
                on_id=on_id)
            self.ended = "complete"
            self.result = result if isinstance(result, dict) else {}
        except RequestCancelled:
            self.ended = "cancelled"
        except McpError as exc:
            # Kept for whoever waits on the subscription: the acknowledgement wait or
            # the iteration raises it, not this task.
            self._error = exc
        finally:
            self._acked.set()
            self._send.close()

    async def wait_acknowledged(self, timeout: float | None) -> None:
        """Until the server acknowledged (raises what ended the request first)."""
        with trio.fail_after(timeout if timeout is not None else math.inf):
            await self._acked.wait()
        if self.acknowledged is None:
            if self._error is not None:
                raise self._error
            raise ConnectionClosed(
                "the server ended subscriptions/listen before acknowledging it")

    # -- iteration ---------------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[ListenNotification]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[ListenNotification]:
        async for note in self._receive:
            yield note
        if self.ended is None and self._error is not None:
            raise self._error

    async def next(self, timeout: float | None = None) -> ListenNotification:
        """The next notification (StopAsyncIteration once the subscription ended;
        ``trio.TooSlowError`` after ``timeout`` seconds)."""
        with trio.fail_after(timeout if timeout is not None else math.inf):
            try:
                return await self._receive.receive()
            except trio.EndOfChannel:
                if self.ended is None and self._error is not None:
                    raise self._error from None
                raise StopAsyncIteration from None
