"""``list_all_*`` follow every page, against a real server process that pages by two."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mcpactor import InvalidResult, connect_stdio

HERE = Path(__file__).parent
PAGED = [sys.executable, "-m", "mcpactor", "run", f"{HERE / 'paged_server.py'}:server"]
LYING = [sys.executable, str(HERE / "lying_server.py")]


async def test_list_all_follows_every_page_in_order() -> None:
    async with connect_stdio(PAGED) as client:
        first = await client.list_tools()
        assert len(first.tools) == 2 and first.next_cursor
        tools = await client.list_all_tools()
        assert [x.name for x in tools] == [f"tool{i}" for i in range(5)]
        resources = await client.list_all_resources()
        assert [r.uri for r in resources] == [f"paged://r/{i}" for i in range(5)]
        templates = await client.list_all_resource_templates()
        assert [x.uri_template for x in templates] == [f"paged://t{i}/{{id}}" for i in range(3)]
        prompts = await client.list_all_prompts()
        assert [x.name for x in prompts] == [f"prompt{i}" for i in range(3)]


async def test_a_cursor_that_comes_back_is_an_error_not_a_loop() -> None:
    async with connect_stdio(LYING) as client:
        with pytest.raises(InvalidResult, match="repeated the page cursor 'same'"):
            await client.list_all_resources()
        await client.ping()  # the session is fine
