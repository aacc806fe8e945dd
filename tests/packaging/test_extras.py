"""hypercorn and PyJWT/cryptography are extras: nothing imports them on the default path,
and a feature that needs one says which extra to install, in one line."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OPTIONAL = ("hypercorn", "jwt", "cryptography", "pydantic", "pytest_trio", "opentelemetry",
            "prometheus_client")

#: Run first in the child: the optional modules cannot be imported there.
WITHOUT_EXTRAS = (
    "import sys\n"
    "for name in ('hypercorn', 'jwt', 'cryptography', 'pytest_trio', 'opentelemetry',\n"
    "             'prometheus_client'):\n"
    "    sys.modules[name] = None\n"
)


def _python(code: str, *, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=cwd)


def test_the_extras_are_declared_and_not_dependencies() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = " ".join(project["dependencies"]).lower()
    assert "hypercorn" not in deps and "pyjwt" not in deps and "cryptography" not in deps
    extras = project["optional-dependencies"]
    assert extras["hypercorn"] == ["hypercorn>=0.17"]
    assert extras["auth"] == ["PyJWT[crypto]>=2.8", "cryptography>=3.4"]
    assert {"pytest>=8", "pytest-trio>=0.8"} <= set(extras["testing"])
    dev = set(extras["dev"])
    assert {"hypercorn>=0.17", "PyJWT[crypto]>=2.8", "pydantic>=2"} <= dev


def test_nothing_optional_is_imported_on_the_default_path() -> None:
    code = (
        "import sys\n"
        "import mcpactor, mcpactor.server, mcpactor.client, mcpactor.testing\n"
        "import mcpactor.auth, mcpactor.auth.resource_server, mcpactor.auth.verifier\n"
        "import mcpactor.cli, mcpactor.transports.http_serve, mcpactor.transports.http_server\n"
        "from mcpactor import Server, connect_http, connect_stdio, TlsOptions\n"
        "from mcpactor.auth import OAuthClient\n"
        "mcpactor.cli.build_parser()\n"
        f"print([m for m in {OPTIONAL!r} if m in sys.modules])\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_everything_but_the_extras_works_without_them(tmp_path: Path) -> None:
    code = WITHOUT_EXTRAS + (
        "import trio\n"
        "from mcpactor import Server\n"
        "from mcpactor.auth import OAuthClient\n"
        "from mcpactor.auth.verifier import StaticTokenVerifier\n"
        "from mcpactor.testing import open_client\n"
        "server = Server('plain')\n"
        "@server.tool\n"
        "async def add(a: int, b: int) -> int:\n"
        "    return a + b\n"
        "async def main():\n"
        "    async with open_client(server) as c:\n"
        "        print((await c.call_tool('add', {'a': 1, 'b': 2})).data)\n"
        "trio.run(main)\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{'result': 3}"


def test_a_jwt_verifier_without_the_auth_extra_names_it() -> None:
    code = WITHOUT_EXTRAS + (
        "from mcpactor.auth.verifier import JwtVerifier\n"
        "from mcpactor.extras import MissingExtra\n"
        "try:\n"
        "    JwtVerifier(issuer='https://a', audience='https://b', jwks={'keys': []})\n"
        "except MissingExtra as exc:\n"
        "    print(exc)\n"
        "from mcpactor.auth.token_endpoint import client_assertion\n"
        "try:\n"
        "    client_assertion('c', 'https://a', 'pem', 'RS256')\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
        "from mcpactor.auth import DPoPKey\n"
        "try:\n"
        "    DPoPKey.generate()\n"
        "except MissingExtra as exc:\n"
        "    print(exc)\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "JwtVerifier (JWT access tokens) needs PyJWT[crypto], which is not installed: "
        "pip install 'mcpactor[auth]'",
        "private_key_jwt client authentication needs PyJWT[crypto], which is not installed: "
        "pip install 'mcpactor[auth]'",
        "DPoP needs cryptography, which is not installed: pip install 'mcpactor[auth]'",
    ]


@pytest.mark.parametrize(("flags", "extra", "feature"), [
    (["--server", "hypercorn"], "hypercorn", "--server hypercorn needs hypercorn"),
    (["--auth-issuer", "https://auth.example", "--auth-jwks", "https://auth.example/jwks",
      "--auth-resource", "http://127.0.0.1:1/mcp"], "auth", "JwtVerifier (JWT access tokens) needs PyJWT[crypto]"),
    (["--otel"], "otel", "--otel needs opentelemetry-api"),
    (["--metrics"], "prometheus", "the /metrics endpoint needs prometheus-client"),
])
def test_cli_flags_that_need_an_extra_say_which(tmp_path: Path, flags: list[str], extra: str,
                                                feature: str) -> None:
    (tmp_path / "app.py").write_text("from mcpactor import Server\nserver = Server('app')\n")
    code = WITHOUT_EXTRAS + (
        "from mcpactor.cli import main\n"
        f"raise SystemExit(main(['run', 'app.py:server', '--transport', 'http', "
        f"'--port', '0', *{flags!r}]))\n"
    )
    done = _python(code, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        f"mcpactor: {feature}, which is not installed: pip install 'mcpactor[{extra}]'")


def test_observability_from_code_without_the_extras_names_them() -> None:
    code = WITHOUT_EXTRAS + (
        "from mcpactor import observability\n"
        "from mcpactor.extras import MissingExtra\n"
        "for turn_on in (observability.instrument, observability.enable_prometheus):\n"
        "    try:\n"
        "        turn_on()\n"
        "    except MissingExtra as exc:\n"
        "        print(exc)\n"
        "print(observability.current())\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "OpenTelemetry spans and metrics needs opentelemetry-api, which is not installed: "
        "pip install 'mcpactor[otel]'",
        "the /metrics endpoint needs prometheus-client, which is not installed: "
        "pip install 'mcpactor[prometheus]'",
        "None",
    ]


def test_serving_with_hypercorn_from_code_without_the_extra_names_it() -> None:
    code = WITHOUT_EXTRAS + (
        "from mcpactor import Server\n"
        "from mcpactor.extras import MissingExtra\n"
        "try:\n"
        "    Server('x').run('http', port=0, http_server='hypercorn')\n"
        "except MissingExtra as exc:\n"
        "    print(exc)\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ("serving HTTP with hypercorn needs hypercorn, which is not "
                                   "installed: pip install 'mcpactor[hypercorn]'")


def test_the_pytest_plugin_without_pytest_trio_names_the_extra() -> None:
    code = WITHOUT_EXTRAS + (
        "try:\n"
        "    import mcpactor.testing.pytest_plugin\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert "pip install 'mcpactor[testing]'" in done.stdout
