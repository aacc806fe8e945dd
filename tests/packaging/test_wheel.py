"""The package as users get it: an sdist carrying the tests, examples and docs, a wheel
built from it, installed in a fresh venv outside the repository, where ``mcpactor
demo`` and a small server and client run, without any extra installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

_SKIP_IN_COPY = shutil.ignore_patterns(
    ".git", ".venv", ".cache", "node_modules", "__pycache__", "*.egg-info", "build",
    "dist", ".pytest_cache", ".mypy_cache", ".ruff_cache")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``(sdist, wheel)``: built from a copy of the checkout (the build writes beside
    its sources), the wheel from the sdist, as ``python -m build`` does."""
    work = tmp_path_factory.mktemp("build")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=_SKIP_IN_COPY)
    dist = work / "dist"
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(source)],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (sdist,) = dist.glob("mcpactor-*.tar.gz")
    (wheel,) = dist.glob("mcpactor-*.whl")
    return sdist, wheel


def test_the_sdist_carries_tests_examples_and_docs(built: tuple[Path, Path]) -> None:
    sdist, _ = built
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for expected in ("tests/conftest.py", "tests/packaging/test_wheel.py",
                     "examples/everything_server.py", "docs/architecture.md",
                     "docs/conformance.md", "traces", "README.md", "LICENSE", "Makefile",
                     "mcpactor/demo/server.py", "replay/engine.py"):
        assert expected in names, expected
    assert not any("__pycache__" in name for name in names)


def test_the_wheel_carries_the_demo_and_no_tests(built: tuple[Path, Path]) -> None:
    _, wheel = built
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert {"mcpactor/demo/__init__.py", "mcpactor/demo/server.py",
            "mcpactor/demo/client.py", "mcpactor/py.typed", "mcpactor/replay/py.typed",
            "mcpactor/replay/exact/engine.py"} <= names
    # Nothing with a generic name in site-packages: the replayer is mcpactor.replay.
    assert not any(name.startswith(("tests/", "examples/", "docs/", "replay/"))
                   for name in names)
    metadata_file = next(n for n in names if n.endswith(".dist-info/METADATA"))
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(metadata_file).decode()
    requires = [line for line in text.splitlines() if line.startswith("Requires-Dist:")]
    plain = [r for r in requires if "extra ==" not in r]
    assert not any("hypercorn" in r or "PyJWT" in r or "pydantic" in r for r in plain), plain
    for extra in ("hypercorn", "auth", "testing"):
        assert f"Provides-Extra: {extra}" in text


def _runtime_closure() -> dict[str, metadata.Distribution]:
    """The installed distributions mcpactor needs without extras, transitively."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    todo = list(project["dependencies"])
    found: dict[str, metadata.Distribution] = {}
    while todo:
        req = Requirement(todo.pop())
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        key = canonicalize_name(req.name)
        if key in found:
            continue
        found[key] = metadata.distribution(req.name)
        todo.extend(found[key].requires or [])
    return found


def _link_dependencies(target: Path) -> None:
    """A folder with links to just the runtime dependencies' modules (no extras), taken
    from this environment: the fresh venv reads it through a .pth file, offline."""
    target.mkdir()
    for dist in _runtime_closure().values():
        base = Path(str(dist.locate_file("")))
        tops = {Path(str(f)).parts[0] for f in dist.files or []}
        for top in tops:
            if top in ("..", "__pycache__") or top.endswith((".dist-info", ".pth")):
                continue
            if (base / top).exists() and not (target / top).exists():
                (target / top).symlink_to(base / top)


@pytest.fixture(scope="module")
def venv(built: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv outside the repository with the wheel installed (and nothing else
    of ours): its folder."""
    _, wheel = built
    home = tmp_path_factory.mktemp("user")
    env_dir = home / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)],
                   check=True, timeout=120)
    python = env_dir / "bin" / "python"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
         "--no-index", "--quiet", str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    site = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip())
    _link_dependencies(home / "deps")
    (site / "mcpactor-test-deps.pth").write_text(str(home / "deps") + "\n")
    yield env_dir


def _run(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(list(args), capture_output=True, text=True, timeout=300, cwd=cwd,
                          env=env)


def test_the_installed_package_is_the_wheel_without_extras(venv: Path, tmp_path: Path) -> None:
    done = _run(venv, str(venv / "bin" / "python"), "-c",
                "import importlib.util, mcpactor, mcpactor.replay\n"
                "assert importlib.util.find_spec('replay') is None\n"
                "print(mcpactor.__file__)\n"
                "print([m for m in ('hypercorn', 'jwt', 'cryptography', 'pydantic')"
                " if importlib.util.find_spec(m) is not None])", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    where, missing = done.stdout.splitlines()
    assert Path(where).is_relative_to(venv) and not Path(where).is_relative_to(ROOT)
    assert missing == "[]"


def test_mcpactor_demo_runs_from_the_wheel(venv: Path, tmp_path: Path) -> None:
    done = _run(venv, str(venv / "bin" / "mcpactor"), "demo", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("replay: faithful") == 2, done.stdout
    assert (tmp_path / "demo-trace.jsonl").is_file()
    usage = _run(venv, str(venv / "bin" / "mcpactor"), "--help", cwd=tmp_path).stdout
    assert any(line.split()[:1] == ["demo"] for line in usage.splitlines()), usage


def test_a_small_server_and_client_run_from_the_wheel(venv: Path, tmp_path: Path) -> None:
    (tmp_path / "server.py").write_text(
        "from mcpactor import Server\n"
        "server = Server('tiny')\n"
        "@server.tool\n"
        "async def add(a: int, b: int) -> int:\n"
        "    '''Add.'''\n"
        "    return a + b\n")
    (tmp_path / "client.py").write_text(
        "import sys\n"
        "import trio\n"
        "import mcpactor\n"
        "async def main():\n"
        "    command = [sys.executable, '-m', 'mcpactor', 'run', 'server.py:server']\n"
        "    async with mcpactor.connect_stdio(command, timeout=30) as client:\n"
        "        result = await client.call_tool('add', {'a': 2, 'b': 3})\n"
        "        print(result.data)\n"
        "trio.run(main)\n")
    done = _run(venv, str(venv / "bin" / "python"), "client.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{'result': 5}"
    refused = _run(venv, str(venv / "bin" / "mcpactor"), "run", "server.py:server",
                   "--transport", "http", "--server", "hypercorn", cwd=tmp_path)
    assert refused.returncode == 2
    assert "pip install 'mcpactor[hypercorn]'" in refused.stderr
    assert "Traceback" not in refused.stderr
