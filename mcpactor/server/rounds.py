"""Input rounds of a stateless request (MRTR, SEP-2322) on the server.

A handler asks for input the same way in both eras (``ctx.elicit``, ``ctx.sample``,
``ctx.list_roots``, ``ctx.ask``). In a handshake session those are requests to the
client. In the stateless era the handler is run again on every retry: each input it
asks for is looked up among the answers the retry brought (its ``inputResponses``,
and the answers of earlier rounds carried, signed, in ``requestState``); the first one
missing ends this run with an ``InputRequiredResult`` asking for it.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from mcpactor.protocol.errors import InvalidParams, LocalProtocolError
from mcpactor.protocol.modern import MRTR_METHODS
from mcpactor.protocol.mrtr import (
    InputRequired,
    RequestStateCodec,
    SpentStates,
    input_required_result,
    params_digest,
    read_input_responses,
)
from mcpactor.session.context import RequestContext
from mcpactor.session.state import SessionAuth

if TYPE_CHECKING:
    from mcpactor.server.app import Server

__all__ = ["Rounds", "codec_for", "finish_rounds", "open_rounds"]

#: Environment variable holding the requestState key (shared by every worker of a
#: deployment, so any of them can resume a request another one started).
KEY_ENV = "MCPACTOR_REQUEST_STATE_KEY"


class Rounds:
    """One run of a stateless request's handler: the answers it may use, and the ones
    it used (those go into the next ``requestState``)."""

    __slots__ = ("_counts", "begins_task", "earlier", "fresh", "used")

    def __init__(self, earlier: dict[str, Any], fresh: dict[str, Any]) -> None:
        self.earlier = earlier
        self.fresh = fresh
        self.used: dict[str, Any] = {}
        self._counts: dict[str, int] = {}
        #: A tool call that becomes a task at ``ctx.begin_task()`` (mcpactor.server.tasks).
        self.begins_task = False

    def again(self) -> Rounds:
        """The same answers for a new run of the handler (its task's), counting keys
        from the start."""
        return Rounds(self.earlier, self.fresh)

    def auto_key(self, kind: str) -> str:
        """A key for the handler's next input of ``kind`` that names the same input on
        every run (the handler asks in the same order each time)."""
        n = self._counts.get(kind, 0) + 1
        self._counts[kind] = n
        return f"{kind}-{n}"

    def take(self, key: str) -> dict[str, Any] | None:
        """The client's answer for ``key`` (this round's, else an earlier round's)."""
        answer = self.fresh.get(key)
        if answer is None:
            answer = self.earlier.get(key)
        if answer is not None:
            self.used[key] = answer
        return answer

    def need(self, requests: dict[str, dict[str, Any]]) -> InputRequired:
        """The exception that ends this run asking for ``requests``."""
        return InputRequired(requests, dict(self.used))


def codec_for(server: Server) -> RequestStateCodec:
    """The server's requestState codec, made on first use: the key given to the Server,
    else ``$MCPACTOR_REQUEST_STATE_KEY``, else random for this process (made inside the
    first handler that needs it, so a recording captures it and a replay reuses it)."""
    codec = server.request_state_codec
    if codec is None:
        key = server.request_state_key
        if key is None:
            env = os.environ.get(KEY_ENV)
            key = env.encode() if env else os.urandom(32)
        codec = server.request_state_codec = RequestStateCodec(
            key.encode() if isinstance(key, str) else key, ttl=server.request_state_ttl
        )
    return codec


def _principal(rc: RequestContext) -> str | None:
    state = rc.session.state.get(SessionAuth)
    token = state.token_for(rc.id) if state is not None else None
    subject = getattr(token, "subject", None)
    return subject if isinstance(subject, str) else None


def open_rounds(rc: RequestContext, server: Server) -> None:
    """Before a stateless MRTR request runs: read its answers (a malformed
    ``inputResponses`` or a ``requestState`` that fails a check is -32602, and the
    handler does not run)."""
    if rc.modern is None or rc.method not in MRTR_METHODS:
        return
    raw = rc.raw_params
    fresh = read_input_responses(raw)
    earlier: dict[str, Any] = {}
    if raw is not None and "requestState" in raw:
        spent = None
        if server.request_state_single_use:
            spent = server.spent_request_states
            if spent is None:
                spent = server.spent_request_states = SpentStates()
        earlier = codec_for(server).open(
            raw["requestState"], rc.method, params_digest(rc.method, raw), _principal(rc),
            time.time(), spent=spent,
        )
    rc.state = Rounds(earlier, fresh)


def finish_rounds(rc: RequestContext, server: Server, need: InputRequired) -> dict[str, Any]:
    """The ``InputRequiredResult`` for a run that ended asking for input."""
    state = codec_for(server).seal(
        rc.method, params_digest(rc.method, rc.raw_params), _principal(rc), need.answers,
        time.time(), nonce=os.urandom(12).hex() if server.request_state_single_use else None,
    )
    return input_required_result(need.requests, state)


def rounds_of(rc: RequestContext, method: str) -> Rounds:
    """The rounds of ``rc``, which must be a stateless MRTR request."""
    rounds = rc.state
    if not isinstance(rounds, Rounds):
        raise LocalProtocolError(
            f"{method} cannot be asked of the client while answering {rc.method} in "
            "protocol version 2026-07-28: only tools/call, prompts/get and resources/read "
            "may ask for input"
        )
    return rounds


def bad_answer(key: str, exc: InvalidParams) -> InvalidParams:
    """-32602 for an answer that does not parse as the result it answers."""
    return InvalidParams(f"Invalid params: inputResponses[{key!r}]: {exc.message}",
                         data={"path": f"params.inputResponses.{key}"})
