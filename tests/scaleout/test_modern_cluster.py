"""The 2026-07-28 revision behind a round-robin balancer: three ``mcpactor run --redis``
workers sharing one ``--state-key``, driven by the official ``mcp`` 2.3.0 client pinned
to 2026-07-28. Stateless requests need no owner: an input round started on one worker
is resumed on another (its ``requestState`` is signed with the shared key), and a
``subscriptions/listen`` stream held by one worker hears changes made on the others."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import types as mt
from mcp.client import Client
from mcp.client.subscriptions import ResourceUpdated
from scaleout_support import Deployment, deploy

pytestmark = [pytest.mark.interop, pytest.mark.slow]

KEY = "test-state-key-shared-by-every-worker"


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    yield from deploy(tmp_path, "--state-key", KEY)


def _text(result: mt.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, mt.TextContent))


async def test_input_rounds_resume_on_other_workers(deployment: Deployment) -> None:
    asked: list[str] = []

    async def elicitation(context: Any, params: Any) -> mt.ElicitResult:
        asked.append(params.message)
        return mt.ElicitResult(action="accept", content={"name": f"ann{len(asked)}"})

    with trio.fail_after(60):
        async with Client(deployment.url, mode="2026-07-28",  # type: ignore[arg-type]
                          elicitation_callback=elicitation) as client:
            for _ in range(2):
                asked.clear()
                result = await client.call_tool("confirm", {"question": "name?"})
                assert not result.is_error, _text(result)
                first, second, finisher = _text(result).split("|")
                assert (first, second) == ("ann1", "ann2")
                # Each question names the worker that asked it: three runs of the handler
                # (ask, ask, finish), one per POST, each on the worker the balancer picked.
                askers = [int(re.search(r"worker (\d+)", m).group(1))  # type: ignore[union-attr]
                          for m in asked]
                runs = [*askers, int(finisher)]
                assert set(runs) <= deployment.pids()
                assert len(set(runs)) >= 2, runs


async def test_listen_hears_changes_made_on_every_worker(deployment: Deployment) -> None:
    uris = [f"memo://change-{i}" for i in range(6)]
    heard: list[str] = []
    touched_on: set[int] = set()
    with trio.fail_after(60):
        async with Client(deployment.url, mode="2026-07-28") as listener, \
                Client(deployment.url, mode="2026-07-28") as changer:  # type: ignore[arg-type]
            async with listener.listen(resources_list_changed=True,
                                       resource_subscriptions=uris) as sub:
                for uri in uris:
                    touched_on.add(int(_text(await changer.call_tool("touch", {"uri": uri}))))
                async for event in sub:
                    if isinstance(event, ResourceUpdated):
                        heard.append(event.uri)
                    if set(heard) >= set(uris):
                        break
    # The changes were made on every worker, and the listener's stream is on one of
    # them: it heard the others' too, each once.
    assert touched_on == deployment.pids()
    assert sorted(heard) == sorted(uris)
