"""Transports and the OAuth resource server know nothing of ``Server``: they serve a
``SessionEndpoint`` (mcpactor/transports/endpoint.py) that the server layer provides."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import mcpactor

ROOT = Path(mcpactor.__file__).parent
#: Packages that sit below the server layer, and what they must never import.
LOWER = ("transports", "auth")
FORBIDDEN = ("mcpactor.server",)


def _modules() -> list[Path]:
    return sorted(p for pkg in LOWER for p in (ROOT / pkg).rglob("*.py"))


def _imported(path: Path) -> set[str]:
    """Every module an ``import`` anywhere in ``path`` names (TYPE_CHECKING blocks and
    imports inside functions included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _bad(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


def test_no_transport_or_auth_module_names_the_server_layer() -> None:
    files = _modules()
    assert ROOT / "transports" / "http_server.py" in files
    assert ROOT / "auth" / "resource_server.py" in files
    offenders = {
        str(p.relative_to(ROOT)): sorted(n for n in _imported(p) if _bad(n)) for p in files
    }
    offenders = {k: v for k, v in offenders.items() if v}
    assert offenders == {}, f"these modules import the server layer: {offenders}"


def test_the_check_sees_an_import_of_the_server(tmp_path: Path) -> None:
    # The scan must be able to fail: a TYPE_CHECKING import inside a function counts.
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from typing import TYPE_CHECKING\n"
        "def f():\n"
        "    if TYPE_CHECKING:\n"
        "        from mcpactor.server.app import Server\n"
        "    from mcpactor import server\n"
    )
    found = _imported(sample)
    assert "mcpactor.server.app" in found and "mcpactor.server" in found
    assert any(_bad(n) for n in found)


def test_importing_every_transport_and_auth_module_loads_no_server() -> None:
    modules = sorted(
        "mcpactor." + ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in _modules() if p.name != "__init__.py"
    )
    code = (
        "import sys, importlib\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print(','.join(sorted(n for n in sys.modules if n.startswith('mcpactor.server'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"importing transports/auth loaded: {out.stdout.strip()}"


def test_a_server_provides_an_endpoint_the_transports_accept() -> None:
    from mcpactor import Server
    from mcpactor.transports.endpoint import SessionEndpoint, endpoint_of
    from mcpactor.transports.http_server import McpHttpApp

    server = Server("layered")

    @server.tool(scopes=["files:read"])
    def read(path: str) -> str:
        """Read a file."""
        return path

    endpoint = server.session_endpoint()
    assert isinstance(endpoint, SessionEndpoint)
    assert endpoint_of(endpoint) is endpoint
    assert endpoint.name == "layered"
    assert list(endpoint.tool_scopes("read")) == ["files:read"]
    assert list(endpoint.tool_scopes("missing")) == []
    schema = endpoint.tool_input_schema("read")
    assert schema is not None and "path" in schema["properties"]
    assert endpoint.tool_input_schema("missing") is None
    # A Server given to the app is served through the endpoint it provides.
    app = McpHttpApp(server)
    assert app.endpoint.name == "layered"
    assert not hasattr(app, "server")


def test_something_that_is_no_endpoint_is_a_clear_error() -> None:
    import pytest

    from mcpactor.transports.http_server import McpHttpApp

    with pytest.raises(TypeError, match="SessionEndpoint"):
        McpHttpApp(object())  # type: ignore[arg-type]
