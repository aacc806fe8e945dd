"""The skills extension (SEP-2640, ``io.modelcontextprotocol/skills``): Agent Skills
served from a folder, ``server.add_skills(path)``.

A skill is a directory with a ``SKILL.md`` whose YAML front matter has at least
``name`` and ``description``; every other file under it belongs to it. Given a folder,
each directory in it holding a ``SKILL.md`` is a skill (nested folders group them:
``team/pdf-processing``); given a skill's own directory, that one skill. The last
segment of a skill's path is its name and must equal the front matter's ``name``
(1-64 of ``a-z0-9-``, no leading, trailing or doubled hyphen).

What a client sees:

- ``capabilities.extensions["io.modelcontextprotocol/skills"]`` (with
  ``directoryRead: true``) and ``resources``;
- ``skills/list`` (paginated; an entry is never split across pages) and ``skills/get``
  (``{"uri": ...}``; -32602 for a URI that names no skill): entries of ``uri``
  (``skill://<skill-path>/SKILL.md``), ``frontmatter`` (the YAML as JSON, as written)
  and ``resources`` (every file once, ``SKILL.md`` first: ``uri``, ``digest``
  ``sha256:<hex>`` of its bytes, ``size``), plus the results' ``ttlMs`` and
  ``cacheScope`` (how long a client may keep them, and for whom);
- each ``SKILL.md`` in ``resources/list`` (name and description from its front matter,
  ``text/markdown``); every file of a skill through ``resources/read``;
- ``resources/directory/read`` (``{"uri": "skill://<skill-path>[/<dir>]"}``): a
  directory's direct children, subdirectories as ``inode/directory``; -32602 for a
  URI that is not a directory of a skill.

The folder is read again on each request (a stat per file; digests recomputed only for
files that changed), so answers always agree with the bytes served. A skill that
cannot be read is an error naming the file when ``add_skills`` is called; one that
breaks while serving is left out of the answers, with a warning in the log.
"""

from __future__ import annotations

import hashlib
import logging
import mimetypes
import os
import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import attrs

from mcpactor.protocol import types as t
from mcpactor.protocol.errors import InvalidParams
from mcpactor.server.frontmatter import FrontMatterError, parse_yaml, split_front_matter
from mcpactor.server.registry import decode_cursor, encode_cursor

if TYPE_CHECKING:
    from mcpactor.server.app import Server
    from mcpactor.server.context import Context

__all__ = ["SKILLS_EXTENSION", "SkillCatalog", "SkillError"]

log = logging.getLogger("mcpactor.server.skills")

SKILLS_EXTENSION = t.SKILLS_EXTENSION
SKILL_FILE = "SKILL.md"
SCHEME = "skill://"
DIRECTORY_MIME = "inode/directory"
#: A skill's name (the Agent Skills rules).
NAME_RULE = re.compile(r"^(?!.*--)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$")
#: What a URI's authority (a skill path's first segment) may hold (RFC 3986 reg-name).
REG_NAME = re.compile(r"^(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+$")
#: Beyond these a skill SHOULD NOT be served (SEP-2640); a warning is logged.
MAX_FILES = 512
MAX_BYTES = 16 * 1024 * 1024


class SkillError(ValueError):
    """A skill that cannot be served as it is: the message names the file and the fix."""


@attrs.frozen
class _FileInfo:
    rel: str  # path within the skill, posix
    size: int
    mtime_ns: int
    digest: str


@attrs.frozen
class Skill:
    """One skill as last read: where it is, its front matter and its files."""

    path: str  # the skill path (the URI's part before /SKILL.md)
    directory: Path
    frontmatter: dict[str, Any]
    files: tuple[_FileInfo, ...]

    @property
    def uri(self) -> str:
        """``skill://<path>/SKILL.md``."""
        return f"{SCHEME}{self.path}/{SKILL_FILE}"

    def entry(self) -> dict[str, Any]:
        """The skill entry of ``skills/list`` and ``skills/get``."""
        return {
            "uri": self.uri,
            "frontmatter": self.frontmatter,
            "resources": [{"uri": f"{SCHEME}{self.path}/{f.rel}", "digest": f.digest,
                           "size": f.size} for f in self.files],
        }

    def resource(self) -> t.Resource:
        """Its ``SKILL.md`` as ``resources/list`` shows it."""
        description = self.frontmatter.get("description")
        return t.Resource(
            uri=self.uri, name=str(self.frontmatter.get("name")),
            description=description if isinstance(description, str) else None,
            mime_type="text/markdown", size=self.files[0].size)


