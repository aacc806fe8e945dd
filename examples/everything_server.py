"""Everything server: every feature the MCP conformance suite asks a server for.

This example serves two purposes. It shows most of mcpactor's server API in one place,
and it is the server the official conformance suite runs against
(see docs/conformance.md for what each scenario checks):

    python examples/everything_server.py --transport http --port 8000 &
    scripts/conformance.sh server http://127.0.0.1:8000/mcp

It also runs over stdio (the default), e.g. for an MCP inspector or another client:

    python examples/everything_server.py
    mcpactor run examples/everything_server.py:server

The tool, resource and prompt names, and the texts they return, are the ones the
suite expects. Do not rename them.
"""

import argparse
import base64
import io
import json
import struct
import wave
import zlib
from pathlib import Path
from typing import Any

import everything_tasks
import trio

from mcpactor import Audio, Context, Image, Server, ToolError
from mcpactor.protocol.types import (
    AudioContent,
    EmbeddedResource,
    ImageContent,
    PromptMessage,
    TextContent,
    TextResourceContents,
)

server = Server(
    "mcp-conformance-test-server",
    version="1.0.0",
    instructions="A test server exercising every MCP feature: tools, resources, prompts, "
    "completion, logging, progress, sampling and elicitation.",
)


# --------------------------------------------------------------------------- media


def _tiny_png() -> bytes:
    """A valid 1x1 red PNG, built by hand so the example needs no image library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte 0, then one red pixel
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def _tiny_wav() -> bytes:
    """A valid WAV file: 10 ms of silence, 8 kHz mono 16-bit."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(8000)
        wav.writeframes(b"\x00\x00" * 80)
    return buffer.getvalue()


PNG_BYTES = _tiny_png()
WAV_BYTES = _tiny_wav()


# --------------------------------------------------------------------------- tools: content


@server.tool()
async def test_simple_text() -> str:
    """Tests simple text content response."""
    return "This is a simple text response for testing."


@server.tool()
async def test_image_content() -> ImageContent:
    """Tests image content response (a 1x1 PNG)."""
    return Image(PNG_BYTES, mime_type="image/png")


@server.tool()
async def test_audio_content() -> AudioContent:
    """Tests audio content response (a short WAV file)."""
    return Audio(WAV_BYTES, mime_type="audio/wav")


@server.tool()
async def test_embedded_resource() -> EmbeddedResource:
    """Tests embedded resource content response."""
    return EmbeddedResource(
        resource=TextResourceContents(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        )
    )


@server.tool(structured_output=False)  # a list of contents, not structured data
async def test_multiple_content_types() -> list[Any]:
    """Tests response with multiple content types (text, image, resource)."""
    return [
        "Multiple content types test:",
        Image(PNG_BYTES, mime_type="image/png"),
        EmbeddedResource(
            resource=TextResourceContents(
                uri="test://mixed-content-resource",
                mime_type="application/json",
                text=json.dumps({"test": "data", "value": 123}, separators=(",", ":")),
            )
        ),
    ]


@server.tool()
async def test_error_handling() -> str:
    """Tests error response handling: always fails with an isError result."""
    raise ToolError("This tool intentionally returns an error for testing")


# --------------------------------------------------------------------------- tools: notifications


@server.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Tests tool that emits log messages during execution."""
    await ctx.info("Tool execution started")
    await trio.sleep(0.05)
    await ctx.info("Tool processing data")
    await trio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Tests tool that reports progress notifications (0, 50 and 100 of 100)."""
    for progress in (0, 50, 100):
        if progress:
            await trio.sleep(0.05)
        await ctx.report_progress(progress, 100, f"Completed step {progress} of 100")
    return "Progress reported: 0, 50 and 100 of 100"


@server.tool()
async def test_reconnection(ctx: Context) -> str:
    """Tests SSE stream disconnection and client reconnection (SEP-1699).

    On streamable HTTP the server closes this request's SSE stream mid-call; the
    client must reconnect with Last-Event-ID to receive the result. On stdio this
    simply returns.
    """
    await ctx.close_sse_stream()
    await trio.sleep(0.1)  # the result is produced while the client is away
    return (
        "Reconnection test completed successfully. If you received this, "
        "the client properly reconnected after stream closure."
    )


@server.tool()
async def test_update_watched_resource(ctx: Context) -> str:
    """Sends notifications/resources/updated for test://watched-resource to subscribers."""
    await ctx.notify_resource_updated("test://watched-resource")
    return "Sent an update notification for test://watched-resource"


