"""``mcpactor call`` against servers nobody here wrote: the npm server-everything and
the official Python SDK's server, over stdio."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

MCPACTOR = [sys.executable, "-m", "mcpactor", "call"]
SDK_SERVER = shlex.join([sys.executable, str(Path(__file__).with_name("sdk_mcpserver.py"))])


def _call(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPACTOR, *argv], capture_output=True, text=True, timeout=120)


def test_call_against_server_everything(server_everything: list[str]) -> None:
    target = shlex.join(server_everything)
    listed = _call(target)
    assert listed.returncode == 0, listed.stderr
    assert any(line.startswith("echo(message)") for line in listed.stdout.splitlines())
    echoed = _call(target, "echo", '{"message": "hi ✓"}')
    assert (echoed.returncode, echoed.stdout) == (0, "Echo: hi ✓\n"), echoed.stderr


def test_call_against_the_sdk_server() -> None:
    weather = _call(SDK_SERVER, "weather", '{"city": "Oslo"}', "--json")
    assert weather.returncode == 0, weather.stderr
    # The SDK's structured result passed the client's outputSchema check on the way.
    assert json.loads(weather.stdout)["structuredContent"]["city"] == "Oslo"
    failed = _call(SDK_SERVER, "fail", '{"reason": "on purpose"}')
    assert failed.returncode == 1 and "on purpose" in failed.stdout
