"""OUR client (``mcpactor.connect_stdio``) drives the npm reference server
``@modelcontextprotocol/server-everything`` over stdio.

The ``server_everything`` fixture (conftest.py) installs it with
``scripts/npm-interop.sh install`` and fails -- never skips -- when Node or the package
is missing. Facts about the server (names, texts) were read off its installed
``dist/`` sources.

Each test opens its own session (one ``node`` subprocess), bounded by ``trio.fail_after``.
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from interop_support import ROOT, wait_until

import mcpactor
from mcpactor import ClientHandlers, McpError, RequestTimeout
from mcpactor.protocol import types as t

pytestmark = pytest.mark.interop

TEST_TIMEOUT = 20

#: Tools registered whatever the client can do.
BASE_TOOLS = {
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
}
#: Tools the server registers after `initialized`, only for clients declaring the
#: capability named.
CONDITIONAL_TOOLS = {
    "trigger-sampling-request": "sampling",
    "trigger-elicitation-request": "elicitation",
    "get-roots-list": "roots",
}

SAMPLED_TEXT = "Sampled by the mcpactor test client"


@asynccontextmanager
async def everything(
    command: list[str], handlers: ClientHandlers | None = None
) -> AsyncIterator[mcpactor.Client]:
    async with mcpactor.connect_stdio(
        command,
        cwd=str(ROOT),
        handlers=handlers,
        timeout=10,
        init_timeout=10,
        shutdown_timeout=1,  # an operation may still be running in the server at exit
    ) as client:
        yield client


def _texts(result: t.CallToolResult) -> list[str]:
    return [c.text for c in result.content if isinstance(c, t.TextContent)]


async def _sample(params: t.CreateMessageRequestParams, rc: Any) -> t.CreateMessageResult:
    return t.CreateMessageResult(
        role="assistant",
        content=t.TextContent(text=SAMPLED_TEXT),
        model="mcpactor-test-model",
        stop_reason="endTurn",
    )


# ------------------------------------------------------------------------- lifecycle


async def test_initialize_and_ping(server_everything: list[str]) -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with everything(server_everything) as client:
            assert client.protocol_version == "2025-11-25"
            assert client.server_info["name"] == "mcp-servers/everything"
            assert client.server_info["version"]
            caps = client.server_capabilities
            assert {"tools", "prompts", "resources", "logging", "completions"} <= set(caps)
            assert caps["resources"].get("subscribe") is True
            assert client.instructions
            await client.ping()
            await client.ping(timeout=5)


@pytest.mark.parametrize("version", ["2024-11-05"])
async def test_older_protocol_versions(server_everything: list[str], version: str) -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with mcpactor.connect_stdio(
            server_everything, cwd=str(ROOT), protocol_version=version, timeout=10
        ) as client:
            assert client.protocol_version == version
            result = await client.call_tool("echo", {"message": version})
            assert _texts(result) == [f"Echo: {version}"]


# ------------------------------------------------------------------------- tools


async def test_list_tools_all_pages_and_capability_gating(server_everything: list[str]) -> None:
    """With no handlers we declare no client capability, so the conditional tools stay
    away; with all three they appear (the server registers them once initialized)."""
    with trio.fail_after(TEST_TIMEOUT):
        async with everything(server_everything) as client:
            tools = await client.list_all_tools()
            names = [tool.name for tool in tools]
            assert len(names) == len(set(names)), "a tool listed twice across pages"
            assert BASE_TOOLS <= set(names), f"missing: {sorted(BASE_TOOLS - set(names))}"
            assert not set(CONDITIONAL_TOOLS) & set(names)
            # The same list, page by page by hand.
            paged: list[str] = []
            cursor = None
            while True:
                page = await client.list_tools(cursor)
                paged.extend(tool.name for tool in page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
            assert paged == names
            for tool in tools:
                assert tool.input_schema.get("type") == "object", tool.name
            structured = next(tool for tool in tools if tool.name == "get-structured-content")
            assert structured.output_schema is not None
            assert set(structured.output_schema["properties"]) == {
                "temperature",
                "conditions",
                "humidity",
            }

        async def elicit(params: Any, rc: Any) -> t.ElicitResult:
            return t.ElicitResult(action="decline")

        handlers = ClientHandlers(
            sampling=_sample, elicitation=elicit, roots=[t.Root(uri="file:///tmp", name="tmp")]
        )
        async with everything(server_everything, handlers) as client:
            names = {tool.name for tool in await client.list_all_tools()}
            assert set(CONDITIONAL_TOOLS) <= names, f"missing: {set(CONDITIONAL_TOOLS) - names}"


async def test_call_basic_tools(server_everything: list[str]) -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with everything(server_everything) as client:
            echo = await client.call_tool("echo", {"message": "hello, world ✓"})
            assert not echo.is_error
            assert _texts(echo) == ["Echo: hello, world ✓"]

            total = await client.call_tool("get-sum", {"a": 2, "b": 3.5})
            assert _texts(total) == ["The sum of 2 and 3.5 is 5.5."]

            image = await client.call_tool("get-tiny-image", {})
            kinds = [c.type for c in image.content]
            assert kinds == ["text", "image", "text"]
            img = image.content[1]
            assert isinstance(img, t.ImageContent)
            assert img.mime_type == "image/png"
            assert base64.b64decode(img.data, validate=True).startswith(b"\x89PNG\r\n\x1a\n")

            weather = await client.call_tool("get-structured-content", {"location": "New York"})
            assert not weather.is_error
            assert weather.structured_content == {
                "temperature": 33,
                "conditions": "Cloudy",
                "humidity": 82,
            }
            (text,) = _texts(weather)
            assert json.loads(text) == weather.structured_content

            links = await client.call_tool("get-resource-links", {"count": 4})
            assert isinstance(links.content[0], t.TextContent)
            assert links.content[0].text.startswith("Here are 4 resource links")
            link_items = links.content[1:]
            assert len(link_items) == 4
            assert all(isinstance(item, t.ResourceLink) for item in link_items)
            uris = [item.uri for item in link_items]
            assert uris == [
                "demo://resource/dynamic/blob/1",
                "demo://resource/dynamic/text/2",
                "demo://resource/dynamic/blob/3",
                "demo://resource/dynamic/text/4",
            ]
            assert all(item.name and item.mime_type for item in link_items)

            reference = await client.call_tool(
                "get-resource-reference", {"resourceType": "Text", "resourceId": 3}
            )
            embedded = [c for c in reference.content if isinstance(c, t.EmbeddedResource)]
            assert len(embedded) == 1
            assert embedded[0].resource.uri == "demo://resource/dynamic/text/3"
            assert isinstance(embedded[0].resource, t.TextResourceContents)
            assert embedded[0].resource.text.startswith("Resource 3: This is a plaintext resource")

            annotated = await client.call_tool(
                "get-annotated-message", {"messageType": "error", "includeImage": True}
            )
            assert annotated.content[0].annotations is not None
            assert any(isinstance(c, t.ImageContent) for c in annotated.content)

            # A schema violation is the server's tool error (or protocol error): either
            # way the session goes on.
            try:
                bad = await client.call_tool("get-sum", {"a": "x"})
                assert bad.is_error
            except McpError as exc:
                assert exc.code == -32602
            assert _texts(await client.call_tool("echo", {"message": "still here"})) == [
                "Echo: still here"
            ]


async def test_long_running_operation_reports_progress(server_everything: list[str]) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    with trio.fail_after(TEST_TIMEOUT):
        async with everything(server_everything) as client:
            result = await client.call_tool(
                "trigger-long-running-operation",
                {"duration": 0.5, "steps": 5},
                on_progress=on_progress,
            )
            assert _texts(result) == [
                "Long running operation completed. Duration: 0.5 seconds, Steps: 5."
            ]
            # (whether callbacks have all run when call_tool returns is checked apart)
            await wait_until(lambda: len(progress) >= 5, "five progress callbacks")
    values = [p[0] for p in progress]
    assert values == [1, 2, 3, 4, 5]
    assert all(b > a for a, b in itertools.pairwise(values)), values
    assert {p[1] for p in progress} == {5}


async def test_progress_callbacks_have_run_when_call_tool_returns(
    server_everything: list[str],
) -> None:
    """server-everything writes every progress notification before the response, so by
    the time ``call_tool`` returns, ``on_progress`` must have seen all of them (the
    README's ``on_progress=print`` example relies on it). Repeated, because whether a
    late callback loses the race against the caller is up to the scheduler."""
    late: list[str] = []
    with trio.fail_after(TEST_TIMEOUT):
        async with everything(server_everything) as client:
            for attempt in range(20):
                seen: list[float] = []
                await client.call_tool(
                    "trigger-long-running-operation",
                    {"duration": 0.02, "steps": 2},
                    on_progress=lambda value, total, message: seen.append(value),  # noqa: B023
                )
                if seen != [1, 2]:
                    late.append(f"attempt {attempt}: {seen}")
                await wait_until(lambda: len(seen) >= 2, "the late progress callbacks")  # noqa: B023
    assert not late, (
        f"call_tool returned before its progress callbacks ran in {len(late)} of 20 "
        "attempts (progress values seen at return): " + "; ".join(late)
    )


async def test_timeout_and_cancellation_keep_the_session(server_everything: list[str]) -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with everything(server_everything) as client:
            # 1. A timeout: RequestTimeout for us, notifications/cancelled for the server.
            with pytest.raises(RequestTimeout):
                await client.call_tool(
                    "trigger-long-running-operation", {"duration": 30, "steps": 30}, timeout=0.5
                )
            assert _texts(await client.call_tool("echo", {"message": "after timeout"})) == [
                "Echo: after timeout"
            ]

            # 2. Cancelling the calling task cancels the request on the server too (we
            # cancel once the operation is visibly running: its first progress). The
            # server's operation keeps sending progress for a while: late progress for a
            # forgotten request must be dropped quietly.
            progress: list[float] = []
            with trio.CancelScope() as scope:

                def on_progress(value: float, total: float | None, message: str | None) -> None:
                    progress.append(value)
                    scope.cancel()

                await client.call_tool(
                    "trigger-long-running-operation",
                    {"duration": 3, "steps": 10},
                    on_progress=on_progress,
                )
                pytest.fail("the cancelled call_tool returned")
            assert scope.cancelled_caught
            assert progress and progress[0] == 1
            await trio.sleep(0.7)  # let late progress for the cancelled request arrive
            await client.ping()
            assert _texts(await client.call_tool("echo", {"message": "after cancel"})) == [
                "Echo: after cancel"
            ]
            assert _texts(await client.call_tool("get-sum", {"a": 1, "b": 1})) == [
                "The sum of 1 and 1 is 2."
            ]


# ------------------------------------------------------------------------- client features


async def test_sampling_request(server_everything: list[str]) -> None:
    seen: list[t.CreateMessageRequestParams] = []

    async def sample(params: t.CreateMessageRequestParams, rc: Any) -> t.CreateMessageResult:
        seen.append(params)
        return await _sample(params, rc)

    with trio.fail_after(TEST_TIMEOUT):
        async with everything(server_everything, ClientHandlers(sampling=sample)) as client:
            assert "sampling" in client.session.connection.capabilities
            result = await client.call_tool(
                "trigger-sampling-request", {"prompt": "What is 2+2?", "maxTokens": 42}
            )
            assert not result.is_error
    (params,) = seen
    assert params.max_tokens == 42
    assert params.system_prompt == "You are a helpful test server."
    (message,) = params.messages
    assert message.role == "user"
    assert isinstance(message.content, t.TextContent)
    assert message.content.text == "Resource trigger-sampling-request context: What is 2+2?"
    (text,) = _texts(result)
    prefix = "LLM sampling result: \n"
    assert text.startswith(prefix), text
    sampled = json.loads(text[len(prefix) :])
    assert sampled["model"] == "mcpactor-test-model"
    assert sampled["role"] == "assistant"
    assert sampled["content"] == {"type": "text", "text": SAMPLED_TEXT}


async def test_elicitation_request(server_everything: list[str]) -> None:
    seen: list[Any] = []

    async def elicit(params: Any, rc: Any) -> t.ElicitResult:
        seen.append(params)
        return t.ElicitResult(action="accept", content={"name": "Ada Lovelace", "check": True})

    with trio.fail_after(TEST_TIMEOUT):
        async with everything(server_everything, ClientHandlers(elicitation=elicit)) as client:
            result = await client.call_tool("trigger-elicitation-request", {})
    (params,) = seen
    assert params.message == "Please provide inputs for the following fields:"
    schema = params.requested_schema
    assert schema["type"] == "object"
    assert schema["required"] == ["name"]
    assert schema["properties"]["email"]["format"] == "email"
    texts = _texts(result)
    assert texts[0] == "✅ User provided the requested information!"
    assert "Ada Lovelace" in texts[1]
    raw = json.loads(texts[-1].split("Raw result: ", 1)[1])
    assert raw["action"] == "accept"
    assert raw["content"] == {"name": "Ada Lovelace", "check": True}


async def test_roots_are_asked_for(server_everything: list[str]) -> None:
    roots = [
        t.Root(uri="file:///work/project", name="project"),
        t.Root(uri="file:///tmp/scratch", name="scratch"),
    ]
    asked: list[float] = []
    logs: list[Any] = []

    async def provide_roots() -> list[t.Root]:
        asked.append(trio.current_time())
        return roots

    handlers = ClientHandlers(roots=provide_roots, on_log=logs.append)
    with trio.fail_after(TEST_TIMEOUT):
        async with everything(server_everything, handlers) as client:
            assert client.session.connection.capabilities.get("roots") == {"listChanged": True}
            # The server asks by itself, shortly after `initialized`.
            await wait_until(lambda: len(asked) >= 1, "the server's roots/list request")
            await wait_until(
                lambda: any("2 root(s) received" in str(_log_data(entry)) for entry in logs),
                "the server's 'Roots updated' log message",
            )

            result = await client.call_tool("get-roots-list", {})
            (text,) = _texts(result)
            assert text.startswith("Current MCP Roots (2 total):")
            assert "file:///work/project" in text and "file:///tmp/scratch" in text

            # A roots change makes the server ask again.
            before = len(asked)
            await client.send_roots_list_changed()
            await wait_until(lambda: len(asked) > before, "roots/list after list_changed")


def _log_data(entry: Any) -> Any:
    return entry.get("data") if isinstance(entry, dict) else getattr(entry, "data", entry)


# ------------------------------------------------------------------------- resources


async def test_resources_and_templates(server_everything: list[str]) -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with everything(server_everything) as client:
            resources: list[t.Resource] = []
            cursor = None
            while True:
                page = await client.list_resources(cursor)
                resources.extend(page.resources)
                cursor = page.next_cursor
                if not cursor:
                    break
            docs = [r for r in resources if r.uri.startswith("demo://resource/static/document/")]
            assert docs, [r.uri for r in resources]
            assert all(r.uri.endswith(".md") and r.mime_type == "text/markdown" for r in docs)

            doc = docs[0]
            read = await client.read_resource(doc.uri)
            (contents,) = read.contents
            assert isinstance(contents, t.TextResourceContents)
            assert contents.uri == doc.uri
            assert contents.text.strip()

            templates = (await client.list_resource_templates()).resource_templates
            by_template = {tpl.uri_template: tpl for tpl in templates}
            assert "demo://resource/dynamic/text/{resourceId}" in by_template
            assert "demo://resource/dynamic/blob/{resourceId}" in by_template

            text = await client.read_resource("demo://resource/dynamic/text/7")
            (contents,) = text.contents
            assert isinstance(contents, t.TextResourceContents)
            assert contents.uri == "demo://resource/dynamic/text/7"
            assert contents.text.startswith("Resource 7: This is a plaintext resource")

            blob = await client.read_resource("demo://resource/dynamic/blob/8")
            (contents,) = blob.contents
            assert isinstance(contents, t.BlobResourceContents)
            decoded = base64.b64decode(contents.blob, validate=True).decode()
            assert decoded.startswith("Resource 8: This is a base64 blob")

            await client.subscribe(doc.uri)
            await client.unsubscribe(doc.uri)

            with pytest.raises(McpError):
                await client.read_resource("demo://resource/dynamic/text/not-a-number")
            await client.ping()


# ------------------------------------------------------------------------- prompts


async def test_prompts(server_everything: list[str]) -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with everything(server_everything) as client:
            prompts = {p.name: p for p in (await client.list_prompts()).prompts}
            assert {"simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"} <= set(
                prompts
            )
            required = {a.name: a.required for a in prompts["args-prompt"].arguments or []}
            assert required == {"city": True, "state": False}

            simple = await client.get_prompt("simple-prompt")
            assert simple.messages and simple.messages[0].role == "user"

            args = await client.get_prompt("args-prompt", {"city": "Lisbon", "state": "LX"})
            wire = json.dumps([m.content.text for m in args.messages])
            assert "Lisbon" in wire and "LX" in wire

            team = await client.get_prompt(
                "completable-prompt", {"department": "Engineering", "name": "Alice"}
            )
            (message,) = team.messages
            assert isinstance(message.content, t.TextContent)
            assert message.content.text == (
                "Please promote Alice to the head of the Engineering team."
            )

            resource = await client.get_prompt(
                "resource-prompt", {"resourceType": "Text", "resourceId": "2"}
            )
            embedded = [
                m.content for m in resource.messages if isinstance(m.content, t.EmbeddedResource)
            ]
            assert len(embedded) == 1
            assert embedded[0].resource.uri == "demo://resource/dynamic/text/2"


async def test_completion(server_everything: list[str]) -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with everything(server_everything) as client:
            ref = t.PromptReference(name="completable-prompt")
            result = await client.complete(ref, {"name": "department", "value": "E"})
            assert result.completion.values == ["Engineering"]
            result = await client.complete(
                ref,
                t.CompletionArgument(name="name", value="A"),
                context={"arguments": {"department": "Engineering"}},
            )
            assert result.completion.values == ["Alice"]
            result = await client.complete(
                {"type": "ref/resource", "uri": "demo://resource/dynamic/text/{resourceId}"},
                {"name": "resourceId", "value": "12"},
            )
            assert result.completion.values == ["12"]


async def test_logging_set_level(server_everything: list[str]) -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with everything(server_everything) as client:
            for level in ("debug", "info", "error"):
                assert await client.set_logging_level(level) is None
            with pytest.raises(McpError):
                await client.set_logging_level("loud")
            await client.ping()


async def test_url_elicitation(server_everything: list[str]) -> None:
    """URL-mode elicitation (2025-11-25): the request path reaches our handler with the
    URL params; the error path is a -32042 JSON-RPC error carrying the elicitations."""
    seen: list[Any] = []

    async def elicit(params: Any, rc: Any) -> t.ElicitResult:
        seen.append(params)
        return t.ElicitResult(action="accept")

    handlers = ClientHandlers(elicitation=elicit, elicitation_modes=("form", "url"))
    with trio.fail_after(TEST_TIMEOUT):
        async with everything(server_everything, handlers) as client:
            assert client.session.connection.capabilities["elicitation"] == {"form": {}, "url": {}}
            names = {tool.name for tool in await client.list_all_tools()}
            assert "trigger-url-elicitation" in names

            url = "https://example.com/authorize"
            result = await client.call_tool(
                "trigger-url-elicitation", {"url": url, "elicitationId": "el-1"}
            )
            (params,) = seen
            assert isinstance(params, t.ElicitRequestURLParams)
            assert (params.mode, params.url, params.elicitation_id) == ("url", url, "el-1")
            assert _texts(result)[0] == (
                f"✅ User completed the URL elicitation flow.\nElicitation ID: el-1\nURL: {url}"
            )

            with pytest.raises(McpError) as info:
                await client.call_tool(
                    "trigger-url-elicitation",
                    {"url": url, "errorPath": True, "elicitationId": "e2"},
                )
            assert info.value.code == -32042
            (required,) = info.value.data["elicitations"]
            assert required["mode"] == "url"
            assert required["url"] == "https://modelcontextprotocol.io"
            # Retrying the same call after the prerequisite goes down the request path.
            retried = await client.call_tool(
                "trigger-url-elicitation", {"url": url, "errorPath": True, "elicitationId": "e2"}
            )
            assert _texts(retried)[0].startswith("✅ User completed the URL elicitation flow.")


async def test_session_resource_and_list_changed(server_everything: list[str]) -> None:
    """gzip-file-as-resource (with a data: URL, no network) registers a session resource:
    the server says resources/list_changed, links it, and serves the gzip blob."""
    import gzip

    changed: list[Any] = []
    payload = "interop payload ✓\n" * 20
    data_url = "data:text/plain;base64," + base64.b64encode(payload.encode()).decode()
    handlers = ClientHandlers(on_resources_changed=changed.append)
    with trio.fail_after(TEST_TIMEOUT):
        async with everything(server_everything, handlers) as client:
            result = await client.call_tool(
                "gzip-file-as-resource",
                {"name": "payload.txt.gz", "data": data_url, "outputType": "resourceLink"},
            )
            assert not result.is_error, result
            (link,) = result.content
            assert isinstance(link, t.ResourceLink)
            assert link.uri == "demo://resource/session/payload.txt.gz"
            assert link.mime_type == "application/gzip"
            await wait_until(lambda: bool(changed), "notifications/resources/list_changed")

            read = await client.read_resource(link.uri)
            (contents,) = read.contents
            assert isinstance(contents, t.BlobResourceContents)
            assert gzip.decompress(base64.b64decode(contents.blob)).decode() == payload

            embedded = await client.call_tool(
                "gzip-file-as-resource",
                {"name": "again.gz", "data": data_url, "outputType": "resource"},
            )
            (item,) = embedded.content
            assert isinstance(item, t.EmbeddedResource)
            assert isinstance(item.resource, t.BlobResourceContents)
            assert gzip.decompress(base64.b64decode(item.resource.blob)).decode() == payload


async def test_progress_resets_the_timeout_up_to_the_maximum(server_everything: list[str]) -> None:
    """Timeout(seconds, reset_on_progress=True): each progress notification from the
    server pushes the deadline back, never past ``maximum``."""
    with trio.fail_after(TEST_TIMEOUT):
        async with everything(server_everything) as client:
            # 1.2 s in all, but a progress every 0.2 s: a 1 s rolling timeout never fires.
            seen: list[float] = []
            result = await client.call_tool(
                "trigger-long-running-operation",
                {"duration": 1.2, "steps": 6},
                timeout=mcpactor.Timeout(seconds=1.0, reset_on_progress=True),
                on_progress=lambda value, total, message: seen.append(value),
            )
            assert _texts(result) == [
                "Long running operation completed. Duration: 1.2 seconds, Steps: 6."
            ]
            # (whether callbacks have all run when call_tool returns is checked apart)
            await wait_until(lambda: len(seen) >= 6, "six progress callbacks")
            assert seen == [1, 2, 3, 4, 5, 6]

            # Progress keeps coming, but the hard maximum ends the wait.
            with pytest.raises(RequestTimeout):
                await client.call_tool(
                    "trigger-long-running-operation",
                    {"duration": 4, "steps": 20},
                    timeout=mcpactor.Timeout(seconds=1.0, reset_on_progress=True, maximum=1.5),
                    on_progress=lambda value, total, message: None,
                )
            assert _texts(await client.call_tool("echo", {"message": "ok"})) == ["Echo: ok"]
