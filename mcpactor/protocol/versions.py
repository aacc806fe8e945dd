"""Protocol revisions: which we speak, how a version is negotiated, and what each allows."""

from __future__ import annotations

V2024_11_05 = "2024-11-05"
V2025_03_26 = "2025-03-26"
V2025_06_18 = "2025-06-18"
V2025_11_25 = "2025-11-25"
V2026_07_28 = "2026-07-28"

#: The handshake ("legacy") revisions, oldest first: a session opens with ``initialize``
#: and negotiates one of these. Revisions are an enumerated set; ordering questions go
#: through these tuples rather than string comparison so an unknown string never sorts
#: as "newer".
SUPPORTED_VERSIONS: tuple[str, ...] = (V2024_11_05, V2025_03_26, V2025_06_18, V2025_11_25)
LATEST_VERSION = SUPPORTED_VERSIONS[-1]
#: The stateless ("modern") revisions: no handshake, every request carries its version
#: in ``_meta`` (2026-07-28, SEP-2575).
MODERN_VERSIONS: tuple[str, ...] = (V2026_07_28,)
LATEST_MODERN_VERSION = MODERN_VERSIONS[-1]
#: Every revision we speak, oldest first.
ALL_VERSIONS: tuple[str, ...] = SUPPORTED_VERSIONS + MODERN_VERSIONS
#: What a Streamable HTTP server assumes when a request carries no MCP-Protocol-Version.
HTTP_DEFAULT_VERSION = V2025_03_26

_RANK = {v: i for i, v in enumerate(ALL_VERSIONS)}


def is_supported(version: str) -> bool:
    """Whether ``version`` is a handshake revision we speak (``initialize`` can pick it)."""
    return version in SUPPORTED_VERSIONS


def is_modern(version: str | None) -> bool:
    """Whether ``version`` is a stateless revision (per-request ``_meta``, no handshake)."""
    return version in MODERN_VERSIONS


def at_least(version: str, minimum: str) -> bool:
    """Whether ``version`` is ``minimum`` or newer; unknown versions are never newer."""
    rank = _RANK.get(version)
    return rank is not None and rank >= _RANK[minimum]


def negotiate(requested: str, supported: tuple[str, ...] = SUPPORTED_VERSIONS) -> str:
    """The server's answer to a client's requested version.

    The spec: answer with the same version if supported, otherwise with another version
    the server supports, which should be its latest.
    """
    if requested in supported:
        return requested
    return supported[-1]


def allows_batches(version: str | None) -> bool:
    """Only 2025-03-26 has JSON-RPC batching; 2025-06-18 removed it again."""
    return version == V2025_03_26


def has_completions_capability(version: str) -> bool:
    """2024-11-05 had completion/complete without a capability to declare it."""
    return at_least(version, V2025_03_26)


def json_schema_dialect(version: str) -> str | None:
    """The dialect implied for schemas without ``$schema`` (2025-11-25: 2020-12)."""
    if at_least(version, V2025_11_25):
        return "https://json-schema.org/draft/2020-12/schema"
    return None


#: Revisions whose resources page asks for -32002 ("Resource not found") when a
#: ``resources/read`` names nothing. SEP-2164 (2026-07-28) moved to -32602, as SEP-2093
#: had; a revision not listed here is that one or newer.
_RESOURCE_NOT_FOUND_32002 = frozenset({V2024_11_05, V2025_03_26, V2025_06_18, V2025_11_25})


def resource_not_found_code(version: str | None, method: str = "resources/read") -> int:
    """The JSON-RPC code for a missing resource on a session speaking ``version``.

    ``resources/read`` follows the revision's resources page: -32002 up to 2025-11-25,
    -32602 (invalid params, SEP-2164) from 2026-07-28. ``resources/metadata`` exists
    only through SEP-2093, which specifies -32602 on every revision.
    """
    if method == "resources/read" and version in _RESOURCE_NOT_FOUND_32002:
        return -32002
    return -32602


def has_tasks(version: str | None) -> bool:
    """The tasks of 2025-11-25 (task-augmented requests, ``tasks/*``): that revision's
    handshake sessions only. 2026-07-28 has the tasks extension (SEP-2663) instead,
    another wire form (:func:`has_tasks_extension`)."""
    return version is not None and not is_modern(version) and at_least(version, V2025_11_25)


def has_tasks_extension(version: str | None) -> bool:
    """The tasks extension (SEP-2663, ``io.modelcontextprotocol/tasks``): defined for
    the stateless revision only (the SEP: a 2025-11-25 peer declaring it has no tasks
    through it)."""
    return is_modern(version)


#: The extension key of the 2026-07-28 tasks extension (also in protocol.types).
_TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


def capabilities_for(version: str, capabilities: dict[str, object]) -> dict[str, object]:
    """Our declared capabilities as a peer on ``version`` understands them: a capability
    that revision does not define (``completions`` before 2025-03-26, the ``tasks`` of
    2025-11-25 in any other revision, the tasks extension outside 2026-07-28) is left
    out."""
    drop = set()
    if not has_completions_capability(version):
        drop.add("completions")
    if not has_tasks(version):
        drop.add("tasks")
    extensions = capabilities.get("extensions")
    strip_extension = (not has_tasks_extension(version) and isinstance(extensions, dict)
                       and _TASKS_EXTENSION in extensions)
    if not drop.intersection(capabilities) and not strip_extension:
        return capabilities
    out = {k: v for k, v in capabilities.items() if k not in drop}
    if strip_extension:
        assert isinstance(extensions, dict)
        rest = {k: v for k, v in extensions.items() if k != _TASKS_EXTENSION}
        if rest:
            out["extensions"] = rest
        else:
            del out["extensions"]
    return out
