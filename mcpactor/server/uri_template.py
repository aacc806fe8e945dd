"""RFC 6570 URI templates: expansion (levels 1 to 4) and matching.

MCP resource templates (``resources/templates/list``) are RFC 6570 templates; the server
expands nothing itself but must *match* a concrete URI from ``resources/read`` against
each registered template to find the handler and its arguments. :class:`UriTemplate`
does both: :meth:`UriTemplate.expand` follows the RFC's algorithm (its Appendix A), and
:meth:`UriTemplate.match` runs a regular expression compiled once per template.

Matching is the inverse of expansion only where the template makes it unambiguous;
see :meth:`UriTemplate.match` for the rules.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from typing import Any, Final

import attrs

__all__ = ["UriTemplate"]


@attrs.frozen
class _Operator:
    """One row of the RFC's expansion table (Appendix A)."""

    first: str  # written before the first defined variable
    sep: str  # written between defined variables (and exploded members)
    named: bool  # whether values appear as name=value
    ifemp: str  # written after the name when the value is empty
    reserved: bool  # whether reserved characters pass through unencoded
    value_class: str  # regex character class of one value when matching


_OPERATORS: Final[dict[str, _Operator]] = {
    "": _Operator("", ",", False, "", False, "[^/?#,]"),
    "+": _Operator("", ",", False, "", True, "[^,]"),
    "#": _Operator("#", ",", False, "", True, "[^,]"),
    ".": _Operator(".", ".", False, "", False, "[^/?#.]"),
    "/": _Operator("/", "/", False, "", False, "[^/?#]"),
    ";": _Operator(";", ";", True, "", False, "[^;/?#]"),
    "?": _Operator("?", "&", True, "=", False, "[^&#]"),
    "&": _Operator("&", "&", True, "=", False, "[^&#]"),
}
#: Operator characters the RFC sets aside for future extensions.
_RESERVED_OPERATORS: Final = frozenset("=,!@|")

_VARSPEC: Final = re.compile(
    r"(?P<name>(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*)"
    r"(?::(?P<prefix>[1-9][0-9]{0,3})|(?P<explode>\*))?"
)
_PCT_TRIPLET: Final = re.compile(r"(%[0-9A-Fa-f]{2})")
#: RFC 3986 reserved characters: kept as they are by the + and # operators.
_RESERVED_CHARS: Final = ":/?#[]@!$&'()*+,;="


@attrs.frozen
class _VarSpec:
    name: str
    prefix: int | None
    explode: bool


@attrs.frozen
class _Expression:
    operator: str
    varspecs: tuple[_VarSpec, ...]


_Part = str | _Expression


def _encode(text: str, reserved: bool) -> str:
    """Percent-encode for an operator: unreserved only, or unreserved plus reserved."""
    if not reserved:
        return urllib.parse.quote(text, safe="")
    # Reserved expansion keeps existing %XX triplets (RFC 6570 section 3.2.3).
    pieces = _PCT_TRIPLET.split(text)
    return "".join(
        piece if i % 2 else urllib.parse.quote(piece, safe=_RESERVED_CHARS)
        for i, piece in enumerate(pieces)
    )


def _parse(template: str) -> tuple[_Part, ...]:
    parts: list[_Part] = []
    pos = 0
    n = len(template)
    while pos < n:
        open_at = template.find("{", pos)
        close_at = template.find("}", pos)
        if close_at != -1 and (open_at == -1 or close_at < open_at):
            raise ValueError(
                f"invalid URI template {template!r}: '}}' at {close_at} closes nothing"
            )
        if open_at == -1:
            parts.append(template[pos:])
            break
        if open_at > pos:
            parts.append(template[pos:open_at])
        if close_at == -1:
            raise ValueError(
                f"invalid URI template {template!r}: '{{' at {open_at} is never closed"
            )
        body = template[open_at + 1 : close_at]
        if "{" in body:
            raise ValueError(f"invalid URI template {template!r}: expressions cannot nest")
        parts.append(_parse_expression(template, body))
        pos = close_at + 1
    return tuple(parts)


def _parse_expression(template: str, body: str) -> _Expression:
    where = f"invalid URI template {template!r}: expression {{{body}}}"
    if not body:
        raise ValueError(f"{where} is empty")
    operator = ""
    if body[0] in _OPERATORS:
        operator, body = body[0], body[1:]
    elif body[0] in _RESERVED_OPERATORS:
        raise ValueError(f"{where} uses operator {body[0]!r}, reserved for future extensions")
    specs: list[_VarSpec] = []
    for raw in body.split(","):
        m = _VARSPEC.fullmatch(raw)
        if m is None:
            raise ValueError(
                f"{where} has an invalid variable {raw!r} (names are letters, digits, '_', "
                "'.' and %XX, optionally followed by ':length' (1-9999) or '*')"
            )
        prefix = m.group("prefix")
        specs.append(
            _VarSpec(m.group("name"), int(prefix) if prefix else None, bool(m.group("explode")))
        )
    return _Expression(operator, tuple(specs))


