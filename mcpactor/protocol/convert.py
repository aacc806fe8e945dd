"""The one converter between MCP schema objects and JSON-ready Python data.

``to_wire`` turns attrs instances (or lists/dicts of them) into dicts, lists and scalars
that orjson can encode; ``from_wire`` validates decoded JSON into a class and raises
:class:`~mcpactor.protocol.errors.InvalidParams` naming the failing path.

The conventions of :mod:`mcpactor.protocol.types` are applied to every attrs class by hook
factories, so no class lists its wire names:

* snake_case attribute names become camelCase keys; ``meta`` becomes ``_meta``;
* attributes whose default is ``None`` are left out while they are ``None``;
* an ``extra`` attribute collects unknown keys on the way in and is merged back on the way out;
* scalars are checked, never coerced: ``"5"`` is not an int and ``5`` is not a string;
* values typed ``dict[str, Any]`` (JSON Schemas, tool arguments, structured content) are
  opaque JSON, passed through by reference in both directions.

Hooks are generated per class on first use and cached by cattrs.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

import attrs
from cattrs.errors import (
    ClassValidationError,
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.preconf.orjson import make_converter

from .errors import InvalidParams
from .jsonrpc import WideInt
from .types.completion import CompletionReference, PromptReference, ResourceTemplateReference
from .types.content import (
    AudioContent,
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceContents,
    ResourceLink,
    SamplingContent,
    TextContent,
    TextResourceContents,
    ToolResultContent,
    ToolUseContent,
)
from .types.elicitation import ElicitRequestFormParams, ElicitRequestParams, ElicitRequestURLParams

__all__ = ["converter", "from_wire", "to_wire", "wire_name"]

T = TypeVar("T")

#: The module's single cattrs converter. Register hooks here, never on a new converter.
converter = make_converter(detailed_validation=True)

# Where a class hook hands unknown keys to the generated function; never a wire key, because
# the hook rebuilds the mapping from known keys before adding it.
_EXTRA_KEY = "\x00extra"
_NoneType = type(None)


def wire_name(attribute: str) -> str:
    """The JSON member name of an attribute: ``meta`` → ``_meta``, ``mime_type`` → ``mimeType``."""
    if attribute == "meta":
        return "_meta"
    head, *rest = attribute.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _kind(value: Any) -> str:
    """The JSON name of a value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


# --- scalars: exact JSON types only ----------------------------------------------------


def _structure_str(value: Any, _: Any) -> str:
    if type(value) is str:
        return value
    raise TypeError(f"expected a string, got {_kind(value)}")


def _structure_int(value: Any, _: Any) -> int:
    # ``type(...) is int`` also rejects bool, which Python counts as an int.
    if type(value) is int:
        return value
    raise TypeError(f"expected an integer, got {_kind(value)}")


def _structure_float(value: Any, _: Any) -> float:
    # JSON has one number type: 3 is a valid float. Kept as int so it re-encodes as "3".
    if type(value) is float or type(value) is int:
        return value
    raise TypeError(f"expected a number, got {_kind(value)}")


def _structure_bool(value: Any, _: Any) -> bool:
    if type(value) is bool:
        return value
    raise TypeError(f"expected a boolean, got {_kind(value)}")


converter.register_structure_hook(str, _structure_str)
converter.register_structure_hook(int, _structure_int)
converter.register_structure_hook(float, _structure_float)
converter.register_structure_hook(bool, _structure_bool)

_SCALARS: dict[Any, tuple[type, ...]] = {
    str: (str,),
    # In a union, an int is an id or a progress token (``str | int``): one too long to
    # convert stays its digits (jsonrpc.WideInt).
    int: (int, WideInt),
    float: (float, int),
    bool: (bool,),
    _NoneType: (_NoneType,),
}


_JSON_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean", _NoneType: "null"}


def _is_union(t: Any) -> bool:
    return typing.get_origin(t) in (typing.Union, types.UnionType)


def _is_scalar_union(t: Any) -> bool:
    return _is_union(t) and all(arg in _SCALARS for arg in typing.get_args(t))


def _scalar_union_hook(t: Any) -> Callable[[Any, Any], Any]:
    # e.g. ``str | int`` (progress tokens, request ids) or ``str | None``.
    accepted = frozenset(cls for arg in typing.get_args(t) for cls in _SCALARS[arg])
    names = " or ".join(_JSON_NAMES[arg] for arg in typing.get_args(t))

    def hook(value: Any, _: Any) -> Any:
        if type(value) in accepted:
            return value
        raise TypeError(f"expected {names}, got {_kind(value)}")

    return hook


