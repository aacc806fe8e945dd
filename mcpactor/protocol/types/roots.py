"""Roots: filesystem boundaries a client exposes (``roots/list``)."""

from typing import Any

import attrs


@attrs.frozen(kw_only=True)
class Root:
    """``Root``: a ``file://`` URI the server may work within, with an optional ``name``."""

    uri: str
    name: str | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ListRootsResult:
    """``roots/list`` result."""

    roots: list[Root]
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)
