"""The MCP method table: for each method, its params and result classes, who may send it,
whether it is a request or a notification, the capability it needs, and its first version.

The core uses it to parse params (``from_wire(params, spec.params_cls)``), to refuse a
method the receiving side did not declare (``capability``), and to refuse a method the
negotiated protocol version does not have (``since``, ordered by
:func:`mcpactor.protocol.versions.at_least`).
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from . import types as t
from . import versions
from .convert import to_wire

Direction = Literal["client_to_server", "server_to_client", "both"]
Kind = Literal["request", "notification"]

__all__ = [
    "CAPABILITY_SINCE",
    "CLIENT_CAPABILITIES",
    "EXTENSION_METHODS",
    "METHODS",
    "MODERN_METHODS",
    "Direction",
    "Kind",
    "MethodSpec",
    "capability_since",
    "has_capability",
    "modern_spec",
    "notification_spec",
    "request_spec",
]


@attrs.frozen(kw_only=True)
class MethodSpec:
    """How one JSON-RPC method of MCP behaves.

    ``params_cls`` is a class or a union alias accepted by ``from_wire``; methods with no
    params of their own use ``RequestParams``/``NotificationParams`` (only ``_meta``), so
    parse ``{}`` when a message omits ``params``. ``result_cls`` is ``None`` for notifications.
    ``capability`` is a path of wire (camelCase) names into the capabilities of the side
    that provides the feature (see :attr:`capability_owner`): ``("resources", "subscribe")``
    means ``capabilities.resources.subscribe`` must be declared; ``None`` means always
    allowed. Check it with :func:`has_capability`.
    """

    method: str
    params_cls: Any
    result_cls: Any
    direction: Direction
    kind: Kind
    capability: tuple[str, ...] | None = None
    since: str = "2024-11-05"

    def allowed_in(self, protocol_version: str) -> bool:
        """Whether this method exists in ``protocol_version``."""
        return versions.at_least(protocol_version, self.since)

    @property
    def capability_owner(self) -> Literal["server", "client"] | None:
        """Whose capabilities ``capability`` is looked up in (``None`` if ungated)."""
        if self.capability is None:
            return None
        return "client" if self.capability[0] in CLIENT_CAPABILITIES else "server"


def _request(
    method: str,
    params_cls: Any,
    result_cls: Any,
    direction: Direction,
    capability: tuple[str, ...] | None = None,
    since: str = "2024-11-05",
) -> MethodSpec:
    return MethodSpec(
        method=method,
        params_cls=params_cls,
        result_cls=result_cls,
        direction=direction,
        kind="request",
        capability=capability,
        since=since,
    )


def _notification(
    method: str,
    params_cls: Any,
    direction: Direction,
    capability: tuple[str, ...] | None = None,
    since: str = "2024-11-05",
) -> MethodSpec:
    return MethodSpec(
        method=method,
        params_cls=params_cls,
        result_cls=None,
        direction=direction,
        kind="notification",
        capability=capability,
        since=since,
    )


_SPECS = [
    # lifecycle and utilities
    _request("initialize", t.InitializeRequestParams, t.InitializeResult, "client_to_server"),
    _request("ping", t.RequestParams, t.EmptyResult, "both"),
    _notification("notifications/initialized", t.NotificationParams, "client_to_server"),
    _notification("notifications/cancelled", t.CancelledNotificationParams, "both"),
    _notification("notifications/progress", t.ProgressNotificationParams, "both"),
    # tools
    _request(
        "tools/list", t.PaginatedRequestParams, t.ListToolsResult, "client_to_server", ("tools",)
    ),
    _request(
        "tools/call", t.CallToolRequestParams, t.CallToolResult, "client_to_server", ("tools",)
    ),
    _notification(
        "notifications/tools/list_changed",
        t.NotificationParams,
        "server_to_client",
        ("tools", "listChanged"),
    ),
    # resources
    _request(
        "resources/list",
        t.PaginatedRequestParams,
        t.ListResourcesResult,
        "client_to_server",
        ("resources",),
    ),
    _request(
        "resources/templates/list",
        t.PaginatedRequestParams,
        t.ListResourceTemplatesResult,
        "client_to_server",
        ("resources",),
    ),
    _request(
        "resources/read",
        t.ReadResourceRequestParams,
        t.ReadResourceResult,
        "client_to_server",
        ("resources",),
    ),
    _request(
        "resources/subscribe",
        t.SubscribeRequestParams,
        t.EmptyResult,
        "client_to_server",
        ("resources", "subscribe"),
    ),
    _request(
        "resources/unsubscribe",
        t.UnsubscribeRequestParams,
        t.EmptyResult,
        "client_to_server",
        ("resources", "subscribe"),
    ),
    # SEP-2093 (draft extension, not in any released revision): gated like the 2025-11-25
    # features so older sessions never see it.
    _request(
        "resources/metadata",
        t.ReadResourceMetadataRequestParams,
        t.ReadResourceMetadataResult,
        "client_to_server",
        ("resources",),
        since="2025-11-25",
    ),
    _notification(
        "notifications/resources/updated",
        t.ResourceUpdatedNotificationParams,
        "server_to_client",
        ("resources", "subscribe"),
    ),
    # 2026-07-28: the first message of a subscriptions/listen stream (the filter the
    # server agreed to; subscriptions/listen itself is a modern-only method).
    _notification(
        "notifications/subscriptions/acknowledged",
        t.NotificationParams,
        "server_to_client",
        since="2026-07-28",
    ),
    _notification(
        "notifications/resources/list_changed",
        t.NotificationParams,
        "server_to_client",
        ("resources", "listChanged"),
    ),
    # prompts
    _request(
        "prompts/list",
        t.PaginatedRequestParams,
        t.ListPromptsResult,
        "client_to_server",
        ("prompts",),
    ),
    _request(
        "prompts/get",
        t.GetPromptRequestParams,
        t.GetPromptResult,
        "client_to_server",
        ("prompts",),
    ),
    _notification(
        "notifications/prompts/list_changed",
        t.NotificationParams,
        "server_to_client",
        ("prompts", "listChanged"),
    ),
    # completion: the method exists since 2024-11-05, but the ``completions`` capability
    # that gates it only since 2025-03-26 (see ``capability_since``).
    _request(
        "completion/complete",
        t.CompleteRequestParams,
        t.CompleteResult,
        "client_to_server",
        ("completions",),
    ),
    # logging
    _request(
        "logging/setLevel",
        t.SetLevelRequestParams,
        t.EmptyResult,
        "client_to_server",
        ("logging",),
    ),
    _notification(
        "notifications/message",
        t.LoggingMessageNotificationParams,
        "server_to_client",
        ("logging",),
    ),
    # client features
    _request(
        "sampling/createMessage",
        t.CreateMessageRequestParams,
        t.CreateMessageResult,
        "server_to_client",
        ("sampling",),
    ),
    _request(
        "elicitation/create",
        t.ElicitRequestParams,
        t.ElicitResult,
        "server_to_client",
        ("elicitation",),
        since="2025-06-18",
    ),
    _notification(
        "notifications/elicitation/complete",
        t.ElicitationCompleteNotificationParams,
        "server_to_client",
        ("elicitation", "url"),
        since="2025-11-25",
    ),
    _request("roots/list", t.RequestParams, t.ListRootsResult, "server_to_client", ("roots",)),
    _notification(
        "notifications/roots/list_changed",
        t.NotificationParams,
        "client_to_server",
        ("roots", "listChanged"),
    ),
    # tasks (2025-11-25): either side may be the receiver, so each is gated by the
    # receiving side's own ``tasks`` capability. ``tasks/result`` answers with the
    # result of the request the task wraps: the requestor names its class.
    _request("tasks/get", t.TaskIdParams, t.Task, "both", ("tasks",), since="2025-11-25"),
    _request("tasks/result", t.TaskIdParams, None, "both", ("tasks",), since="2025-11-25"),
    _request(
        "tasks/list",
        t.PaginatedRequestParams,
        t.ListTasksResult,
        "both",
        ("tasks", "list"),
        since="2025-11-25",
    ),
    _request(
        "tasks/cancel", t.TaskIdParams, t.Task, "both", ("tasks", "cancel"), since="2025-11-25"
    ),
    _notification("notifications/tasks/status", t.Task, "both", ("tasks",), since="2025-11-25"),
    # The skills extension (SEP-2640): offered by a server that declares it under
    # capabilities.extensions; directory reads only with its directoryRead flag.
    _request(
        "skills/list",
        t.ListSkillsRequestParams,
        t.ListSkillsResult,
        "client_to_server",
        ("extensions", t.SKILLS_EXTENSION),
    ),
    _request(
        "skills/get",
        t.GetSkillRequestParams,
        t.GetSkillResult,
        "client_to_server",
        ("extensions", t.SKILLS_EXTENSION),
    ),
    _request(
        "resources/directory/read",
        t.ReadDirectoryRequestParams,
        t.ReadDirectoryResult,
        "client_to_server",
        ("extensions", t.SKILLS_EXTENSION, "directoryRead"),
    ),
]

#: Every method of 2025-11-25 plus the extensions' (``resources/metadata``, skills), by name.
METHODS: dict[str, MethodSpec] = {spec.method: spec for spec in _SPECS}

#: The methods that mean something else in the stateless revision (2026-07-28): the
#: tasks extension's (SEP-2663). They are offered by a server that declares
#: ``capabilities.extensions["io.modelcontextprotocol/tasks"]``; ``tasks/update`` and
#: ``tasks/cancel`` answer with an empty acknowledgement. ``tasks/result`` and
#: ``tasks/list`` do not exist there (:data:`mcpactor.protocol.modern.REMOVED_REQUESTS`).
_EXTENSION_TASKS = ("extensions", t.TASKS_EXTENSION)
MODERN_METHODS: dict[str, MethodSpec] = {spec.method: spec for spec in [
    _request("tasks/get", t.TaskIdParams, t.DetailedTask, "client_to_server", _EXTENSION_TASKS,
             since="2026-07-28"),
    _request("tasks/update", t.UpdateTaskParams, t.EmptyResult, "client_to_server",
             _EXTENSION_TASKS, since="2026-07-28"),
    _request("tasks/cancel", t.TaskIdParams, t.EmptyResult, "client_to_server",
             _EXTENSION_TASKS, since="2026-07-28"),
    _notification(t.TASK_STATUS_NOTIFICATION, t.DetailedTask, "server_to_client",
                  _EXTENSION_TASKS, since="2026-07-28"),
]}


def modern_spec(method: str) -> MethodSpec | None:
    """The spec of ``method`` in the stateless revision: the tasks extension's where it
    defines the method, else the table's."""
    spec = MODERN_METHODS.get(method)
    return spec if spec is not None else METHODS.get(method)