converter.register_structure_hook_factory(_is_scalar_union, _scalar_union_hook)


# --- containers: exact JSON containers, opaque JSON passed through -----------------------


def _at(exc: Exception, index: int | str, item_type: Any) -> Exception:
    """Tag ``exc`` with the list index or object key it happened at, the way cattrs does."""
    note = IterableValidationNote(f"Structuring item @ {index!r}", index, item_type)
    exc.__notes__ = [*getattr(exc, "__notes__", []), note]
    return exc


def _is_list(t: Any) -> bool:
    return t is list or typing.get_origin(t) is list


def _list_hook(t: Any) -> Callable[[Any, Any], list[Any]]:
    args = typing.get_args(t)
    item_type = args[0] if args else Any
    if item_type is Any:

        def opaque(value: Any, _: Any) -> list[Any]:
            if type(value) is list:
                return value
            raise TypeError(f"expected an array, got {_kind(value)}")

        return opaque

    item_hook = converter.get_structure_hook(item_type)

    def hook(value: Any, _: Any) -> list[Any]:
        if type(value) is not list:
            # Without this check a string would iterate into a list of characters.
            raise TypeError(f"expected an array, got {_kind(value)}")
        out = []
        errors: list[Exception] = []
        for index, item in enumerate(value):
            try:
                out.append(item_hook(item, item_type))
            except Exception as exc:
                errors.append(_at(exc, index, item_type))
        if errors:
            raise IterableValidationError(f"While structuring {t!r}", errors, t)
        return out

    return hook


def _is_dict(t: Any) -> bool:
    return t is dict or typing.get_origin(t) in (dict, Mapping)


def _dict_hook(t: Any) -> Callable[[Any, Any], dict[str, Any]]:
    args = typing.get_args(t)
    value_type = args[1] if len(args) == 2 else Any
    if value_type is Any:
        # Opaque JSON (schemas, arguments, _meta): keep the decoder's dict as is.
        def opaque(value: Any, _: Any) -> dict[str, Any]:
            if type(value) is dict:
                return value
            raise TypeError(f"expected an object, got {_kind(value)}")

        return opaque

    value_hook = converter.get_structure_hook(value_type)

    def hook(value: Any, _: Any) -> dict[str, Any]:
        if type(value) is not dict:
            raise TypeError(f"expected an object, got {_kind(value)}")
        out = {}
        errors: list[Exception] = []
        for key, item in value.items():
            try:
                out[key] = value_hook(item, value_type)
            except Exception as exc:
                errors.append(_at(exc, key, value_type))
        if errors:
            raise IterableValidationError(f"While structuring {t!r}", errors, t)
        return out

    return hook


converter.register_structure_hook_factory(_is_list, _list_hook)
converter.register_structure_hook_factory(_is_dict, _dict_hook)


def _identity(value: Any) -> Any:
    return value


# Opaque JSON goes out by reference; walking it would copy every nested dict for nothing.
_OPAQUE = (dict[str, Any], dict[str, Any] | None)
converter.register_unstructure_hook_func(lambda t: t in _OPAQUE, _identity)


def _list_unstructure_hook(t: Any) -> Callable[[Any], list[Any]]:
    args = typing.get_args(t)
    item_type = args[0] if args else Any
    if item_type in _SCALARS or typing.get_origin(item_type) is typing.Literal:
        return list
    # Dispatch on each item's runtime class, memoised here: cheaper than cattrs' generic
    # union dispatch, and right for both plain classes and unions of classes.
    hooks: dict[type, Callable[[Any], Any]] = {}

    def hook(value: Any) -> list[Any]:
        out = []
        for item in value:
            cls = item.__class__
            item_hook = hooks.get(cls)
            if item_hook is None:
                item_hook = hooks[cls] = converter.get_unstructure_hook(cls)
            out.append(item_hook(item))
        return out

    return hook


converter.register_unstructure_hook_factory(_is_list, _list_unstructure_hook)


# --- attrs classes: camelCase, _meta, omit None, extra ------------------------------------


def _local(field: attrs.Attribute[Any]) -> bool:
    """``metadata={"wire": False}``: a field of ours only (a client's typed view of a
    result), never read from nor written to the wire."""
    return field.metadata.get("wire") is False


