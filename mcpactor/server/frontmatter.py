"""YAML front matter of ``SKILL.md`` files: the ``---`` block split off, then parsed.

Agent Skills put their metadata in YAML front matter. The parser here reads the part of
YAML such metadata uses, resolved as YAML 1.2's core schema says (``true``, ``null``,
``12``, ``1.5`` are typed; everything else is a string):

- block mappings nested by indentation (spaces), block sequences (``- item``, of
  scalars or of mappings), flow sequences and mappings on one line (``[a, b]``,
  ``{k: v}``);
- plain scalars (also over several lines, folded with spaces), single-quoted (``''`` is
  a quote) and double-quoted (JSON-style escapes) scalars, literal (``|``) and folded
  (``>``) block scalars with their chomping (``-``, ``+``) and indentation indicators;
- ``#`` comments and blank lines.

Anything beyond that (anchors, aliases, tags, complex keys, several documents, tabs
for indentation) is a :class:`FrontMatterError` naming the file's line and what to
write instead, never a wrong value. A date stays the string it is written as.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = ["FrontMatterError", "parse_yaml", "split_front_matter"]


class FrontMatterError(ValueError):
    """The front matter cannot be read; ``line`` is 1-based within the file."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(f"line {line}: {message}" if line is not None else message)
        self.line = line


_DELIMITER = re.compile(r"^---[ \t]*$")


def split_front_matter(text: str) -> tuple[str, str, int]:
    """``(yaml, body, first_line)``: the front matter between the leading ``---`` lines,
    the rest, and the file line the YAML starts on. No leading block: an error."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.splitlines(keepends=True)
    if not lines or not _DELIMITER.match(lines[0].rstrip("\r\n")):
        raise FrontMatterError("the file does not begin with '---' (YAML front matter "
                               "with at least name and description)", 1)
    for i in range(1, len(lines)):
        if _DELIMITER.match(lines[i].rstrip("\r\n")):
            return "".join(lines[1:i]), "".join(lines[i + 1:]), 2
    raise FrontMatterError("the front matter has no closing '---' line", 1)


# -- scalars ----------------------------------------------------------------------------

_INT = re.compile(r"^[-+]?[0-9]+$")
_OCT = re.compile(r"^0o[0-7]+$")
_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")


def _resolve(plain: str) -> Any:
    """A plain scalar typed by the YAML 1.2 core schema."""
    if plain in ("", "~", "null", "Null", "NULL"):
        return None
    if plain in ("true", "True", "TRUE"):
        return True
    if plain in ("false", "False", "FALSE"):
        return False
    if _INT.match(plain):
        return int(plain)
    if _OCT.match(plain):
        return int(plain[2:], 8)
    if _HEX.match(plain):
        return int(plain[2:], 16)
    if _FLOAT.match(plain):
        return float(plain)
    if plain in (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"):
        return math.inf
    if plain in ("-.inf", "-.Inf", "-.INF"):
        return -math.inf
    if plain in (".nan", ".NaN", ".NAN"):
        return math.nan
    return plain


def _strip_comment(text: str) -> str:
    """``text`` without a trailing ``# comment`` (outside quotes)."""
    quote = None
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
    return text.rstrip()


