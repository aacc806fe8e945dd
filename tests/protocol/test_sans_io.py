"""The protocol core is sans-I/O: importing all of it must not import trio."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mcpactor.protocol

PROTOCOL_DIR = Path(mcpactor.protocol.__file__).parent


def test_protocol_package_never_imports_trio_or_sockets() -> None:
    modules = sorted(
        "mcpactor.protocol." + ".".join(p.relative_to(PROTOCOL_DIR).with_suffix("").parts)
        for p in PROTOCOL_DIR.rglob("*.py")
        if p.name != "__init__.py"
    )
    assert "mcpactor.protocol.connection" in modules
    code = (
        "import sys, importlib\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "bad = sorted(n for n in sys.modules if n.split('.')[0] in ('trio', 'socket', 'asyncio', 'anyio', 'hypercorn', 'h11'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"protocol/ pulled in: {out.stdout.strip()}"
