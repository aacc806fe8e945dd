"""pytest-trio fixtures for testing an mcpactor server.

Enable it in the project's root ``conftest.py``::

    pytest_plugins = ["mcpactor.testing.pytest_plugin"]

    @pytest.fixture
    def mcp_server():
        return my_app.server          # the Server under test

then ask for ``mcp_client`` in a test: a :class:`~mcpactor.client.Client` connected to
a fresh session of that server over an in-memory pair, both in the test's Trio run.
Ask for pytest-trio's ``autojump_clock`` too and the test runs on virtual time (a
``trio.testing.MockClock`` that jumps ahead whenever every task waits): timeouts,
sleeps and progress intervals of both sides then cost no real time::

    async def test_nightly_job(mcp_client, autojump_clock):
        result = await mcp_client.call_tool("wait_for_midnight")

(pytest-trio takes the clock from the test's own arguments, so it cannot come in
through this fixture.) Override ``mcp_client_options`` to pass
:func:`mcpactor.connect_transport` options (``handlers=`` for sampling or
elicitation, ``timeout=``, ``tracer=``, ...).

No pytest-trio configuration is needed: ``async def`` tests that use ``mcp_client``
are marked to run under Trio here (a project with ``trio_mode = true`` runs them the
same way). pytest-trio itself must be installed: ``pip install 'mcpactor[testing]'``.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from typing import Any

import pytest

try:
    from pytest_trio import trio_fixture  # type: ignore[import-untyped]
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(
        "mcpactor.testing.pytest_plugin runs tests under pytest-trio, which is not "
        "installed: pip install 'mcpactor[testing]'"
    ) from exc

from mcpactor.client import Client
from mcpactor.testing.client import open_client

__all__ = ["mcp_client", "mcp_client_options", "pytest_collection_modifyitems"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the ``async def`` tests that use ``mcp_client`` to run under Trio, so the
    plugin works without ``trio_mode = true``."""
    for item in items:
        if "mcp_client" not in getattr(item, "fixturenames", ()):
            continue
        if item.get_closest_marker("trio") is not None:
            continue
        test = getattr(item, "obj", None)
        if test is not None and inspect.iscoroutinefunction(test):
            item.add_marker(pytest.mark.trio)


@pytest.fixture
def mcp_client_options() -> dict[str, Any]:
    """Options for the ``mcp_client`` connection (override to set handlers etc.)."""
    return {}


@trio_fixture
async def mcp_client(mcp_server: Any, mcp_client_options: dict[str, Any]) -> AsyncIterator[Client]:
    """A client connected to a fresh session of ``mcp_server`` (a fixture the project
    defines)."""
    async with open_client(mcp_server, **mcp_client_options) as client:
        yield client