def _mime(rel: str) -> str:
    if rel.endswith(".md"):
        return "text/markdown"
    guessed, _ = mimetypes.guess_type(rel)
    return guessed or "application/octet-stream"


def _visible(name: str) -> bool:
    return not name.startswith(".")


class SkillCatalog:
    """The skills of one folder (see the module)."""

    def __init__(self, root: str | os.PathLike[str], *, directory_read: bool = True,
                 cache_ttl: float = 0.0, cache_scope: str = "private") -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise SkillError(f"add_skills({str(root)!r}): no such folder (give a folder of "
                             "skill folders, each with a SKILL.md, or one skill's folder)")
        if cache_scope not in ("private", "public"):
            raise ValueError(f"cache_scope must be 'private' or 'public', not {cache_scope!r}")
        self.directory_read = directory_read
        self.cache_ttl_ms = int(cache_ttl * 1000)
        self.cache_scope = cache_scope
        self._digests: dict[Path, tuple[int, int, str]] = {}
        self._broken: dict[Path, str] = {}
        self.skills: list[Skill] = self._scan(strict=True)
        if not self.skills:
            raise SkillError(f"add_skills({str(root)!r}): no {SKILL_FILE} in that folder or "
                             "below it (a skill is a folder with a SKILL.md)")

    # -- reading the folder -------------------------------------------------------------

    def _skill_dirs(self) -> list[tuple[str, Path]]:
        """``(skill path, directory)`` of every skill, sorted by path."""
        if (self.root / SKILL_FILE).is_file():
            return [(self.root.name, self.root)]
        found: list[tuple[str, Path]] = []
        for current, dirs, files in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if _visible(d))
            if SKILL_FILE in files:
                here = Path(current)
                found.append((here.relative_to(self.root).as_posix(), here))
                dirs[:] = []  # a skill's subfolders are its files, not more skills
        return sorted(found)

    def _scan(self, *, strict: bool) -> list[Skill]:
        skills: list[Skill] = []
        for path, directory in self._skill_dirs():
            try:
                skills.append(self._read_skill(path, directory))
                self._broken.pop(directory, None)
            except SkillError as exc:
                if strict:
                    raise
                if self._broken.get(directory) != str(exc):
                    log.warning("skill %s left out: %s", path, exc)
                    self._broken[directory] = str(exc)
        names: dict[str, str] = {}
        for skill in skills:
            name = str(skill.frontmatter["name"])
            if name in names:
                log.warning("two skills are named %r (%s and %s): names should be unique",
                            name, names[name], skill.path)
            names[name] = skill.path
        return skills

    def _read_skill(self, path: str, directory: Path) -> Skill:
        manifest = directory / SKILL_FILE
        where = str(manifest)
        try:
            text = manifest.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SkillError(f"{where}: cannot be read as UTF-8 text ({exc})") from None
        try:
            yaml, _, first = split_front_matter(text)
            frontmatter = parse_yaml(yaml, first)
        except FrontMatterError as exc:
            raise SkillError(f"{where}: {exc}") from None
        if not isinstance(frontmatter, dict):
            raise SkillError(f"{where}: the front matter must be a mapping (name: ..., "
                             "description: ...)")
        for key in ("name", "description"):
            value = frontmatter.get(key)
            if not isinstance(value, str) or not value:
                raise SkillError(f"{where}: the front matter needs a non-empty string "
                                 f"{key!r}")
        name = frontmatter["name"]
        segments = path.split("/")
        if not NAME_RULE.match(name):
            raise SkillError(f"{where}: the name {name!r} breaks the naming rules (1-64 "
                             "characters of a-z, 0-9 and '-', no leading, trailing or "
                             "doubled '-')")
        if segments[-1] != name:
            raise SkillError(f"{where}: the folder is {segments[-1]!r} but the name is "
                             f"{name!r}: name the folder as the skill (the name is the last "
                             "segment of its skill:// URI)")
        if not REG_NAME.match(segments[0]):
            raise SkillError(f"{where}: the folder {segments[0]!r} cannot be the authority "
                             "of a skill:// URI (use letters, digits and -._~)")
        files = [self._file(manifest, SKILL_FILE)]
        for current, dirs, names in os.walk(directory):
            dirs[:] = sorted(d for d in dirs if _visible(d))
            for file_name in sorted(names):
                full = Path(current) / file_name
                rel = full.relative_to(directory).as_posix()
                if rel == SKILL_FILE or not _visible(file_name) or not full.is_file():
                    continue
                if full.is_symlink() and not full.resolve().is_relative_to(directory):
                    continue  # a link out of the skill is not the skill's file
                files.append(self._file(full, rel))
        total = sum(f.size for f in files)
        if len(files) > MAX_FILES or total > MAX_BYTES:
            log.warning("skill %s has %d files, %d bytes: more than a skill should have "
                        "(%d files, %d bytes)", path, len(files), total, MAX_FILES, MAX_BYTES)
        return Skill(path, directory, frontmatter, tuple(files))

    def _file(self, full: Path, rel: str) -> _FileInfo:
        try:
            st = full.stat()
        except OSError as exc:
            raise SkillError(f"{full}: {exc.strerror}") from None
        cached = self._digests.get(full)
        if cached is not None and cached[:2] == (st.st_size, st.st_mtime_ns):
            digest = cached[2]
        else:
            try:
                digest = "sha256:" + hashlib.sha256(full.read_bytes()).hexdigest()
            except OSError as exc:
                raise SkillError(f"{full}: {exc.strerror}") from None
            self._digests[full] = (st.st_size, st.st_mtime_ns, digest)
        return _FileInfo(rel, st.st_size, st.st_mtime_ns, digest)

    def current(self) -> list[Skill]:
        """The skills as the folder holds them now."""
        self.skills = self._scan(strict=False)
        return self.skills

    # -- answers ---------------------------------------------------------------------------

    def _cache(self, out: dict[str, Any]) -> dict[str, Any]:
        out["ttlMs"] = self.cache_ttl_ms
        out["cacheScope"] = self.cache_scope
        return out

    def list_page(self, cursor: str | None, page_size: int) -> dict[str, Any]:
        """A ``skills/list`` result."""
        skills = self.current()
        start = decode_cursor(cursor)
        page = skills[start:start + page_size]
        out: dict[str, Any] = {"skills": [s.entry() for s in page]}
        if start + page_size < len(skills):
            out["nextCursor"] = encode_cursor(start + page_size)
        return self._cache(out)

    def get(self, uri: str) -> dict[str, Any] | None:
        """A ``skills/get`` result, or None when ``uri`` names no skill here."""
        for skill in self.current():
            if skill.uri == uri:
                return self._cache({"skill": skill.entry()})
        return None

    def resources(self) -> list[t.Resource]:
        """The ``SKILL.md`` of every skill, for ``resources/list``."""
        return [skill.resource() for skill in self.current()]

    def _locate(self, uri: str) -> tuple[Skill, str] | None:
        """The skill a ``skill://`` URI is in, and the path within it ("" for the
        skill's own directory)."""
        if not uri.startswith(SCHEME):
            return None
        rest = uri[len(SCHEME):].rstrip("/")
        for skill in self.current():
            if rest == skill.path:
                return skill, ""
            if rest.startswith(skill.path + "/"):
                inner = rest[len(skill.path) + 1:]
                parts = PurePosixPath(inner).parts
                if ".." in parts or any(p.startswith(".") for p in parts):
                    return None
                return skill, inner
        return None

    def read(self, uri: str) -> t.ReadResourceResult | None:
        """A skill file's contents (``resources/read``), or None when ``uri`` is no file
        of a skill."""
        found = self._locate(uri)
        if found is None:
            return None
        skill, inner = found
        info = next((f for f in skill.files if f.rel == inner), None)
        if info is None:
            return None
        data = (skill.directory / inner).read_bytes()
        mime = _mime(inner)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return t.ReadResourceResult(contents=[t.BlobResourceContents(
                uri=uri, mime_type=mime, blob=_b64(data))])
        return t.ReadResourceResult(contents=[t.TextResourceContents(
            uri=uri, mime_type=mime, text=text)])

    def directory(self, uri: str, cursor: str | None, page_size: int) -> dict[str, Any]:
        """A ``resources/directory/read`` result; -32602 for a URI that is no directory
        of a skill."""
        found = self._locate(uri)
        if found is None or (found[1] and not (found[0].directory / found[1]).is_dir()):
            raise InvalidParams(f"Invalid params: {uri} is not a directory of a skill",
                                data={"uri": uri})
        skill, inner = found
        prefix = f"{inner}/" if inner else ""
        children: dict[str, dict[str, Any]] = {}
        for f in skill.files:
            if not f.rel.startswith(prefix):
                continue
            head, sep, _ = f.rel[len(prefix):].partition("/")
            base = f"{SCHEME}{skill.path}/{prefix}{head}"
            if sep:
                children.setdefault(head, {"uri": base, "name": head,
                                           "mimeType": DIRECTORY_MIME})
            else:
                children[head] = {"uri": base, "name": head, "mimeType": _mime(head),
                                  "size": f.size}
        items = [children[k] for k in sorted(children)]
        start = decode_cursor(cursor)
        out: dict[str, Any] = {"resources": items[start:start + page_size]}
        if start + page_size < len(items):
            out["nextCursor"] = encode_cursor(start + page_size)
        return out


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode("ascii")


