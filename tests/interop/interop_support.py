"""Helpers shared by the interop tests (imported by name: this folder is on sys.path).

* ``ROOT``: the checkout; every subprocess runs with it as the working directory.
* ``OUR_EVERYTHING``: the command that serves ``examples/everything_server.py`` over stdio.
* ``SERVER_EVERYTHING_ENTRY``: where ``scripts/npm-interop.sh install`` puts the npm
  reference server (the ``server_everything`` fixture in conftest.py installs it).
* ``wait_until``: wait (bounded) until a condition on collected data holds.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

#: Our everything server, run through the CLI exactly as a user would.
OUR_EVERYTHING = [
    sys.executable,
    "-m",
    "mcpactor.cli",
    "run",
    "examples/everything_server.py:server",
]

NPM_SCRIPT = ROOT / "scripts" / "npm-interop.sh"
SERVER_EVERYTHING_ENTRY = (
    ROOT
    / ".cache"
    / "npm-interop"
    / "node_modules"
    / "@modelcontextprotocol"
    / "server-everything"
    / "dist"
    / "index.js"
)


def subprocess_env() -> dict[str, str]:
    """The environment for server subprocesses: this one, with the checkout importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


async def wait_until(
    condition: Callable[[], bool], what: str, timeout: float = 5.0, *, fail: bool = True
) -> bool:
    """Poll ``condition`` until it holds; after ``timeout`` seconds fail the test with
    ``what`` (or, with ``fail=False``, return False so the caller can say more).

    For things that arrive asynchronously (notifications, progress callbacks that a
    client runs in tasks of their own), never to assert on how long something took.
    """
    with trio.move_on_after(timeout):
        while True:
            if condition():
                return True
            await trio.sleep(0.01)
    if fail:
        pytest.fail(f"timed out after {timeout} s waiting for {what}")
    return False
