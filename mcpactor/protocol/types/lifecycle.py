"""The ``initialize`` handshake: versions, capabilities and peer identities.

A capability is declared by the presence of its member, even as an empty object, so every
sub-capability class writes ``{}`` when none of its flags is set.
"""

from typing import Any

import attrs

from .base import Implementation
from .tasks import ClientTasksCapability, ServerTasksCapability


@attrs.frozen(kw_only=True)
class RootsCapability:
    """Client ``capabilities.roots``: the client exposes filesystem roots."""

    list_changed: bool | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class SamplingCapability:
    """Client ``capabilities.sampling``: the client can run LLM sampling for the server."""

    # Each is declared by an empty object; 2025-11-25 added both.
    context: dict[str, Any] | None = None
    tools: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ElicitationCapability:
    """Client ``capabilities.elicitation``: the client can ask its user for input.

    An empty object means form mode only (2025-06-18 behaviour); 2025-11-25 peers name
    ``form`` and/or ``url`` explicitly.
    """

    form: dict[str, Any] | None = None
    url: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ClientCapabilities:
    """``ClientCapabilities``: what a client supports, sent in ``initialize``."""

    experimental: dict[str, dict[str, Any]] | None = None
    roots: RootsCapability | None = None
    sampling: SamplingCapability | None = None
    elicitation: ElicitationCapability | None = None
    #: 2025-11-25: which server requests the client runs as tasks.
    tasks: ClientTasksCapability | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class PromptsCapability:
    """Server ``capabilities.prompts``."""

    list_changed: bool | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ResourcesCapability:
    """Server ``capabilities.resources``; ``subscribe`` enables resources/subscribe."""

    subscribe: bool | None = None
    list_changed: bool | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ToolsCapability:
    """Server ``capabilities.tools``."""

    list_changed: bool | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ServerCapabilities:
    """``ServerCapabilities``: what a server offers, sent in the ``initialize`` result."""

    experimental: dict[str, dict[str, Any]] | None = None
    logging: dict[str, Any] | None = None
    # Added in 2025-03-26; 2024-11-05 servers answered completion/complete undeclared.
    completions: dict[str, Any] | None = None
    prompts: PromptsCapability | None = None
    resources: ResourcesCapability | None = None
    tools: ToolsCapability | None = None
    #: 2025-11-25: which client requests the server runs as tasks.
    tasks: ServerTasksCapability | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class InitializeRequestParams:
    """``initialize`` params: the client's protocol version, capabilities and ``clientInfo``."""

    protocol_version: str
    capabilities: ClientCapabilities
    client_info: Implementation
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class InitializeResult:
    """``initialize`` result: the chosen version, server capabilities, ``serverInfo``, instructions."""

    protocol_version: str
    capabilities: ServerCapabilities
    server_info: Implementation
    instructions: str | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)