class _Parser:
    def __init__(self, source: str, first_line: int) -> None:
        self.lines = source.splitlines()
        self.first = first_line
        self.i = 0

    def error(self, message: str, index: int | None = None) -> FrontMatterError:
        return FrontMatterError(message, self.first + (self.i if index is None else index))

    # -- lines ---------------------------------------------------------------------------

    def _skip_blank(self) -> None:
        while self.i < len(self.lines):
            stripped = self.lines[self.i].strip()
            if stripped and not stripped.startswith("#"):
                return
            self.i += 1

    def _indent(self, index: int) -> int:
        line = self.lines[index]
        body = line.lstrip(" ")
        if body.startswith("\t"):
            raise self.error("a tab in the indentation: YAML indents with spaces", index)
        return len(line) - len(body)

    # -- values ----------------------------------------------------------------------------

    def document(self) -> Any:
        self._skip_blank()
        if self.i >= len(self.lines):
            return None
        value = self._block(self._indent(self.i))
        self._skip_blank()
        if self.i < len(self.lines):
            raise self.error("unexpected indentation")
        return value

    def _block(self, indent: int) -> Any:
        line = self.lines[self.i][indent:]
        if line.startswith("- ") or line.rstrip() == "-":
            return self._sequence(indent)
        return self._mapping(indent)

    def _key(self, text: str) -> tuple[str, str] | None:
        """``(key, rest)`` when ``text`` is ``key: rest`` (key plain or quoted)."""
        if text.startswith(("'", '"')):
            end = self._quoted_end(text)
            if end is not None and text[end:end + 1] == ":" and (
                    len(text) == end + 1 or text[end + 1] in " \t"):
                return str(self._scalar(text[:end], None)), text[end + 1:].strip()
            return None
        match = re.match(r"^([^#\s:][^:]*?|[^#\s:]):(?:[ \t]+(.*))?$", text)
        if match is None:
            return None
        key = match.group(1).strip()
        if key.startswith(("?", "&", "*", "!", "[", "{")):
            raise self.error(f"the key {key!r} uses YAML this parser does not read "
                             "(complex keys, anchors, aliases, tags, flow keys)")
        return key, (match.group(2) or "").strip()

    def _mapping(self, indent: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        while self.i < len(self.lines):
            self._skip_blank()
            if self.i >= len(self.lines):
                break
            here = self._indent(self.i)
            if here < indent:
                break
            if here > indent:
                raise self.error("unexpected indentation (a key indented more than the "
                                 "one before it)")
            text = _strip_comment(self.lines[self.i][indent:])
            pair = self._key(text)
            if pair is None:
                raise self.error(f"expected 'key: value', got {text!r}")
            key, rest = pair
            if key in out:
                raise self.error(f"the key {key!r} appears twice")
            self.i += 1
            out[key] = self._value(rest, indent)
        return out

    def _sequence(self, indent: int) -> list[Any]:
        out: list[Any] = []
        while self.i < len(self.lines):
            self._skip_blank()
            if self.i >= len(self.lines):
                break
            here = self._indent(self.i)
            line = self.lines[self.i][here:]
            if here != indent or not (line.startswith("- ") or line.rstrip() == "-"):
                if here > indent:
                    raise self.error("unexpected indentation in a list")
                break
            item = _strip_comment(line[1:]).strip()
            if item and self._key(item) is not None and not item.startswith(("'", '"', "[", "{")):
                # "- key: value" opens a mapping whose keys line up after the dash.
                inner = here + (len(line) - len(line[1:].lstrip(" ")))
                self.lines[self.i] = " " * inner + line[inner - here:]
                out.append(self._mapping(inner))
                continue
            self.i += 1
            out.append(self._value(item, indent))
        return out

    def _value(self, rest: str, indent: int) -> Any:
        """The value after ``key:`` or ``- ``: inline, a block scalar, or nested lines."""
        if rest.startswith(("&", "*", "!")):
            raise self.error("anchors, aliases and tags are not read here: write the value "
                             "itself", self.i - 1)
        if rest[:1] in ("|", ">"):
            return self._block_scalar(rest, indent)
        if rest == "":
            self._skip_blank()
            if self.i < len(self.lines):
                deeper = self._indent(self.i)
                line = self.lines[self.i][deeper:]
                if deeper > indent or (deeper == indent and line.startswith("- ")):
                    return self._block(deeper)
            return None
        if rest.startswith("["):
            return self._flow(rest, "[", "]")
        if rest.startswith("{"):
            return self._flow(rest, "{", "}")
        if rest.startswith(("'", '"')):
            end = self._quoted_end(rest)
            if end is None:
                return self._multiline_quoted(rest, indent)
            if rest[end:].strip():
                raise self.error(f"text after the closing quote: {rest[end:].strip()!r}",
                                 self.i - 1)
            return self._scalar(rest, None)
        # A plain scalar may go on over more-indented lines (folded with spaces).
        parts = [rest]
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if not line.strip():
                break
            if self._indent(self.i) <= indent:
                break
            more = _strip_comment(line.strip())
            if self._key(more) is not None or more.startswith("- "):
                raise self.error("unexpected indentation (a key or list item more indented "
                                 "than the value before it)")
            parts.append(more)
            self.i += 1
        return _resolve(" ".join(parts)) if len(parts) == 1 else " ".join(parts)

    def _quoted_end(self, text: str) -> int | None:
        """The index just past the closing quote of the scalar ``text`` begins with."""
        quote = text[0]
        i = 1
        while i < len(text):
            ch = text[i]
            if quote == '"' and ch == "\\":
                i += 2
                continue
            if ch == quote:
                if quote == "'" and text[i + 1:i + 2] == "'":
                    i += 2
                    continue
                return i + 1
            i += 1
        return None

    def _multiline_quoted(self, first: str, indent: int) -> Any:
        parts = [first]
        while self.i < len(self.lines):
            parts.append(self.lines[self.i].strip())
            self.i += 1
            joined = " ".join(parts)
            end = self._quoted_end(joined)
            if end is not None:
                return self._scalar(joined[:end], None)
        raise self.error("a quoted value that is never closed")

    def _scalar(self, text: str, index: int | None) -> Any:
        if text.startswith('"'):
            try:
                return json.loads(text.replace("\\/", "/"))
            except ValueError:
                raise self.error(f"a double-quoted value YAML and JSON read differently: "
                                 f"{text!r}", index) from None
        if text.startswith("'"):
            return text[1:-1].replace("''", "'")
        return _resolve(text)

    def _block_scalar(self, header: str, indent: int) -> str:
        match = re.match(r"^([|>])([-+]?)([1-9]?)([-+]?)\s*$", header)
        if match is None:
            raise self.error(f"a block scalar header this parser does not read: {header!r}",
                             self.i - 1)
        style, chomp = match.group(1), match.group(2) or match.group(4)
        explicit = match.group(3)
        lines: list[str] = []
        block_indent: int | None = indent + int(explicit) if explicit else None
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.strip():
                here = len(line) - len(line.lstrip(" "))
                if block_indent is None:
                    if here <= indent:
                        break
                    block_indent = here
                if here < block_indent:
                    break
                lines.append(line[block_indent:])
            else:
                lines.append("")
            self.i += 1
        trailing = 0
        while lines and lines[-1] == "":
            lines.pop()
            trailing += 1
        if style == "|":
            body = "\n".join(lines)
        else:
            # Folded: a break between two lines is a space, an empty line is a break,
            # and more-indented lines keep their breaks.
            body = ""
            for n, line in enumerate(lines):
                previous = lines[n - 1] if n else None
                if previous is None:
                    body = line
                elif line == "":
                    body += "\n"
                elif previous == "":
                    body += line
                elif line.startswith(" ") or previous.startswith(" "):
                    body += "\n" + line
                else:
                    body += " " + line
        if not lines:
            return "" if chomp != "+" else "\n" * trailing
        if chomp == "-":
            return body
        if chomp == "+":
            return body + "\n" * (trailing + 1)
        return body + "\n"

    def _flow(self, text: str, open_: str, close: str) -> Any:
        value, end = self._flow_value(text, 0)
        if _strip_comment(text[end:]).strip():
            raise self.error(f"text after a flow collection: {text[end:].strip()!r}",
                             self.i - 1)
        return value

    def _flow_value(self, text: str, i: int) -> tuple[Any, int]:
        while i < len(text) and text[i] == " ":
            i += 1
        if i >= len(text):
            raise self.error("a flow collection that is never closed", self.i - 1)
        ch = text[i]
        if ch == "[":
            items: list[Any] = []
            i += 1
            while True:
                while i < len(text) and text[i] == " ":
                    i += 1
                if text[i:i + 1] == "]":
                    return items, i + 1
                item, i = self._flow_value(text, i)
                items.append(item)
                while i < len(text) and text[i] == " ":
                    i += 1
                if text[i:i + 1] == ",":
                    i += 1
                elif text[i:i + 1] != "]":
                    raise self.error("expected ',' or ']' in a flow list", self.i - 1)
        if ch == "{":
            mapping: dict[str, Any] = {}
            i += 1
            while True:
                while i < len(text) and text[i] == " ":
                    i += 1
                if text[i:i + 1] == "}":
                    return mapping, i + 1
                key, i = self._flow_value(text, i)
                while i < len(text) and text[i] == " ":
                    i += 1
                if text[i:i + 1] != ":":
                    raise self.error("expected ':' in a flow mapping", self.i - 1)
                value, i = self._flow_value(text, i + 1)
                mapping[str(key)] = value
                while i < len(text) and text[i] == " ":
                    i += 1
                if text[i:i + 1] == ",":
                    i += 1
                elif text[i:i + 1] != "}":
                    raise self.error("expected ',' or '}' in a flow mapping", self.i - 1)
        if ch in "'\"":
            end = self._quoted_end(text[i:])
            if end is None:
                raise self.error("a quoted value that is never closed", self.i - 1)
            return self._scalar(text[i:i + end], self.i - 1), i + end
        j = i
        while j < len(text) and text[j] not in ",]}" and not (
                text[j] == ":" and (j + 1 == len(text) or text[j + 1] in " ,]}")):
            j += 1
        return _resolve(text[i:j].strip()), j


def parse_yaml(source: str, first_line: int = 1) -> Any:
    """The value of ``source`` (see the module); ``first_line`` numbers its lines in
    errors (where it sits in its file)."""
    return _Parser(source, first_line).document()
