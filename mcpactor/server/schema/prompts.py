"""``build_prompt_signature``: a prompt function's arguments, described and converted.

Prompt arguments travel as strings. Each parameter's annotation is compiled as a tool
parameter's is, and the string is turned into that type: as it is when the type takes
strings, else as JSON (``"5"`` → 5, ``"true"`` → True, ``'{"a": 1}'`` → a model),
with the usual spellings of booleans (``yes``/``no``, ``on``/``off``, ``1``/``0``).
A value that does not convert is -32602 naming the argument. A class the schema
compiler does not know (``Path``, ``UUID``, ``Decimal``, ``datetime`` ...) is built from
the string itself (``fromisoformat`` for dates and times).
"""

from __future__ import annotations

import datetime
import inspect
import json
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import attrs

from mcpactor.protocol.errors import InvalidParams
from mcpactor.server.schema.compiler import _Compiler, _fields, _hints, _strip_annotated
from mcpactor.server.schema.docstrings import _param_docs
from mcpactor.server.schema.fields import MISSING
from mcpactor.server.schema.signature import _is_field_default, _is_skipped
from mcpactor.server.schema.validate import _Invalid, _Prop

__all__ = ["PromptArgumentSpec", "PromptSignature", "build_prompt_signature"]

_BOOLEANS: Final = {"true": True, "yes": True, "on": True, "1": True,
                    "false": False, "no": False, "off": False, "0": False}


@attrs.frozen(kw_only=True)
class PromptArgumentSpec:
    """One prompt argument as ``prompts/list`` shows it."""

    name: str
    title: str | None
    description: str | None
    required: bool


@attrs.frozen(kw_only=True, eq=False)
class PromptSignature:
    """A prompt function's arguments and the converter of the strings a client sends.

    ``convert(prompt_name, arguments)`` returns the keyword arguments (the context
    parameter excluded, unknown names dropped) or raises
    :class:`~mcpactor.protocol.errors.InvalidParams` naming the argument.
    """

    arguments: tuple[PromptArgumentSpec, ...]
    context_param: str | None
    convert: Callable[[str, Mapping[str, Any]], dict[str, Any]] = attrs.field(repr=False)


def _from_text(cls: type) -> Callable[[Any], Any]:
    """A converter building ``cls`` from the argument's string (``fromisoformat`` for
    dates and times)."""
    make: Callable[[Any], Any] = (
        cls.fromisoformat if issubclass(cls, (datetime.date, datetime.time))
        else cls)

    def convert(value: Any) -> Any:
        if isinstance(value, cls):
            return value
        try:
            return make(value)
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise _Invalid(f"not a valid {cls.__name__}: {exc}") from None

    return convert


def _text_converter(ann: Any) -> Callable[[Any], Any] | None:
    """:func:`_from_text` for a class or an ``Optional`` one; None for anything else."""
    if isinstance(ann, type):
        return _from_text(ann)
    if typing.get_origin(ann) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(ann) if a is not type(None)]
        if len(members) == 1 and isinstance(members[0], type):
            inner = _from_text(members[0])

            def optional(value: Any) -> Any:
                return None if value is None else inner(value)

            return optional
    return None


def _as_float(conv: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        result = conv(value)
        return float(result) if type(result) is int else result

    return convert


def _from_string(conv: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def convert(raw: Any) -> Any:
        try:
            return conv(raw)
        except _Invalid as exc:
            if not isinstance(raw, str):
                raise
            first = exc
        candidates: list[Any] = []
        try:
            candidates.append(json.loads(raw))
        except ValueError:
            pass
        word = _BOOLEANS.get(raw.strip().lower(), MISSING)
        if word is not MISSING and word not in candidates:
            candidates.append(word)
        problem = first
        for i, candidate in enumerate(candidates):
            try:
                return conv(candidate)
            except _Invalid as exc:
                if i == 0:  # the JSON reading says most about what is wrong
                    problem = exc
        raise problem

    return convert


def build_prompt_signature(fn: Callable[..., Any], *, skip: Iterable[type] = (),
                           injected: Iterable[str] = ()) -> PromptSignature:
    """Describe and compile a prompt function's parameters (see the module docstring).
    ``injected``: parameters the server fills itself (dependencies), not arguments.

    Raises TypeError for annotations that cannot be converted from a string argument.
    """
    name = getattr(fn, "__qualname__", None) or repr(fn)
    where = f"prompt function {name}"
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{where}: cannot read its signature: {exc}") from exc
    hints = _hints(fn, where)
    docs = _param_docs(inspect.getdoc(fn))
    skip_types = tuple(skip)
    compiler = _Compiler(output=False)
    context_param: str | None = None
    specs: list[PromptArgumentSpec] = []
    # (name, converter, required, injected default)
    table: list[tuple[str, Callable[[Any], Any], bool, Any]] = []
    not_arguments = frozenset(injected)
    for pname, param in sig.parameters.items():
        ann = hints.get(pname, Any)
        if skip_types and _is_skipped(ann, skip_types):
            context_param = pname
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or pname in not_arguments:
            continue
        has_default = param.default is not param.empty
        default = param.default if has_default else MISSING
        if has_default and _is_field_default(default):
            ann = typing.Annotated[ann, default]
            has_default, default = False, MISSING
        arg_where = f"{where}, argument {pname!r}"
        try:
            _, prop = compiler._property(pname, pname, ann, has_default, default, arg_where)
        except TypeError:
            # Not JSON data, but a class made from a string (Path, UUID, Decimal,
            # datetime ...): a prompt argument is one.
            text_conv = _text_converter(_strip_annotated(ann)[0])
            if text_conv is None:
                raise
            prop = _Prop(pname, pname, text_conv, not has_default, MISSING)
        meta = _strip_annotated(ann)[1]
        fields = _fields(meta, arg_where)
        titles = [f.title for f in fields if f.title is not None]
        # As in compile(): a Field's description wins over Annotated[X, "text"]; the
        # docstring's Args section comes last (a model's own docstring is not the
        # argument's description).
        descriptions = [m for m in meta if isinstance(m, str)]
        descriptions += [f.description for f in fields if f.description is not None]
        description = descriptions[-1] if descriptions else docs.get(pname)
        specs.append(PromptArgumentSpec(
            name=pname, title=titles[-1] if titles else None, description=description,
            required=prop.required))
        conv = prop.conv
        if _strip_annotated(ann)[0] is float:
            conv = _as_float(conv)  # "2" is JSON 2; the function asked for a float
        table.append((pname, _from_string(conv), prop.required, prop.inject))

    entries = tuple(table)

    def convert(prompt: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, conv, _required, inject in entries:
            raw = arguments.get(key, MISSING)
            if raw is MISSING:
                if inject is not MISSING:
                    out[key] = inject
                continue
            try:
                out[key] = conv(raw)
            except _Invalid as exc:
                path = "params.arguments." + key + "".join(
                    f"[{seg}]" if isinstance(seg, int) else f".{seg}" for seg in exc.path[::-1])
                raise InvalidParams(
                    f"Invalid argument {key!r} for prompt {prompt}: {exc.reason}",
                    data={"path": path, "reason": exc.reason},
                ) from None
        return out

    return PromptSignature(arguments=tuple(specs), context_param=context_param, convert=convert)
