"""The skills extension (SEP-2640): a folder of SKILL.md files served as skills/list,
skills/get, skill:// resources and directory reads; front matter read as YAML; every
way a skill folder can be wrong is an error naming the file."""

from __future__ import annotations

import hashlib
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from mcpactor import Server
from mcpactor.protocol.errors import CapabilityNotSupported, RequestError
from mcpactor.server.frontmatter import FrontMatterError, parse_yaml, split_front_matter
from mcpactor.server.skills import SKILLS_EXTENSION, SkillError
from mcpactor.testing.client import open_client

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "skills"


def skills_server(root: Path, **options: Any) -> Server:
    server = Server("skills", page_size=options.pop("page_size", 100))
    server.add_skills(root, **options)
    return server


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A copy of examples/skills to change."""
    copy = tmp_path / "skills"
    shutil.copytree(EXAMPLES, copy)
    return copy


def write_skill(root: Path, path: str, front: str, files: dict[str, bytes] | None = None) -> Path:
    directory = root / path
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "SKILL.md").write_text(f"---\n{front}---\n\nBody.\n")
    for name, data in (files or {}).items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_bytes(data)
    return directory


# -- front matter ----------------------------------------------------------------------------


def test_front_matter_is_read_as_yaml() -> None:
    text = ("---\nname: x\ndescription: >\n  one\n  two\n\n  three\nlicense: MIT  # note\n"
            "metadata:\n  version: '1.0'\n  count: 3\n  ok: true\n  none: ~\n  tags: [a, 'b c']\n"
            "compat:\n  - claude\n  - name: y\n    v: 2\nscript: |\n  a\n    b\n---\nbody\n")
    yaml, body, first = split_front_matter(text)
    assert body == "body\n" and first == 2
    assert parse_yaml(yaml) == {
        "name": "x", "description": "one two\nthree\n", "license": "MIT",
        "metadata": {"version": "1.0", "count": 3, "ok": True, "none": None,
                     "tags": ["a", "b c"]},
        "compat": ["claude", {"name": "y", "v": 2}], "script": "a\n  b\n"}
    assert parse_yaml('d: "a\\tb \\u00e9"\nplain: goes\n  on\n') == {
        "d": "a\tb é", "plain": "goes on"}


@pytest.mark.parametrize(("source", "message"), [
    ("a: &anchor 1\n", "anchors, aliases and tags"),
    ("a: 1\na: 2\n", "the key 'a' appears twice"),
    ("a: 1\n    b: 2\n", "unexpected indentation"),
    ("a:\n\t- 1\n", "a tab in the indentation"),
    ("a: [1, 2\n", "expected ',' or ']'"),
    ("just text\n", "expected 'key: value'"),
    ("a: 'open\n", "never closed"),
])
def test_front_matter_errors_name_the_line(source: str, message: str) -> None:
    with pytest.raises(FrontMatterError) as err:
        parse_yaml("x: 0\n" + source, first_line=2)
    assert message in str(err.value) and str(err.value).startswith("line ")
    assert err.value.line is not None and err.value.line >= 3


def test_front_matter_must_be_there() -> None:
    with pytest.raises(FrontMatterError, match="does not begin with '---'"):
        split_front_matter("# no front matter\n")
    with pytest.raises(FrontMatterError, match="no closing '---'"):
        split_front_matter("---\nname: x\n")


# -- serving ----------------------------------------------------------------------------------


async def test_capability_list_and_get() -> None:
    async with open_client(skills_server(EXAMPLES)) as client:
        caps = client.server_capabilities
        assert caps["extensions"] == {SKILLS_EXTENSION: {"directoryRead": True}}
        assert "resources" in caps
        listed = await client.list_skills()
        assert listed.ttl_ms == 0 and listed.cache_scope == "private"
        entries = {e["uri"]: e for e in listed.skills}
        assert list(entries) == ["skill://code-review/SKILL.md",
                                 "skill://pdf-processing/SKILL.md"]
        pdf = entries["skill://pdf-processing/SKILL.md"]
        assert pdf["frontmatter"]["name"] == "pdf-processing"
        assert pdf["frontmatter"]["metadata"] == {"author": "mcpactor examples", "version": "1.0"}
        files = {r["uri"]: r for r in pdf["resources"]}
        assert pdf["resources"][0]["uri"] == pdf["uri"]  # SKILL.md itself, first
        assert set(files) == {pdf["uri"], "skill://pdf-processing/references/FORMS.md",
                              "skill://pdf-processing/scripts/fill_form.py"}
        for uri, item in files.items():
            data = (EXAMPLES / uri.removeprefix("skill://")).read_bytes()
            assert item["size"] == len(data)
            assert item["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
        got = await client.get_skill(pdf["uri"])
        assert got.skill == pdf and got.extra == {} and got.ttl_ms == 0
        with pytest.raises(RequestError) as unknown:
            await client.get_skill("skill://nope/SKILL.md")
        assert unknown.value.code == -32602
        with pytest.raises(RequestError) as bad:
            await client.request("skills/get", {"uri": 3})
        assert bad.value.code == -32602 and bad.value.data["path"] == "uri"


async def test_list_pages_never_split_an_entry() -> None:
    async with open_client(skills_server(EXAMPLES, page_size=1)) as client:
        first = await client.list_skills()
        assert len(first.skills) == 1 and first.next_cursor
        second = await client.list_skills(first.next_cursor)
        assert len(second.skills) == 1 and second.next_cursor is None
        assert first.skills[0]["uri"] != second.skills[0]["uri"]
        with pytest.raises(RequestError) as bad:
            await client.list_skills("bogus")
        assert bad.value.code == -32602


async def test_skill_files_are_resources() -> None:
    async with open_client(skills_server(EXAMPLES)) as client:
        listed = {r.uri: r for r in await client.list_all_resources()}
        manifest = listed["skill://code-review/SKILL.md"]
        assert manifest.name == "code-review" and manifest.mime_type == "text/markdown"
        assert manifest.description is not None and manifest.description.startswith("Review")
        read = await client.read_resource("skill://code-review/SKILL.md")
        [contents] = read.contents
        assert contents.mime_type == "text/markdown"
        assert contents.text == (EXAMPLES / "code-review" / "SKILL.md").read_text()  # type: ignore[union-attr]
        script = (await client.read_resource("skill://pdf-processing/scripts/fill_form.py")).contents[0]
        assert script.mime_type == "text/x-python"
        with pytest.raises(RequestError) as missing:
            await client.read_resource("skill://pdf-processing/../code-review/SKILL.md")
        assert missing.value.code == -32002


async def test_binary_files_are_blobs(folder: Path) -> None:
    (folder / "pdf-processing" / "assets").mkdir()
    (folder / "pdf-processing" / "assets" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff")
    async with open_client(skills_server(folder)) as client:
        [blob] = (await client.read_resource("skill://pdf-processing/assets/logo.png")).contents
        assert blob.mime_type == "image/png" and blob.blob == "iVBORw0KGgr/"  # type: ignore[union-attr]


async def test_directory_read() -> None:
    async with open_client(skills_server(EXAMPLES)) as client:
        top = await client.read_directory("skill://pdf-processing")
        assert [(r["name"], r["mimeType"]) for r in top.resources] == [
            ("SKILL.md", "text/markdown"), ("references", "inode/directory"),
            ("scripts", "inode/directory")]
        inner = await client.read_directory("skill://pdf-processing/references")
        assert [r["uri"] for r in inner.resources] == [
            "skill://pdf-processing/references/FORMS.md"]
        for not_a_dir in ("skill://pdf-processing/SKILL.md", "skill://nope",
                          "skill://pdf-processing/../code-review"):
            with pytest.raises(RequestError) as err:
                await client.read_directory(not_a_dir)
            assert err.value.code == -32602


async def test_without_directory_read_it_is_not_offered() -> None:
    async with open_client(skills_server(EXAMPLES, directory_read=False,
                                         cache_ttl=60, cache_scope="public")) as client:
        assert client.server_capabilities["extensions"] == {SKILLS_EXTENSION: {}}
        listed = await client.list_skills()
        assert listed.ttl_ms == 60000 and listed.cache_scope == "public"
        # Not declared: the client does not even send it; the server refuses it (-32601).
        with pytest.raises(CapabilityNotSupported):
            await client.read_directory("skill://pdf-processing")
    bare = Server("bare")
    async with open_client(bare) as client:
        assert "extensions" not in client.server_capabilities


async def test_changes_on_disk_are_served(folder: Path, caplog: pytest.LogCaptureFixture) -> None:
    server = skills_server(folder)
    async with open_client(server) as client:
        before = (await client.get_skill("skill://code-review/SKILL.md")).skill
        checklist = folder / "code-review" / "references" / "CHECKLIST.md"
        checklist.write_text(checklist.read_text() + "- One more thing.\n")
        after = (await client.get_skill("skill://code-review/SKILL.md")).skill
        assert before["resources"][1]["digest"] != after["resources"][1]["digest"]
        write_skill(folder, "team/release-notes", "name: release-notes\ndescription: Notes.\n")
        listed = await client.list_skills()
        assert "skill://team/release-notes/SKILL.md" in [e["uri"] for e in listed.skills]
        (folder / "pdf-processing" / "SKILL.md").write_text("no front matter\n")
        with caplog.at_level(logging.WARNING, logger="mcpactor.server.skills"):
            listed = await client.list_skills()
        assert "skill://pdf-processing/SKILL.md" not in [e["uri"] for e in listed.skills]
        assert "skill pdf-processing left out" in caplog.text


def test_one_skill_folder_is_one_skill() -> None:
    server = skills_server(EXAMPLES / "pdf-processing")
    [catalog] = server.skill_catalogs
    assert [s.uri for s in catalog.skills] == ["skill://pdf-processing/SKILL.md"]


@pytest.mark.parametrize(("path", "front", "message"), [
    ("tool", "name: other\ndescription: d\n", "the folder is 'tool' but the name is 'other'"),
    ("Bad--Name", "name: Bad--Name\ndescription: d\n", "breaks the naming rules"),
    ("nodesc", "name: nodesc\n", "needs a non-empty string 'description'"),
    ("listy", "- a\n- b\n", "must be a mapping"),
    ("broken", "name: broken\ndescription: [x\n", "line 3: expected ',' or ']'"),
])
def test_a_bad_skill_is_an_error_naming_the_file(tmp_path: Path, path: str, front: str,
                                                 message: str) -> None:
    write_skill(tmp_path, path, front)
    with pytest.raises(SkillError) as err:
        Server("s").add_skills(tmp_path)
    assert message in str(err.value) and str(tmp_path / path / "SKILL.md") in str(err.value)


def test_folders_without_skills(tmp_path: Path) -> None:
    with pytest.raises(SkillError, match="no such folder"):
        Server("s").add_skills(tmp_path / "missing")
    with pytest.raises(SkillError, match=r"no SKILL\.md"):
        Server("s").add_skills(tmp_path)
    server = Server("s")
    server.add_skills(EXAMPLES)
    with pytest.raises(SkillError, match="already served"):
        server.add_skills(EXAMPLES / "pdf-processing")
