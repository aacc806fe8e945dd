"""The skills extension (SEP-2640, ``io.modelcontextprotocol/skills``): Agent Skills a
server offers, listed (``skills/list``), fetched one by one (``skills/get``) and browsed
as directories (``resources/directory/read``); their files are ``skill://`` resources.

A skill entry stays a plain dict (``uri``, ``frontmatter``: the skill's YAML front
matter as JSON, open-ended; ``resources``: ``[{uri, digest, size}]`` or
``"dynamic"``). Not part of a dated revision: the methods are gated by the server's
``capabilities.extensions`` (see ``protocol/methods.py``).
"""

from typing import Any

import attrs

from .base import Cursor

#: The extension's identifier (its key under ``capabilities.extensions``).
SKILLS_EXTENSION = "io.modelcontextprotocol/skills"


@attrs.frozen(kw_only=True)
class ListSkillsRequestParams:
    """``skills/list`` params: an optional ``cursor``."""

    cursor: Cursor | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ListSkillsResult:
    """``skills/list`` result: a page of skill entries, and (2026-07-28 on) how long a
    client may keep it (``ttlMs``) and for whom (``cacheScope``)."""

    skills: list[dict[str, Any]]
    next_cursor: Cursor | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class GetSkillRequestParams:
    """``skills/get`` params: the skill's ``uri`` (its ``SKILL.md``)."""

    uri: str
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class GetSkillResult:
    """``skills/get`` result: one skill entry (and the cache attributes)."""

    skill: dict[str, Any]
    ttl_ms: int | None = None
    cache_scope: str | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ReadDirectoryRequestParams:
    """``resources/directory/read`` params: a directory's ``uri`` and a ``cursor``."""

    uri: str
    cursor: Cursor | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ReadDirectoryResult:
    """``resources/directory/read`` result: the directory's direct children
    (subdirectories with ``mimeType: "inode/directory"``)."""

    resources: list[dict[str, Any]]
    next_cursor: Cursor | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)
