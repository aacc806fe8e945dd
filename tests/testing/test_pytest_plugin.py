"""The pytest plugin as a project would use it: a conftest naming its server, tests
asking for ``mcp_client``, run by a real pytest in a subprocess."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

CONFTEST = '''
import pytest
import trio
from mcpactor import Server

pytest_plugins = ["mcpactor.testing.pytest_plugin"]

@pytest.fixture
def mcp_server():
    server = Server("under-test", "1.0")

    @server.tool()
    async def wait(seconds: float) -> str:
        await trio.sleep(seconds)
        return f"waited {seconds}"

    return server
'''

TESTS = '''
import time

import pytest
import trio
from mcpactor import ClientHandlers

async def test_tools_run_on_virtual_time(mcp_client, autojump_clock):
    started = time.monotonic()
    result = await mcp_client.call_tool("wait", {"seconds": 86400})
    assert result.content[0].text == "waited 86400"
    assert trio.current_time() >= 86400 and time.monotonic() - started < 30

async def test_the_server_is_the_projects(mcp_client):
    assert mcp_client.server_info["name"] == "under-test"
    tools = await mcp_client.list_all_tools()
    assert [t.name for t in tools] == ["wait"]

async def test_a_broken_expectation_fails(mcp_client, autojump_clock):
    result = await mcp_client.call_tool("wait", {"seconds": 1})
    assert result.content[0].text == "waited 2"
'''

OPTIONS = '''
import pytest
import trio

@pytest.fixture
def mcp_client_options():
    return {"client_info": {"name": "project-tests", "version": "0"}, "timeout": 5}

async def test_options_reach_the_connection(mcp_client, autojump_clock):
    from mcpactor import RequestTimeout
    with pytest.raises(RequestTimeout):
        await mcp_client.call_tool("wait", {"seconds": 60})
    assert 5 <= trio.current_time() < 6
'''


@pytest.mark.parametrize("ini", ["[pytest]\ntrio_mode = true\n", None],
                         ids=["trio_mode", "out-of-the-box"])
def test_mcp_client_fixture_in_a_project(pytester: pytest.Pytester, ini: str | None) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_project=TESTS, test_options=OPTIONS)
    # Without trio_mode the plugin marks the tests that use mcp_client itself; the
    # project's own ini (an empty one here) must not be needed.
    pytester.makeini(ini if ini is not None else "[pytest]\n")
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*test_a_broken_expectation_fails*"])