def _structure_class_hook(cls: type[Any]) -> Callable[[Any, Any], Any]:
    fields = attrs.fields(cls)
    has_extra = any(f.name == "extra" for f in fields)
    overrides = {
        f.name: override(omit=True) if _local(f)
        else override(rename=_EXTRA_KEY if f.name == "extra" else wire_name(f.name))
        for f in fields
    }
    generated = make_dict_structure_fn(cls, converter, **overrides)  # type: ignore[arg-type]
    known = frozenset(wire_name(f.name) for f in fields if f.name != "extra" and not _local(f))
    name = cls.__name__

    if not has_extra:

        def closed(value: Any, _: Any) -> Any:
            if type(value) is not dict:
                raise TypeError(f"expected an object ({name}), got {_kind(value)}")
            return generated(value, cls)

        return closed

    def hook(value: Any, _: Any) -> Any:
        if type(value) is not dict:
            raise TypeError(f"expected an object ({name}), got {_kind(value)}")
        if not known.issuperset(value):
            unknown = {k: v for k, v in value.items() if k not in known}
            value = {k: v for k, v in value.items() if k in known}
            value[_EXTRA_KEY] = unknown
        return generated(value, cls)

    return hook


def _unstructure_class_hook(cls: type[Any]) -> Callable[[Any], dict[str, Any]]:
    fields = attrs.fields(cls)
    has_extra = any(f.name == "extra" for f in fields)
    overrides = {
        f.name: override(omit=True)
        if f.name == "extra" or _local(f)
        else override(rename=wire_name(f.name), omit_if_default=f.default is None)
        for f in fields
    }
    generated = make_dict_unstructure_fn(cls, converter, **overrides)  # type: ignore[arg-type]
    if not has_extra:
        return generated

    def hook(obj: Any) -> dict[str, Any]:
        out = generated(obj)
        extra = obj.extra
        if extra:
            for key, value in extra.items():
                # A named attribute always wins over a stray duplicate in ``extra``.
                if key not in out:
                    out[key] = converter.unstructure(value)
        return out

    return hook


converter.register_structure_hook_factory(attrs.has, _structure_class_hook)
converter.register_unstructure_hook_factory(attrs.has, _unstructure_class_hook)


# --- unions ----------------------------------------------------------------------------


def _tagged_union(
    union: Any, tag: str, members: dict[Any, type[Any]], *, default: Any = None
) -> None:
    """Structure ``union`` by looking up ``value[tag]`` (or ``default`` if absent) in ``members``."""
    hooks: dict[Any, Callable[[Any, Any], Any]] = {}
    expected = ", ".join(repr(k) for k in members if k is not None)

    def hook(value: Any, _: Any) -> Any:
        if type(value) is not dict:
            raise TypeError(f"expected an object, got {_kind(value)}")
        key = value.get(tag, default)
        # Only strings (or the absent default) can name a member; this also keeps
        # unhashable JSON (arrays, objects) away from the dict lookups.
        if not (key is default or type(key) is str) or key not in members:
            raise ValueError(f"unknown {tag} {key!r}; expected one of {expected}")
        member_hook = hooks.get(key)
        if member_hook is None:
            member_hook = hooks[key] = converter.get_structure_hook(members[key])
        return member_hook(value, members[key])

    converter.register_structure_hook(union, hook)


_tagged_union(
    ContentBlock,
    "type",
    {
        "text": TextContent,
        "image": ImageContent,
        "audio": AudioContent,
        "resource_link": ResourceLink,
        "resource": EmbeddedResource,
    },
)
_tagged_union(
    SamplingContent,
    "type",
    {
        "text": TextContent,
        "image": ImageContent,
        "audio": AudioContent,
        "tool_use": ToolUseContent,
        "tool_result": ToolResultContent,
    },
)
_tagged_union(
    CompletionReference,
    "type",
    {"ref/prompt": PromptReference, "ref/resource": ResourceTemplateReference},
)
# ``mode`` arrived in 2025-11-25; before that every elicitation was a form.
_tagged_union(
    ElicitRequestParams,
    "mode",
    {"form": ElicitRequestFormParams, "url": ElicitRequestURLParams, None: ElicitRequestFormParams},
)


def _structure_resource_contents(value: Any, _: Any) -> Any:
    if type(value) is not dict:
        raise TypeError(f"expected an object, got {_kind(value)}")
    if "text" in value:
        return _text_contents_hook(value, TextResourceContents)
    if "blob" in value:
        return _blob_contents_hook(value, BlobResourceContents)
    raise ValueError("resource contents need a 'text' or a 'blob' member")


_text_contents_hook = converter.get_structure_hook(TextResourceContents)
_blob_contents_hook = converter.get_structure_hook(BlobResourceContents)
converter.register_structure_hook(ResourceContents, _structure_resource_contents)