# -- the server side: capability, methods, resources -----------------------------------------


def capability(server: Server) -> dict[str, Any] | None:
    """The extension's settings for ``capabilities.extensions`` (None: no skills)."""
    catalogs = server.skill_catalogs
    if not catalogs:
        return None
    return {"directoryRead": True} if any(c.directory_read for c in catalogs) else {}


def install(server: Server) -> None:
    """Register the extension's methods on ``server`` (once): the method table parses
    their params and gates them on the declared extension (``protocol/methods.py``)."""
    if "skills/list" in server.custom_methods:
        return

    async def skills_list(params: t.ListSkillsRequestParams, ctx: Context) -> dict[str, Any]:
        cursor = params.cursor
        catalogs = server.skill_catalogs
        if len(catalogs) == 1:
            return catalogs[0].list_page(cursor, server.page_size)
        # Several folders: one list, in the order they were added.
        skills = [s for c in catalogs for s in c.current()]
        start = decode_cursor(cursor)
        page = skills[start:start + server.page_size]
        out: dict[str, Any] = {"skills": [s.entry() for s in page]}
        if start + server.page_size < len(skills):
            out["nextCursor"] = encode_cursor(start + server.page_size)
        return catalogs[0]._cache(out)

    async def skills_get(params: t.GetSkillRequestParams, ctx: Context) -> dict[str, Any]:
        uri = params.uri
        for catalog in server.skill_catalogs:
            found = catalog.get(uri)
            if found is not None:
                return found
        raise InvalidParams(f"Invalid params: no skill at {uri}", data={"uri": uri})

    async def directory_read(params: t.ReadDirectoryRequestParams,
                             ctx: Context) -> dict[str, Any]:
        uri, cursor = params.uri, params.cursor
        for catalog in server.skill_catalogs:
            if catalog.directory_read and catalog._locate(uri) is not None:
                return catalog.directory(uri, cursor, server.page_size)
        raise InvalidParams(f"Invalid params: {uri} is not a directory of a skill",
                            data={"uri": uri})

    server.custom_methods["skills/list"] = skills_list
    server.custom_methods["skills/get"] = skills_get
    server.custom_methods["resources/directory/read"] = directory_read


def list_resources(server: Server) -> list[t.Resource]:
    """The skills' ``SKILL.md`` resources, for ``resources/list``."""
    return [r for c in server.skill_catalogs for r in c.resources()]


def read(server: Server, uri: str) -> t.ReadResourceResult | None:
    """A skill file (``resources/read``), or None when no skill serves ``uri``."""
    for catalog in server.skill_catalogs:
        result = catalog.read(uri)
        if result is not None:
            return result
    return None