#: Methods that are not part of a released protocol revision.
EXTENSION_METHODS: frozenset[str] = frozenset(
    {"resources/metadata", "skills/list", "skills/get", "resources/directory/read"})

#: First version in which a capability can be declared. A capability gate in
#: ``MethodSpec.capability`` only applies from this version on; before it the method
#: was allowed without the declaration (2024-11-05 servers answered completion/complete
#: without a ``completions`` capability).
CAPABILITY_SINCE: dict[tuple[str, ...], str] = {
    ("completions",): "2025-03-26",
    ("elicitation",): "2025-06-18",
    ("elicitation", "url"): "2025-11-25",
    ("tasks",): "2025-11-25",
}


#: Top-level capabilities a client declares; every other gate is a server capability.
CLIENT_CAPABILITIES: frozenset[str] = frozenset({"sampling", "elicitation", "roots"})


def has_capability(capabilities: Any, path: tuple[str, ...]) -> bool:
    """Whether ``capabilities`` (an attrs capabilities object or its wire dict) declares ``path``.

    An object member is declared by being present, even as ``{}``; a boolean flag such as
    ``subscribe`` or ``listChanged`` must be ``true``.
    """
    node = capabilities if isinstance(capabilities, dict) else to_wire(capabilities)
    for key in path:
        if not isinstance(node, dict):
            return False
        node = node.get(key)
        if node is None or node is False:
            return False
    return True


def capability_since(capability: tuple[str, ...]) -> str:
    """The first protocol version that has ``capability`` (``2024-11-05`` unless listed)."""
    return CAPABILITY_SINCE.get(capability, "2024-11-05")


def request_spec(method: str) -> MethodSpec | None:
    """The spec of request ``method``, or ``None`` if it is unknown or a notification."""
    spec = METHODS.get(method)
    return spec if spec is not None and spec.kind == "request" else None


def notification_spec(method: str) -> MethodSpec | None:
    """The spec of notification ``method``, or ``None`` if it is unknown or a request."""
    spec = METHODS.get(method)
    return spec if spec is not None and spec.kind == "notification" else None