_sampling_content_hook = converter.get_structure_hook(SamplingContent)
_sampling_list_hook = converter.get_structure_hook(list[SamplingContent])


def _structure_sampling_body(value: Any, _: Any) -> Any:
    # 2025-11-25 allows an array of blocks where older versions had exactly one.
    if type(value) is list:
        return _sampling_list_hook(value, list[SamplingContent])
    return _sampling_content_hook(value, SamplingContent)


converter.register_structure_hook(SamplingContent | list[SamplingContent], _structure_sampling_body)


# --- public API ------------------------------------------------------------------------


# Per-type hook caches for the public functions: skip cattrs' dispatch on the hot path.
_to_wire_hooks: dict[type, Callable[[Any], Any]] = {}
_from_wire_hooks: dict[Any, Callable[[Any, Any], Any]] = {}


def to_wire(obj: Any) -> Any:
    """JSON-ready data for an attrs instance, or a list or dict of them (and scalars)."""
    cls = obj.__class__
    hook = _to_wire_hooks.get(cls)
    if hook is None:
        hook = _to_wire_hooks[cls] = converter.get_unstructure_hook(cls)
    return hook(obj)


@overload
def from_wire(data: Any, cls: type[T], *, path: str = "") -> T: ...
@overload
def from_wire(data: Any, cls: Any, *, path: str = "") -> Any: ...
def from_wire(data: Any, cls: Any, *, path: str = "") -> Any:
    """Validate decoded JSON ``data`` into ``cls`` (a class or one of the union aliases).

    ``path`` is where ``data`` sits in the message (e.g. ``"params"``); it prefixes the
    ``path`` reported in the error. Raises :class:`InvalidParams` with
    ``data={"path": ..., "reason": ...}`` on any mismatch.
    """
    hook = _from_wire_hooks.get(cls)
    if hook is None:
        hook = _from_wire_hooks[cls] = converter.get_structure_hook(cls)
    try:
        return hook(data, cls)
    except Exception as exc:
        steps, leaf = _first_failure(exc)
        where = ".".join(str(s) for s in ([path] if path else []) + steps)
        reason = _reason(leaf)
        target = getattr(cls, "__name__", None) or str(cls)
        message = f"Invalid {target}: {where or 'value'}: {reason}"
        raise InvalidParams(message, data={"path": where, "reason": reason}) from exc


def _first_failure(exc: BaseException) -> tuple[list[str | int], BaseException]:
    """Follow cattrs' nested exception groups to the first leaf error and its path."""
    steps: list[str | int] = []
    while True:
        if isinstance(exc, ClassValidationError):
            with_notes, without = exc.group_exceptions()
            if with_notes:
                sub, note = with_notes[0]
                steps.append(wire_name(note.name))
                exc = sub
                continue
            if without:
                exc = without[0]
                continue
        elif isinstance(exc, IterableValidationError):
            item_notes, other = exc.group_exceptions()
            if item_notes:
                sub, inote = item_notes[0]
                steps.append(inote.index)
                exc = sub
                continue
            if other:
                exc = other[0]
                continue
        return steps, exc


def _reason(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return "required field missing"
    text = str(exc)
    if " not in literal " in text:
        # cattrs says "x not in literal typing.Literal['a', 'b']"; say it in JSON terms.
        value, _, literal = text.partition(" not in literal ")
        allowed = literal.removeprefix("typing.Literal[").removesuffix("]")
        return f"{value!r} is not one of {allowed}"
    return text or type(exc).__name__


def _install_fast_paths() -> None:
    """Hand-written structuring for the params on every tools/call.

    The generic hook validates through cattrs' machinery (several µs); the common shape
    (``name``, ``arguments``, ``_meta`` and nothing else, all of the right JSON types) is
    checked and built directly, and anything else falls back to the generic hook, so
    errors and unknown fields behave exactly as before.
    """
    from mcpactor.protocol.types import CallToolRequestParams

    generic = converter.get_structure_hook(CallToolRequestParams)
    known = frozenset({"name", "arguments", "_meta"})

    def call_tool_params(data: Any, cls: Any) -> Any:
        if type(data) is dict and known.issuperset(data):
            name = data.get("name")
            arguments = data.get("arguments")
            meta = data.get("_meta")
            if (
                type(name) is str
                and (arguments is None or type(arguments) is dict)
                and (meta is None or type(meta) is dict)
            ):
                return CallToolRequestParams(name=name, arguments=arguments, meta=meta)
        return generic(data, cls)

    _from_wire_hooks[CallToolRequestParams] = call_tool_params


_install_fast_paths()
