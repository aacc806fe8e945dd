"""docs/guide/prompts.md: prompts, typed arguments, messages, completion."""

from enum import Enum
from typing import Annotated, Any

from mcpactor import Client, Field, RequestError, Server
from mcpactor.protocol import types as t

server = Server("prompts-example", version="1.0.0")


class Tone(Enum):
    FRIENDLY = "friendly"
    FORMAL = "formal"


@server.prompt
async def greet(name: str, times: Annotated[int, Field(ge=1, description="How often")] = 1,
                tone: Tone = Tone.FRIENDLY) -> str:
    """Greet someone.

    Args:
        name: Who to greet.
    """
    return f"Say hello to {name} {times} time(s), in a {tone.value} tone."


@server.prompt(title="Code review")
def review(code: str) -> list[tuple[str, str]]:
    """Several messages: (role, content) pairs."""
    return [("user", f"Review this code:\n{code}"),
            ("assistant", "Sure. What should I look for first?")]


@server.completion
async def complete(ref: Any, argument: t.CompletionArgument, context: Any) -> list[str]:
    """Suggestions for a prompt's argument as the user types."""
    if isinstance(ref, t.PromptReference) and ref.name == "greet" and argument.name == "name":
        return [n for n in ("Ada", "Alan", "Grace") if n.startswith(argument.value)]
    return []


async def demo(client: Client) -> None:
    prompts = {p.name: p for p in await client.list_all_prompts()}
    args = {a.name: a for a in prompts["greet"].arguments or []}
    assert args["name"].required and args["name"].description == "Who to greet."
    assert args["times"].description == "How often" and not args["times"].required

    got = await client.get_prompt("greet", {"name": "Ada", "times": "3", "tone": "formal"})
    assert got.messages[0].content.text == "Say hello to Ada 3 time(s), in a formal tone."  # type: ignore[union-attr]
    try:
        await client.get_prompt("greet", {"name": "Ada", "times": "zero"})
        raise AssertionError("expected -32602")
    except RequestError as exc:
        assert exc.code == -32602 and "times" in exc.message

    review_prompt = await client.get_prompt("review", {"code": "x = 1"})
    assert [m.role for m in review_prompt.messages] == ["user", "assistant"]

    done = await client.complete(t.PromptReference(name="greet"), {"name": "name", "value": "A"})
    assert done.completion.values == ["Ada", "Alan"]