def _normalize(value: Any) -> str | list[str] | list[tuple[str, str]] | None:
    """A variable's value as a string, a list or a list of pairs; None if undefined."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        pairs = [(_scalar(k), _scalar(v)) for k, v in value.items() if v is not None]
        return pairs or None
    if isinstance(value, (list, tuple)):
        items = [_scalar(v) for v in value if v is not None]
        return items or None
    return _scalar(value)


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    raise TypeError(
        f"URI template values must be strings, numbers, lists or dicts, not {type(value).__name__}"
    )


def _expand_var(op: _Operator, spec: _VarSpec, value: str | list[Any]) -> str:
    enc = op.reserved
    if isinstance(value, str):
        if spec.prefix is not None:
            value = value[: spec.prefix]
        if op.named:
            return spec.name + (op.ifemp if not value else "=" + _encode(value, enc))
        return _encode(value, enc)
    if spec.prefix is not None:
        raise ValueError(
            f"prefix modifier ':{spec.prefix}' cannot apply to the list or dict {spec.name!r}"
        )
    is_pairs = isinstance(value[0], tuple)
    if not spec.explode:
        if is_pairs:
            joined = ",".join(f"{_encode(k, enc)},{_encode(v, enc)}" for k, v in value)
        else:
            joined = ",".join(_encode(v, enc) for v in value)
        if op.named:
            return spec.name + (op.ifemp if not joined else "=" + joined)
        return joined
    items: list[str] = []
    if is_pairs:
        for k, v in value:
            if op.named and not v:
                items.append(_encode(k, enc) + op.ifemp)
            else:
                items.append(f"{_encode(k, enc)}={_encode(v, enc)}")
    else:
        for v in value:
            if op.named:
                items.append(spec.name + (op.ifemp if not v else "=" + _encode(v, enc)))
            else:
                items.append(_encode(v, enc))
    return op.sep.join(items)


# How a captured group becomes a value when matching.
_AS_STRING: Final = 0
_AS_LIST: Final = 1  # unnamed explode: members joined by the separator
_AS_NAMED_LIST: Final = 2  # named explode: name=value members joined by the separator


@attrs.frozen
class _Group:
    spec: _VarSpec
    kind: int
    sep: str


def _expression_regex(expr: _Expression, groups: list[_Group]) -> str:
    op = _OPERATORS[expr.operator]
    single = len(expr.varspecs) == 1
    sep = re.escape(op.sep)
    lead = f"[{re.escape(op.first + op.sep)}]"  # the first present variable gets `first`
    out: list[str] = []
    for i, spec in enumerate(expr.varspecs):
        group = f"g{len(groups)}"
        # A lone simple or reserved variable may contain commas: only the operator's
        # structural characters end it. Reserved values may contain anything, so they
        # are lazy and let the following literal decide where they stop.
        if expr.operator == "" and (single or spec.explode):
            cls = "[^/?#]"
        elif expr.operator in ("+", "#") and (single or spec.explode):
            cls = "."
        else:
            cls = op.value_class
        lazy = "?" if expr.operator in ("+", "#") else ""
        if op.named:
            name = re.escape(spec.name)
            if spec.explode:
                member = f"{name}(?:={cls}*{lazy})?"
                pattern = f"(?:{lead}(?P<{group}>{member}(?:{sep}{member})*))?"
                groups.append(_Group(spec, _AS_NAMED_LIST, op.sep))
            else:
                # `;name` without `=` is a defined, empty value; the empty alternative
                # records that the name was present.
                value = f"(?P<{group}>{cls}*{lazy})"
                pattern = f"(?:{lead}{name}(?:={value}|(?P<{group}e>)))?"
                groups.append(_Group(spec, _AS_STRING, op.sep))
            out.append(pattern)
            continue
        kind = _AS_LIST if spec.explode else _AS_STRING
        groups.append(_Group(spec, kind, op.sep))
        if expr.operator in ("", "+"):
            # No prefix character to anchor on: the first variable is required and
            # non-empty, so `{id}` never matches an empty path segment.
            if i == 0:
                out.append(f"(?P<{group}>{cls}+{lazy})")
            else:
                out.append(f"(?:{sep}(?P<{group}>{cls}*{lazy}))?")
        elif expr.operator == "#":
            if i == 0:
                out.append(f"(?:\\#(?P<{group}>{cls}*{lazy})")
            else:
                out.append(f"(?:{sep}(?P<{group}>{cls}*{lazy}))?")
        else:  # "." and "/": the prefix and separator are the same character
            members = f"{cls}*(?:{sep}{cls}*)*" if spec.explode else f"{cls}*"
            out.append(f"(?:{sep}(?P<{group}>{members}))?")
    if expr.operator == "#":
        out.append(")?")
    return "".join(out)


@attrs.frozen(init=False)
class UriTemplate:
    """An RFC 6570 URI template, parsed and compiled once; immutable and hashable.

    ``UriTemplate("test://template/{id}/data")`` raises ValueError for a malformed
    template (unbalanced braces, empty or nested expressions, invalid variable names or
    modifiers, operators reserved by the RFC).
    """

    template: str
    _parts: tuple[_Part, ...] = attrs.field(eq=False, repr=False)
    _regex: re.Pattern[str] = attrs.field(eq=False, repr=False)
    _groups: tuple[_Group, ...] = attrs.field(eq=False, repr=False)

    def __init__(self, template: str) -> None:
        if not isinstance(template, str):
            raise TypeError(f"URI template must be a string, not {type(template).__name__}")
        parts = _parse(template)
        groups: list[_Group] = []
        pieces: list[str] = []
        for part in parts:
            if isinstance(part, str):
                pieces.append(re.escape(_encode(part, reserved=True)))
            else:
                pieces.append(_expression_regex(part, groups))
        regex = re.compile("".join(pieces), re.DOTALL)
        self.__attrs_init__(template, parts, regex, tuple(groups))

    def __str__(self) -> str:
        return self.template

    @property
    def variables(self) -> tuple[str, ...]:
        """The variable names, in order of first appearance, without repeats."""
        seen: dict[str, None] = {}
        for part in self._parts:
            if isinstance(part, _Expression):
                for spec in part.varspecs:
                    seen.setdefault(spec.name, None)
        return tuple(seen)

    @property
    def is_literal(self) -> bool:
        """True when the template has no expressions (it names exactly one URI)."""
        return all(isinstance(part, str) for part in self._parts)

    def expand(self, values: Mapping[str, Any] | None = None, /, **kwargs: Any) -> str:
        """Expand the template with ``values`` (and/or keyword arguments).

        A value is a string, a number or bool (written as JSON would), a list or tuple,
        or a mapping (its items are name/value pairs). ``None``, missing names and empty
        lists or mappings are undefined and expand to nothing, as the RFC says.
        Raises ValueError when a prefix modifier (``{var:3}``) meets a list or mapping.
        """
        merged: Mapping[str, Any] = (
            {**values, **kwargs} if values and kwargs else (values or kwargs)
        )
        out: list[str] = []
        for part in self._parts:
            if isinstance(part, str):
                out.append(_encode(part, reserved=True))
                continue
            op = _OPERATORS[part.operator]
            expanded = []
            for spec in part.varspecs:
                value = _normalize(merged.get(spec.name))
                if value is not None:
                    expanded.append(_expand_var(op, spec, value))
            if expanded:
                out.append(op.first + op.sep.join(expanded))
        return "".join(out)

    def match(self, uri: str) -> dict[str, str | list[str]] | None:
        """The variables that expand to ``uri``, or None if the template cannot produce it.

        Values are percent-decoded. Rules where expansion is not reversible:

        - a simple ``{id}`` matches one or more characters other than ``/``, ``?`` and
          ``#`` (so never an empty segment, and never across ``/``); ``{+path}`` and
          ``{#frag}`` match anything, as little as lets the rest of the template match;
        - with several variables in one expression, commas separate them;
        - exploded variables (``{/list*}``, ``{?list*}``) give lists; exploded mappings
          are not recovered as mappings (``{?keys*}`` only matches ``keys=...`` members);
        - ``{?a,b}`` and ``{&a,b}`` members must appear in the template's order;
          absent optional members (``/``, ``.``, ``;``, ``?``, ``&``, ``#``) are left out
          of the result.
        """
        m = self._regex.fullmatch(uri)
        if m is None:
            return None
        result: dict[str, str | list[str]] = {}
        prefixed: set[str] = set()
        captured = m.groupdict()
        for i, group in enumerate(self._groups):
            raw = captured[f"g{i}"]
            if raw is None:
                if captured.get(f"g{i}e") is None:
                    continue
                raw = ""
            spec = group.spec
            value: str | list[str]
            if group.kind == _AS_STRING:
                value = urllib.parse.unquote(raw)
            elif group.kind == _AS_LIST:
                value = [urllib.parse.unquote(v) for v in raw.split(group.sep)]
            else:
                value = []
                for member in raw.split(group.sep):
                    _, _, v = member.partition("=")
                    value.append(urllib.parse.unquote(v))
            # `{/var:1,var}` names one variable twice; the unabridged value wins.
            if spec.name in result and (spec.prefix is not None or spec.name not in prefixed):
                continue
            result[spec.name] = value
            if spec.prefix is not None:
                prefixed.add(spec.name)
            else:
                prefixed.discard(spec.name)
        return result
