"""The user guide's examples (docs/examples/) run: each server in a real process, its
``demo`` client code against it; the testing example under pytest; the tracing example
recorded and replayed; the deployment example as a program and under hypercorn. And
every Python block of the guide (docs/guide/) is an excerpt of one of them, so what the
pages show is what runs."""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import trio

from mcpactor import connect_http, connect_stdio
from mcpactor.transports.http_client import HttpClientError, HttpPool

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
GUIDE = ROOT / "docs" / "guide"
MCPACTOR = [sys.executable, "-m", "mcpactor"]

#: Each guide page and the example it is built on.
PAGES = {
    "tools.md": "tools_example.py",
    "resources.md": "resources_example.py",
    "prompts.md": "prompts_example.py",
    "context.md": "context_example.py",
    "lifespan-and-dependencies.md": "lifespan_example.py",
    "middleware.md": "middleware_example.py",
    "composition-and-proxying.md": "composition_example.py",
    "testing.md": "testing_example.py",
    "tracing-and-replay.md": "tracing_example.py",
    "deployment.md": "deployment_example.py",
    "authorization.md": "auth_example.py",
}


def _load(name: str) -> ModuleType:
    path = EXAMPLES / name
    spec = importlib.util.spec_from_file_location(f"guide_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


#: Each era a client may speak: the mode it connects with, and the version it speaks
#: then to an mcpactor server.
ERAS = {"legacy": "2025-11-25", "auto": "2026-07-28"}


async def _demo_over_stdio(name: str, *extra: str, mode: str = "auto") -> ModuleType:
    module = _load(name)
    options: dict[str, Any] = {"mode": mode}
    if hasattr(module, "handlers"):
        options["handlers"] = module.handlers
    command = [*MCPACTOR, "run", f"{EXAMPLES / name}:server", *extra]
    async with connect_stdio(command, **options) as client:
        assert client.protocol_version == ERAS[mode]
        await module.demo(client)
    return module


@pytest.mark.parametrize("mode", sorted(ERAS))
@pytest.mark.parametrize("name", ["tools_example.py", "resources_example.py",
                                  "prompts_example.py", "context_example.py",
                                  "lifespan_example.py", "middleware_example.py",
                                  "composition_example.py"])
async def test_an_example_server_and_its_client(name: str, mode: str) -> None:
    """Every example, its client speaking a handshake revision and 2026-07-28."""
    await _demo_over_stdio(name, mode=mode)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_resource_updates_reach_listeners(mode: str) -> None:
    module = _load("resources_example.py")
    assert await module.demo_updates(mode) == ["notes://note/1"]


async def test_a_mounted_server_is_live() -> None:
    module = _load("composition_example.py")
    names = await module.demo_live()
    assert "weather_alerts" in names


def test_the_testing_example_runs_under_pytest(tmp_path: Path) -> None:
    ini = tmp_path / "pytest.ini"
    ini.write_text("[pytest]\n")  # no trio_mode: the plugin needs none
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-c", str(ini), "--rootdir", str(tmp_path),
         "-p", "no:cacheprovider", str(EXAMPLES / "testing_example.py")],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout  # the mcp_client test in both eras


@pytest.mark.parametrize("mode", sorted(ERAS))
async def test_the_tracing_example_records_and_replays(tmp_path: Path, mode: str) -> None:
    trace = tmp_path / "bank.jsonl"
    await _demo_over_stdio("tracing_example.py", "--trace", str(trace), mode=mode)
    fixed = f"{EXAMPLES / 'tracing_example.py'}:fixed"
    for argv, status in ((["replay", str(trace)], 0), (["trace", "show", str(trace)], 0),
                         (["replay", str(trace), "--server", fixed], 1)):
        done = await trio.run_process([*MCPACTOR, *argv], capture_stdout=True,
                                      capture_stderr=True, check=False)
        out = done.stdout.decode()
        assert done.returncode == status, (argv, out, done.stderr.decode())
        if argv[0] == "replay" and len(argv) == 2:
            assert "faithful" in out  # the race, again
        elif argv[0] == "trace":
            assert "withdraw" in out
        else:
            # The fixed code on the recorded inputs: the overdraft is refused now.
            assert "took 80, -60 left" in out and "refused" in out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _wait_healthy(base: str, proc: trio.Process) -> None:
    pool = HttpPool()
    try:
        for _ in range(200):
            assert proc.poll() is None, "the server exited"
            try:
                response = await pool.request("GET", base + "/health")
                body = await response.read()
                await response.aclose()
                if response.status == 200 and b'"ok"' in body:
                    return
            except HttpClientError:
                pass  # not listening yet
            await trio.sleep(0.05)
        raise AssertionError("the server never became healthy")
    finally:
        await pool.aclose()


async def _serve_and_stop(command: list[str], port: int, log: Path, mode: str = "auto",
                          **options: Any) -> int:
    """Start ``command``, wait for /health, run the example's client (connected in
    ``mode``) against it, stop it with SIGTERM; its exit status (its stderr is in
    ``log``)."""
    with log.open("wb") as err:
        proc = await trio.lowlevel.open_process(command, stderr=err, **options)
        try:
            await _wait_healthy(f"http://127.0.0.1:{port}", proc)
            module = _load("deployment_example.py")
            async with connect_http(f"http://127.0.0.1:{port}/mcp", mode=mode) as client:
                assert client.protocol_version == ERAS[mode]
                await module.demo(client)
            proc.send_signal(signal.SIGTERM)
            with trio.fail_after(30):
                return await proc.wait()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


@pytest.mark.parametrize("mode", sorted(ERAS))
async def test_the_deployment_example_as_a_program_stops_cleanly_on_sigterm(
        tmp_path: Path, mode: str) -> None:
    port = _free_port()
    log = tmp_path / "stderr"
    status = await _serve_and_stop([sys.executable, str(EXAMPLES / "deployment_example.py")],
                                   port, log, mode, env={**os.environ, "PORT": str(port)})
    assert status == 0, log.read_text()
    assert "deployment-example: stopped" in log.read_text()


async def test_the_deployment_example_under_hypercorn(tmp_path: Path) -> None:
    port = _free_port()
    hypercorn = Path(sys.executable).with_name("hypercorn")
    log = tmp_path / "stderr"
    await _serve_and_stop(
        [str(hypercorn), "--worker-class", "trio", "--bind", f"127.0.0.1:{port}",
         "deployment_example:app"], port, log, cwd=EXAMPLES)
    assert "deployment-example: stopped" in log.read_text()  # the ASGI lifespan closed it


def _python_blocks(text: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"```python\n(.*?)```", text, re.S)]


def _normalized(code: str) -> str:
    return "\n".join(line.rstrip() for line in code.strip().splitlines())


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_python_block_of_a_guide_page_is_from_its_example(page: str) -> None:
    text = (GUIDE / page).read_text()
    example = PAGES[page]
    assert f"docs/examples/{example}" in text, f"{page} does not name its example"
    sources = {p.name: _normalized(p.read_text()) for p in EXAMPLES.glob("*.py")}
    blocks = _python_blocks(text)
    assert blocks, f"{page} shows no code"
    for block in blocks:
        code = _normalized(block)
        assert any(code in source for source in sources.values()), (
            f"{page}: this block is not in docs/examples/ (keep the pages and the "
            f"examples the same):\n{block}")


def test_the_guide_lists_every_page() -> None:
    index = (GUIDE / "README.md").read_text()
    for page in PAGES:
        assert f"({page})" in index, page
    assert sorted(p.name for p in GUIDE.glob("*.md") if p.name != "README.md") == sorted(PAGES)
