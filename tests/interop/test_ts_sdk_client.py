"""The official TypeScript SDK client (``@modelcontextprotocol/sdk``, installed by
``scripts/npm-interop.sh``) against our everything server over stdio and HTTP.

The SDK (1.32.2, the newest on npm) speaks the handshake revisions only: its latest is
2025-11-25 and it has no ``server/discover``. So it negotiates 2025-11-25 with our
server, on the same URL where our client, at the same time, speaks 2026-07-28: one
server, both eras. Tools, sampling and elicitation (server requests the SDK answers),
progress, prompts and resources.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from interop_support import ROOT, SERVER_EVERYTHING_ENTRY
from process_support import http_process

from mcpactor import connect_http

pytestmark = pytest.mark.interop

SCRIPT = Path(__file__).resolve().parent / "ts_sdk_client.mjs"
SDK_DIR = SERVER_EVERYTHING_ENTRY.parents[2] / "sdk"
EXAMPLE = str(ROOT / "examples" / "everything_server.py")


def _sdk_version() -> str:
    return str(json.loads((SDK_DIR / "package.json").read_text())["version"])


def _run_ts(*args: str) -> dict[str, object]:
    node = shutil.which("node")
    assert node is not None
    proc = subprocess.run([node, str(SCRIPT), str(SDK_DIR), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    out: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    for url, _ in http_process([sys.executable, EXAMPLE], cwd=ROOT):
        yield url


def _check(out: dict[str, object]) -> None:
    assert out["protocolVersion"] == "2025-11-25"
    assert out["serverName"] == "mcp-conformance-test-server"
    assert isinstance(out["tools"], int) and out["tools"] > 20
    assert out["simple"] == "This is a simple text response for testing."
    assert out["sampling"] == "LLM response: ts sampled: 1 message(s)"
    assert isinstance(out["elicitation"], str) and "ts-user" in out["elicitation"]
    # The last progress and the result leave together (one write): the SDK settles
    # the request before it runs its progress callback for what came in the same read,
    # and drops the 100 then (on the wire it comes first: tests/client checks ours).
    assert out["progress"] in ([0, 50], [0, 50, 100])
    assert out["prompt"] == 1
    assert out["resource"] == "This is the content of the static text resource."


def test_the_sdk_has_no_2026_revision(server_everything: list[str]) -> None:
    # Why the SDK negotiates 2025-11-25 below: say so if a newer SDK changes it.
    text = (SDK_DIR / "dist" / "esm" / "types.js").read_text()
    assert _sdk_version() == "1.32.2"
    assert "LATEST_PROTOCOL_VERSION = '2025-11-25'" in text
    assert "2026-07-28" not in text


def test_ts_sdk_client_over_stdio(server_everything: list[str]) -> None:
    _check(_run_ts("stdio", sys.executable, EXAMPLE))


async def test_ts_sdk_client_over_http_beside_a_2026_client(
        server_everything: list[str], http_url: str) -> None:
    # Our 2026-07-28 client holds a subscription open on the same URL while the SDK's
    # handshake session runs: each era is served as itself.
    with trio.fail_after(60):
        async with connect_http(http_url, timeout=10) as client:
            assert client.protocol_version == "2026-07-28"
            async with client.listen(tools=True) as sub:
                out = await trio.to_thread.run_sync(_run_ts, "http", http_url)
                _check(out)
                await client.call_tool("test_trigger_tool_change", {})
                note = await sub.next(timeout=5)
                assert note.method == "notifications/tools/list_changed"
                await client.call_tool("test_trigger_tool_change", {})
