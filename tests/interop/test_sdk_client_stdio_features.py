"""The official SDK client drives our everything server over stdio: resources, prompts,
completion, concurrency, wire order, pagination, roots and sampling options."""

from __future__ import annotations

import base64
import json
import warnings
from typing import Any

import pytest
import trio
from interop_support import wait_until
from mcp import types
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from sdk_stdio_support import (
    PAGED_SERVER,
    SAMPLED_TEXT,
    TEST_TIMEOUT,
    Recorder,
    WireTap,
    _texts,
    sdk_session,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


async def test_list_and_read_resources() -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_session() as session:
            listing = await session.list_resources()
            by_uri = {str(r.uri): r for r in listing.resources}
            for uri in ("test://static-text", "test://static-binary", "test://watched-resource"):
                assert uri in by_uri, f"{uri} not listed"
            for resource in listing.resources:
                assert resource.name
            assert by_uri["test://static-text"].mime_type == "text/plain"
            assert by_uri["test://static-binary"].mime_type == "image/png"

            templates = await session.list_resource_templates()
            (template,) = [
                t
                for t in templates.resource_templates
                if t.uri_template == "test://template/{id}/data"
            ]
            assert template.mime_type == "application/json"

            text = await session.read_resource("test://static-text")
            (contents,) = text.contents
            assert isinstance(contents, types.TextResourceContents)
            assert str(contents.uri) == "test://static-text"
            assert contents.mime_type == "text/plain"
            assert contents.text == "This is the content of the static text resource."

            binary = await session.read_resource("test://static-binary")
            (contents,) = binary.contents
            assert isinstance(contents, types.BlobResourceContents)
            assert contents.mime_type == "image/png"
            assert base64.b64decode(contents.blob, validate=True).startswith(PNG_SIGNATURE)

            templated = await session.read_resource("test://template/123/data")
            (contents,) = templated.contents
            assert isinstance(contents, types.TextResourceContents)
            assert str(contents.uri) == "test://template/123/data"
            assert contents.mime_type == "application/json"
            assert json.loads(contents.text) == {
                "id": "123",
                "templateTest": True,
                "data": "Data for ID: 123",
            }

            with pytest.raises(MCPError) as info:
                await session.read_resource("test://no-such-resource")
            assert info.value.error.code in (
                types.INVALID_PARAMS,
                -32002,
            )  # -32002: resource not found


async def test_subscribe_and_unsubscribe() -> None:
    recorder = Recorder()

    def updates() -> list[Any]:
        return [
            n for n in recorder.notifications if isinstance(n, types.ResourceUpdatedNotification)
        ]

    with trio.fail_after(TEST_TIMEOUT), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (un)subscribe are deprecated for 2026-07-28 only
        async with sdk_session(recorder) as session:
            uri = "test://watched-resource"
            assert isinstance(await session.subscribe_resource(uri), types.EmptyResult)
            await session.call_tool("test_update_watched_resource", {})
            await wait_until(lambda: len(updates()) >= 1, "notifications/resources/updated")
            assert str(updates()[0].params.uri) == uri
            assert isinstance(await session.unsubscribe_resource(uri), types.EmptyResult)
            read = await session.read_resource(uri)
            assert read.contents[0].text == "Watched resource content"


# ------------------------------------------------------------------------- prompts


async def test_list_and_get_every_prompt() -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_session() as session:
            listing = await session.list_prompts()
            prompts = {p.name: p for p in listing.prompts}
            assert {
                "test_simple_prompt",
                "test_prompt_with_arguments",
                "test_prompt_with_embedded_resource",
                "test_prompt_with_image",
            } <= set(prompts)
            for prompt in listing.prompts:
                assert prompt.description, f"{prompt.name} has no description"
            args = {
                a.name: a.required for a in prompts["test_prompt_with_arguments"].arguments or []
            }
            assert args == {"arg1": True, "arg2": True}

            simple = await session.get_prompt("test_simple_prompt")
            (message,) = simple.messages
            assert message.role == "user"
            assert isinstance(message.content, types.TextContent)
            assert message.content.text == "This is a simple prompt for testing."

            with_args = await session.get_prompt(
                "test_prompt_with_arguments", {"arg1": "testValue1", "arg2": "testValue2"}
            )
            (message,) = with_args.messages
            assert isinstance(message.content, types.TextContent)
            assert message.content.text == (
                "Prompt with arguments: arg1='testValue1', arg2='testValue2'"
            )

            embedded = await session.get_prompt(
                "test_prompt_with_embedded_resource", {"resourceUri": "test://example-resource"}
            )
            first, second = embedded.messages
            assert isinstance(first.content, types.EmbeddedResource)
            assert str(first.content.resource.uri) == "test://example-resource"
            assert isinstance(first.content.resource, types.TextResourceContents)
            assert first.content.resource.text == "Embedded resource content for testing."
            assert isinstance(second.content, types.TextContent)
            assert second.content.text == "Please process the embedded resource above."

            image = await session.get_prompt("test_prompt_with_image")
            first, second = image.messages
            assert isinstance(first.content, types.ImageContent)
            assert first.content.mime_type == "image/png"
            assert base64.b64decode(first.content.data).startswith(PNG_SIGNATURE)
            assert isinstance(second.content, types.TextContent)
            assert second.content.text == "Please analyze the image above."

            # A missing required argument is a JSON-RPC error, not a rendered prompt.
            with pytest.raises(MCPError) as info:
                await session.get_prompt("test_prompt_with_arguments", {"arg1": "only"})
            assert info.value.error.code == types.INVALID_PARAMS


# ------------------------------------------------------------------------- completion


async def test_completion_complete() -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_session() as session:
            prompt_ref = types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments")
            result = await session.complete(prompt_ref, {"name": "arg1", "value": "pa"})
            assert result.completion.values == ["paris", "park", "party"]
            result = await session.complete(prompt_ref, {"name": "arg1", "value": "test"})
            assert result.completion.values == ["test", "testing"]
            result = await session.complete(prompt_ref, {"name": "arg2", "value": "zzz"})
            assert result.completion.values == []

            template_ref = types.ResourceTemplateReference(
                type="ref/resource", uri="test://template/{id}/data"
            )
            result = await session.complete(template_ref, {"name": "id", "value": "1"})
            assert result.completion.values == ["1", "10"]


async def test_concurrent_calls_are_routed_to_their_callers() -> None:
    """Many calls in flight at once on one session, some with progress, some asking the
    client to sample: every result and every progress notification reaches its caller."""
    recorder = Recorder()
    results: dict[str, list[str]] = {}
    progress: dict[int, list[float]] = {i: [] for i in range(6)}

    async def with_progress(i: int, session: ClientSession) -> None:
        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress[i].append(value)

        result = await session.call_tool(
            "test_tool_with_progress", {}, progress_callback=on_progress
        )
        results[f"progress-{i}"] = _texts(result)

    async def sampling(i: int, session: ClientSession) -> None:
        result = await session.call_tool("test_sampling", {"prompt": f"prompt {i}"})
        results[f"sampling-{i}"] = _texts(result)

    async def template(i: int, session: ClientSession) -> None:
        read = await session.read_resource(f"test://template/{i}/data")
        results[f"template-{i}"] = [read.contents[0].text]

    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_session(recorder) as session:
            async with trio.open_nursery() as nursery:
                for i in range(6):
                    nursery.start_soon(with_progress, i, session)
                    nursery.start_soon(sampling, i, session)
                    nursery.start_soon(template, i, session)
            # Progress callbacks run in SDK tasks: give late ones time (those for
            # requests already answered never come: the SDK drops them).
            await wait_until(
                lambda: all(len(p) >= 3 for p in progress.values()), "progress", fail=False
            )
    for i in range(6):
        assert results[f"progress-{i}"] == ["Progress reported: 0, 50 and 100 of 100"]
        assert sorted(progress[i]) == [0, 50, 100], (
            f"call {i}: progress callbacks got {progress[i]} (all: {progress})"
        )
        assert results[f"sampling-{i}"] == [f"LLM response: {SAMPLED_TEXT}"]
        assert json.loads(results[f"template-{i}"][0])["id"] == str(i)
    prompts = sorted(p.messages[0].content.text for p in recorder.sampling)
    assert prompts == [f"prompt {i}" for i in range(6)]


def _split_at_response(
    window: list[dict[str, Any]], method: str, response_id: Any
) -> tuple[int, int]:
    """How many ``method`` notifications in ``window`` came before / after the response
    to ``response_id`` (progress: only those carrying it as the token, as the SDK does)."""
    before = after = 0
    answered = False
    for message in window:
        if message.get("id") == response_id and ("result" in message or "error" in message):
            answered = True
        elif message.get("method") == method:
            params = message.get("params", {})
            if method == "notifications/progress" and params.get("progressToken") != response_id:
                continue
            if answered:
                after += 1
            else:
                before += 1
    return before, after


async def test_notifications_precede_the_response_on_the_wire() -> None:
    """A tool's progress and log notifications, awaited before it returns, must reach
    the wire before its response: a client drops progress for a finished request (the
    SDK does, and conformance `tools-call-with-progress` requires 3 before the result)."""
    tap: list[WireTap] = []
    problems: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        pass

    with trio.fail_after(TEST_TIMEOUT), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with sdk_session(Recorder(), tap) as session:
            await session.set_logging_level("debug")
            await session.list_tools()  # so call_tool does not list tools mid-test
            (wire,) = tap
            for attempt in range(3):
                for tool, method, kwargs in (
                    (
                        "test_tool_with_progress",
                        "notifications/progress",
                        {"progress_callback": on_progress},
                    ),
                    ("test_tool_with_logging", "notifications/message", {}),
                ):
                    start = len(wire.messages)
                    await session.call_tool(tool, {}, **kwargs)
                    window = wire.messages[start:]
                    (response,) = [m for m in window if "content" in m.get("result", {})]
                    rid = response["id"]
                    # All three do arrive, sooner or later: wait for them, then look at order.
                    await wait_until(
                        lambda: sum(_split_at_response(wire.messages[start:], method, rid)) >= 3,  # noqa: B023
                        f"three {method} for {tool}",
                    )
                    window = wire.messages[start:]
                    counts = _split_at_response(window, method, rid)
                    if counts != (3, 0):
                        order = [m.get("method") or f"response {m.get('id')}" for m in window]
                        problems.append(
                            f"attempt {attempt}, {tool}: {method} before/after the response: "
                            f"{counts}; wire order: {order}"
                        )
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------- second server


async def test_pagination_with_cursors() -> None:
    """The SDK client follows our cursors (page size 2) through tools, resources, prompts."""
    with trio.fail_after(TEST_TIMEOUT):
        async with sdk_session(command=PAGED_SERVER) as session:

            async def collect(list_page: Any, field: str) -> tuple[list[str], int]:
                names: list[str] = []
                pages = 0
                cursor = None
                while True:
                    params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                    page = await list_page(params=params)
                    items = getattr(page, field)
                    assert 0 < len(items) <= 2, f"page {pages} of {field}: {len(items)} items"
                    names.extend(str(i.uri) if field == "resources" else i.name for i in items)
                    pages += 1
                    cursor = page.next_cursor
                    if cursor is None:
                        return names, pages

            tools, pages = await collect(session.list_tools, "tools")
            assert pages == 5
            assert tools[:5] == [f"tool_{n}" for n in range(5)]
            assert len(tools) == len(set(tools)) == 10
            resources, pages = await collect(session.list_resources, "resources")
            assert (resources, pages) == ([f"paged://resource/{n}" for n in range(5)], 3)
            prompts, pages = await collect(session.list_prompts, "prompts")
            assert (prompts, pages) == (["prompt_0", "prompt_1", "prompt_2"], 2)

            # A cursor we never issued is a JSON-RPC invalid-params error.
            with pytest.raises(MCPError) as info:
                await session.list_tools(params=types.PaginatedRequestParams(cursor="bogus!"))
            assert info.value.error.code == types.INVALID_PARAMS


async def test_roots_sampling_options_and_named_logger() -> None:
    recorder = Recorder()
    recorder.roots = [
        types.Root(uri="file:///work/project", name="project"),
        types.Root(uri="file:///tmp"),
    ]
    with trio.fail_after(TEST_TIMEOUT), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # roots/logging are deprecated for 2026-07-28 only
        async with sdk_session(recorder, command=PAGED_SERVER) as session:
            # roots/list from a tool, answered by the SDK's list_roots_callback
            roots = await session.call_tool("roots", {})
            assert roots.structured_content == {"result": ["file:///work/project", "file:///tmp"]}
            assert recorder.roots_asked == 1

            # notifications/roots/list_changed reaches the server's hook
            await session.send_roots_list_changed()
            with trio.fail_after(5):
                while True:
                    count = await session.call_tool("roots_changed_count", {})
                    if count.structured_content == {"result": 1}:
                        break
                    await trio.sleep(0.02)

            # every sampling option crosses over intact
            sampled = await session.call_tool("sample_with_options", {})
            assert sampled.structured_content == {
                "model": "test-model",
                "stopReason": "endTurn",
                "text": SAMPLED_TEXT,
            }
            (params,) = recorder.sampling
            assert params.max_tokens == 7
            assert params.system_prompt == "Be brief."
            assert params.temperature == 0.25
            assert params.stop_sequences == ["STOP"]
            assert params.include_context == "thisServer"
            assert params.metadata == {"trace": "abc"}
            assert params.model_preferences is not None
            assert params.model_preferences.speed_priority == 0.9
            assert [h.name for h in params.model_preferences.hints or []] == ["small"]

            # a log message with a logger name and structured data
            await session.set_logging_level("warning")
            assert _texts(await session.call_tool("log_with_logger", {})) == ["logged"]
            await wait_until(lambda: bool(recorder.logs), "the warning log message")
            (log,) = recorder.logs
            assert (log.level, log.logger) == ("warning", "interop.logger")
            assert log.data == {"code": 7, "detail": "structured"}
