"""docs/guide/lifespan-and-dependencies.md: startup state, and parameters filled per
request with cleanup."""

import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated

from mcpactor import Client, Context, Depends, Server, ToolError


@dataclass
class App:
    """What every handler shares: opened once, when serving starts."""

    db: sqlite3.Connection


@asynccontextmanager
async def lifespan(server: Server) -> AsyncIterator[App]:
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.execute("create table notes (id integer primary key, owner text, body text)")
    try:
        yield App(db=db)
    finally:
        db.close()  # when the server stops, after the last session


server = Server("lifespan-example", version="1.0.0", lifespan=lifespan)


def transaction(ctx: Context[App]) -> Iterator[sqlite3.Cursor]:
    """One transaction per request: committed if the handler returns, rolled back if
    it raises (the exception comes in at the yield)."""
    cursor = ctx.lifespan.db.cursor()
    try:
        yield cursor
        ctx.lifespan.db.commit()
    except BaseException:
        ctx.lifespan.db.rollback()
        raise
    finally:
        cursor.close()


def current_user(ctx: Context) -> str:
    """Who is calling: here from the request's _meta (with OAuth: ctx.auth.subject)."""
    user = (ctx.meta or {}).get("user")
    if not isinstance(user, str):
        raise ToolError("say who you are: _meta.user")
    return user


Cursor = Annotated[sqlite3.Cursor, Depends(transaction)]
User = Annotated[str, Depends(current_user)]


@server.tool
def add_note(body: str, cur: Cursor, user: User) -> int:
    """Add a note (neither cur nor user is in the input schema)."""
    if not body.strip():
        raise ToolError("an empty note")
    cur.execute("insert into notes (owner, body) values (?, ?)", (user, body))
    return int(cur.lastrowid or 0)


@server.tool
def my_notes(cur: Cursor, user: User) -> list[str]:
    """The caller's notes."""
    return [row[0] for row in cur.execute("select body from notes where owner = ?", (user,))]


async def demo(client: Client) -> None:
    tools = {tool.name: tool for tool in await client.list_all_tools()}
    assert list(tools["add_note"].input_schema["properties"]) == ["body"]

    ada = {"user": "ada"}
    assert (await client.call_tool("add_note", {"body": "first"}, meta=ada)).data == {"result": 1}
    assert (await client.call_tool("add_note", {"body": " "}, meta=ada)).is_error  # rolled back
    await client.call_tool("add_note", {"body": "second"}, meta={"user": "alan"})
    mine = await client.call_tool("my_notes", {}, meta=ada)
    assert mine.data == {"result": ["first"]}
    anonymous = await client.call_tool("my_notes", {})
    assert anonymous.is_error and "_meta.user" in anonymous.content[0].text  # type: ignore[union-attr]