# --------------------------------------------------------------------------- tools: client requests


def _text_of(content: Any) -> str:
    """The text of a sampled message (content may be one block or a list of them)."""
    blocks = content if isinstance(content, list) else [content]
    texts = [block.text for block in blocks if isinstance(block, TextContent)]
    return "\n".join(texts) if texts else "No response"


def _describe(result: Any) -> str:
    """``action=..., content={...}`` for an elicitation result."""
    content = json.dumps(result.content or {}, separators=(",", ":"))
    return f"action={result.action}, content={content}"


@server.tool()
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Tests server-initiated sampling: asks the client's LLM to answer `prompt`."""
    result = await ctx.sample(prompt, max_tokens=100)
    return f"LLM response: {_text_of(result.content)}"


@server.tool()
async def test_elicitation(message: str, ctx: Context) -> str:
    """Tests server-initiated elicitation: asks the user for a username and email."""
    result = await ctx.elicit(
        message,
        {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        },
    )
    return f"User response: {_describe(result)}"


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Tests elicitation with default values for every primitive type (SEP-1034)."""
    result = await ctx.elicit(
        "Please review and update the form fields with defaults",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {
                    "type": "boolean",
                    "description": "Verification status",
                    "default": True,
                },
            },
            "required": [],
        },
    )
    return f"Elicitation completed: {_describe(result)}"


@server.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Tests elicitation with all five enum schema variants (SEP-1330)."""
    result = await ctx.elicit(
        "Please select options from the enum fields",
        {
            "type": "object",
            "properties": {
                # Untitled single-select: a plain enum.
                "untitledSingle": {
                    "type": "string",
                    "description": "Select one option",
                    "enum": ["option1", "option2", "option3"],
                },
                # Titled single-select: oneOf with const/title pairs.
                "titledSingle": {
                    "type": "string",
                    "description": "Select one option with titles",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                # Legacy titled single-select: enum plus (deprecated) enumNames.
                "legacyEnum": {
                    "type": "string",
                    "description": "Select one option (legacy)",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                # Untitled multi-select: an array of enum strings.
                "untitledMulti": {
                    "type": "array",
                    "description": "Select multiple options",
                    "minItems": 1,
                    "maxItems": 3,
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                # Titled multi-select: an array whose items are anyOf const/title pairs.
                "titledMulti": {
                    "type": "array",
                    "description": "Select multiple options with titles",
                    "minItems": 1,
                    "maxItems": 3,
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]
                    },
                },
            },
            "required": [],
        },
    )
    return f"Elicitation completed: {_describe(result)}"


# --------------------------------------------------------------------------- tools: schemas

#: A hand-written JSON Schema 2020-12 input schema; it must reach the client unchanged,
#: including ``$schema``, ``$defs`` and ``additionalProperties`` (SEP-1613), and the
#: wider vocabulary 2026-07-28 allows: ``$anchor``, ``allOf``/``anyOf`` and
#: ``if``/``then``/``else`` (SEP-2106).
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@server.tool(input_schema=JSON_SCHEMA_2020_12)
async def json_schema_2020_12_tool(
    name: str | None = None,
    address: dict[str, Any] | None = None,
    contactMethod: str | None = None,  # camelCase: the schema's own property name
    phone: str | None = None,
    email: str | None = None,
) -> str:
    """Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613, SEP-2106)."""
    given = (("name", name), ("address", address), ("contactMethod", contactMethod),
             ("phone", phone), ("email", email))
    args = {key: value for key, value in given if value is not None}
    return f"JSON Schema 2020-12 tool called with: {json.dumps(args, separators=(',', ':'))}"


# --------------------------------------------------------------------------- resources


@server.resource("test://static-text", mime_type="text/plain")
async def static_text() -> str:
    """A static text resource for testing."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", mime_type="image/png")
async def static_binary() -> bytes:
    """A static binary resource (a PNG image) for testing."""
    return PNG_BYTES


@server.resource_template("test://template/{id}/data", mime_type="application/json")
async def template_data(id: str) -> str:
    """A resource template with parameter substitution."""
    return json.dumps(
        {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":")
    )


@server.resource("test://watched-resource", mime_type="text/plain")
async def watched_resource() -> str:
    """A resource clients can subscribe to (see the test_update_watched_resource tool)."""
    return "Watched resource content"


# --------------------------------------------------------------------------- prompts


@server.prompt()
async def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt()
async def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two required arguments, arg1 and arg2."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt()
async def test_prompt_with_embedded_resource(resourceUri: str) -> list[PromptMessage]:
    """A prompt that embeds the resource named by its resourceUri argument."""
    return [
        PromptMessage(
            role="user",
            content=EmbeddedResource(
                resource=TextResourceContents(
                    uri=resourceUri,
                    mime_type="text/plain",
                    text="Embedded resource content for testing.",
                )
            ),
        ),
        PromptMessage(
            role="user", content=TextContent(text="Please process the embedded resource above.")
        ),
    ]


@server.prompt()
async def test_prompt_with_image() -> list[PromptMessage]:
    """A prompt that includes image content."""
    return [
        PromptMessage(
            role="user",
            content=ImageContent(data=base64.b64encode(PNG_BYTES).decode(), mime_type="image/png"),
        ),
        PromptMessage(role="user", content=TextContent(text="Please analyze the image above.")),
    ]


# --------------------------------------------------------------------------- completion

#: Suggestions offered for the arguments of test_prompt_with_arguments.
SUGGESTIONS = {
    "arg1": ["paris", "park", "party", "test", "testing"],
    "arg2": ["alpha", "beta", "gamma"],
}


@server.completion()
async def complete(ref: Any, argument: Any, context: Any) -> list[str]:
    """Suggest values for prompt arguments and the template's {id}, by prefix."""
    if ref.type == "ref/prompt" and ref.name == "test_prompt_with_arguments":
        options = SUGGESTIONS.get(argument.name, [])
    elif ref.type == "ref/resource" and argument.name == "id":
        options = [str(n) for n in range(1, 11)]
    else:
        return []
    return [option for option in options if option.startswith(argument.value)]


# --------------------------------------------------------------------------- tasks and skills

# Tools that run as tasks (2025-11-25 tasks and the 2026-07-28 tasks extension; the
# tasks scenarios' fixtures).
everything_tasks.register(server)
# Agent Skills from examples/skills (the skills extension, SEP-2640).
server.add_skills(Path(__file__).resolve().parent / "skills")


# --------------------------------------------------------------------------- tools: 2026-07-28
# The same handlers serve both eras: in a 2025 session ctx.elicit/sample/list_roots are
# requests to the client; in a stateless 2026-07-28 request they become an
# InputRequiredResult (``key`` names the input) and the tool runs again on the retry.

_NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}},
                "required": ["name"]}
