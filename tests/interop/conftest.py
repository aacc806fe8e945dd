"""Fixtures of the interop tests: see interop_support.py for the shared helpers."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from interop_support import NPM_SCRIPT, ROOT, SERVER_EVERYTHING_ENTRY

#: Upper bound for one npm install (the first run downloads the packages).
NPM_INSTALL_TIMEOUT = 300


@pytest.fixture(scope="session")
def server_everything() -> list[str]:
    """The stdio command of the npm ``@modelcontextprotocol/server-everything``.

    Installs it first with ``scripts/npm-interop.sh install`` (idempotent), so CI needs
    nothing else. FAILS -- never skips -- when node, npm or the package is missing.
    """
    node = shutil.which("node")
    if node is None:
        pytest.fail(
            "interop: `node` is not on PATH; the server-everything tests need Node.js "
            "(and npm, for the first install) to run @modelcontextprotocol/server-everything",
            pytrace=False,
        )
    if shutil.which("npm") is None and not SERVER_EVERYTHING_ENTRY.is_file():
        pytest.fail(
            "interop: `npm` is not on PATH and server-everything is not installed at "
            f"{SERVER_EVERYTHING_ENTRY}; install npm or run `scripts/npm-interop.sh install`",
            pytrace=False,
        )
    try:
        proc = subprocess.run(
            ["bash", str(NPM_SCRIPT), "install"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=NPM_INSTALL_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(
            f"interop: `scripts/npm-interop.sh install` took more than {NPM_INSTALL_TIMEOUT} s",
            pytrace=False,
        )
    if proc.returncode != 0:
        pytest.fail(
            f"interop: `scripts/npm-interop.sh install` failed (exit {proc.returncode}):\n"
            f"{proc.stdout}\n{proc.stderr}",
            pytrace=False,
        )
    if not SERVER_EVERYTHING_ENTRY.is_file():
        pytest.fail(
            f"interop: the install finished but {SERVER_EVERYTHING_ENTRY} is missing",
            pytrace=False,
        )
    return [node, str(SERVER_EVERYTHING_ENTRY), "stdio"]
