"""Resources: listing, templates, reading, subscriptions, and SEP-2093 metadata."""

from typing import Any

import attrs

from .base import Annotations, Cursor, Icon
from .content import ResourceContents


@attrs.frozen(kw_only=True)
class Resource:
    """``Resource``: a readable item the server knows by ``uri``."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    # SEP-2093: true for directory-like resources whose read may return child URIs.
    is_collection: bool | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ResourceTemplate:
    """``ResourceTemplate``: a family of resources described by an RFC 6570 ``uriTemplate``."""

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ListResourcesResult:
    """``resources/list`` result: one page of resources and the cursor of the next."""

    resources: list[Resource]
    next_cursor: Cursor | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ListResourceTemplatesResult:
    """``resources/templates/list`` result: one page of templates and the next cursor."""

    resource_templates: list[ResourceTemplate]
    next_cursor: Cursor | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ReadResourceRequestParams:
    """``resources/read`` params: the ``uri`` to read."""

    uri: str
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ReadResourceResult:
    """``resources/read`` result: the contents (text or blob) of the resource."""

    contents: list[ResourceContents]
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class SubscribeRequestParams:
    """``resources/subscribe`` params: the ``uri`` to watch."""

    uri: str
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class UnsubscribeRequestParams:
    """``resources/unsubscribe`` params: the ``uri`` to stop watching."""

    uri: str
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ResourceUpdatedNotificationParams:
    """``notifications/resources/updated`` params: the ``uri`` that changed."""

    uri: str
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ReadResourceMetadataRequestParams:
    """``resources/metadata`` params (SEP-2093 extension): the ``uri`` to describe."""

    uri: str
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ReadResourceMetadataResult:
    """``resources/metadata`` result (SEP-2093 extension): the ``resource`` without content."""

    resource: Resource
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)