_OK_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@server.tool()
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Asks the user's name (one input round)."""
    result = await ctx.elicit("What is your name?", _NAME_SCHEMA, key="user_name")
    return f"Hello, {(result.content or {}).get('name', 'stranger')}!"


@server.tool()
async def test_input_required_result_sampling(ctx: Context) -> str:
    """Asks the client's model a question (one input round)."""
    result = await ctx.sample("What is the capital of France?", max_tokens=100,
                              key="capital_question")
    return f"LLM response: {_text_of(result.content)}"


@server.tool()
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """Asks for the client's roots (one input round)."""
    roots = await ctx.list_roots(key="client_roots")
    return "Roots: " + ", ".join(str(root.uri) for root in roots)


@server.tool()
async def test_input_required_result_request_state(ctx: Context) -> str:
    """One confirmation round; the retry's requestState is verified by the runtime."""
    result = await ctx.elicit("Please confirm", _OK_SCHEMA, key="confirm")
    return f"state-ok: confirmed={(result.content or {}).get('ok')}"


@server.tool()
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """One confirmation round; a tampered requestState is refused (-32602)."""
    result = await ctx.elicit("Please confirm", _OK_SCHEMA, key="confirm")
    return f"confirmed={(result.content or {}).get('ok')}"


@server.tool()
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Two rounds, one after the other."""
    name = await ctx.elicit("Step 1: What is your name?", _NAME_SCHEMA, key="step1")
    color = await ctx.elicit(
        "Step 2: What is your favorite color?",
        {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]},
        key="step2",
    )
    return (f"{(name.content or {}).get('name')} likes "
            f"{(color.content or {}).get('color')}")


@server.tool()
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Three inputs of different kinds in one round."""
    answers = await ctx.ask({
        "user_name": ("elicitation/create",
                      {"message": "What is your name?", "requestedSchema": _NAME_SCHEMA}),
        "greeting": ("sampling/createMessage", {
            "messages": [{"role": "user",
                          "content": {"type": "text", "text": "Generate a greeting"}}],
            "maxTokens": 50,
        }),
        "client_roots": ("roots/list", {}),
    })
    name = (answers["user_name"].get("content") or {}).get("name")
    roots = len(answers["client_roots"].get("roots") or [])
    return f"name={name}, greeting received, {roots} root(s)"


