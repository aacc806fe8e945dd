"""Every name the README shows being taken from the ``mcpactor`` package is there.

The README's Python blocks import from ``mcpactor`` (``from mcpactor import X``) and
use ``mcpactor.X``; its prose names classes in backticks (the connection-limits table
names ``HttpOptions``). Each such name must resolve in a fresh interpreter, through the
package's lazy exports.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"

#: Names in backticks that the README does not present as ``mcpactor``'s (types of the
#: user's own, of other packages, or of submodules it names along with them).
NOT_OURS = {"Booking", "CONNECT", "ClientScript", "Connection", "Enum", "Literal",
            "MCPServer", "OAuthClient", "TypeError", "TypedDict", "Weather", "Db"}


def _names() -> set[str]:
    text = README.read_text()
    names: set[str] = set()
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        for line in re.findall(r"^from mcpactor import ([^\n]+)$", block, re.M):
            names.update(n.strip() for n in line.split(",") if n.strip())
        # mcpactor.X, not a submodule (``from mcpactor.auth import ...``, ``mcpactor.a.b``)
        names.update(re.findall(r"\bmcpactor\.([A-Za-z_]\w*)\b(?![.]| import)", block))
    names.update(re.findall(r"\bmcpactor\.([A-Z]\w*)", text))
    names.update(n for n in re.findall(r"`([A-Z][A-Za-z]+)`", text) if n not in NOT_OURS)
    return names


def test_the_readme_names_resolve() -> None:
    names = sorted(_names())
    assert "HttpOptions" in names and "Limits" in names and "connect_http" in names
    code = ("import mcpactor, sys\n"
            f"missing = [n for n in {names!r} if not hasattr(mcpactor, n)]\n"
            "print(' '.join(missing))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "", f"named in the README, missing from mcpactor: {out.stdout}"
    # And in the package's __all__ (star imports, documentation tools).
    import mcpactor

    assert not [n for n in names if n not in mcpactor.__all__ and n != "observability"]


def test_http_options_from_the_package_is_the_transport_s() -> None:
    from mcpactor import HttpOptions
    from mcpactor.transports.http_server import HttpOptions as Direct

    assert HttpOptions is Direct
    assert HttpOptions(max_connections=10).max_connections == 10