@server.tool()
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Asks only for what the client declared: elicitation if it can, else sampling."""
    if ctx.client_supports("elicitation"):
        result = await ctx.elicit("What is your name?", _NAME_SCHEMA, key="user_name")
        return f"Hello, {(result.content or {}).get('name')}!"
    if ctx.client_supports("sampling"):
        sampled = await ctx.sample("Say hello", max_tokens=20, key="greeting")
        return f"LLM response: {_text_of(sampled.content)}"
    return "the client declared neither elicitation nor sampling"


@server.prompt()
async def test_input_required_result_prompt(ctx: Context) -> str:
    """A prompt that needs context from the user first."""
    result = await ctx.elicit(
        "What context should the prompt use?",
        {"type": "object", "properties": {"context": {"type": "string"}},
         "required": ["context"]},
        key="prompt_context",
    )
    return f"Use this context: {(result.content or {}).get('context')}"


@server.tool()
async def test_missing_capability(ctx: Context) -> str:
    """Needs sampling: a client that did not declare it gets -32021 (2026-07-28)."""
    result = await ctx.sample("Say something", max_tokens=20)
    return f"LLM response: {_text_of(result.content)}"


@server.tool()
async def test_streaming_elicitation(ctx: Context) -> str:
    """Reports progress, then needs the user's name: in 2026-07-28 the response stream
    carries notifications and the InputRequiredResult, never a request."""
    await ctx.report_progress(1, 2, "asking for a name")
    result = await ctx.elicit("What is your name?", _NAME_SCHEMA, key="user_name")
    return f"Hello, {(result.content or {}).get('name')}!"


@server.tool()
async def test_logging_tool(ctx: Context) -> str:
    """Logs at info: a 2026-07-28 request hears it only if its _meta set a logLevel."""
    await ctx.info("test_logging_tool ran")
    return "logged"


_toggled_tool = "test_toggled_tool"


async def _toggled() -> str:
    """Added and removed again by the test_trigger_* tools."""
    return "toggled"


@server.tool(input_schema={
    "type": "object",
    "properties": {
        "region": {"type": "string", "description": "Where to run the query",
                   "x-mcp-header": "Region"},
        "query": {"type": "string", "description": "The query"},
    },
    "required": ["region", "query"],
})
async def test_header_mirrored(region: str, query: str) -> str:
    """Its region argument is mirrored in an Mcp-Param-Region header (SEP-2243)."""
    return f"ran {query!r} in {region}"


@server.tool()
async def test_trigger_tool_change() -> str:
    """Adds or removes a tool, so the tool list changes (list_changed to listeners)."""
    if _toggled_tool in server.tools:
        server.remove_tool(_toggled_tool)
    else:
        server.tool(name=_toggled_tool, description="Added by test_trigger_tool_change")(_toggled)
    await server.notify_tools_list_changed()
    return "tool list changed"


@server.tool()
async def test_trigger_prompt_change() -> str:
    """Adds or removes a prompt, so the prompt list changes."""
    if "test_toggled_prompt" in server.prompts:
        del server.prompts["test_toggled_prompt"]
    else:
        server.prompt(name="test_toggled_prompt")(_toggled)
    await server.notify_prompts_list_changed()
    return "prompt list changed"


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--http-server", choices=["h11", "hypercorn"], default=None,
        help="which HTTP server runs the ASGI app (default: the built-in h11 one)",
    )
    parser.add_argument(
        "--sse-response", action="store_true",
        help="answer every POST with an SSE stream (default: JSON unless the handler streams)",
    )
    args = parser.parse_args()
    if args.transport == "stdio":
        server.run(transport="stdio")
    else:
        options: dict[str, Any] = {"http_server": args.http_server} if args.http_server else {}
        if args.sse_response:
            options["json_response"] = False
        server.run(transport="http", host=args.host, port=args.port, **options)


if __name__ == "__main__":
    main()
