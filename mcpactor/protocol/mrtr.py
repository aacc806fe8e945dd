"""Multi round-trip requests (SEP-2322), sans-I/O: ``InputRequiredResult``, the
client's ``inputResponses``, and a tamper-checked ``requestState``.

The server never holds state between rounds. A handler that needs input is simply run
again on the retry with the answers given so far, as the replayer re-executes code: so
``requestState`` carries only what the server must be able to trust on the retry, the
answers of earlier rounds, bound to the request they belong to (method and a digest of
its parameters), to the principal who got them and to an expiry, and signed with
HMAC-SHA256 under a key any worker of the deployment can hold
(:class:`RequestStateCodec`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

import attrs
import orjson

from mcpactor.protocol.errors import InvalidParams, McpError

__all__ = [
    "INPUT_METHODS",
    "InputRequired",
    "InputRequiredResponse",
    "RequestStateCodec",
    "SpentStates",
    "input_required_result",
    "params_digest",
    "read_input_responses",
]

#: The requests an ``InputRequiredResult`` may carry, and the client capability each
#: needs.
INPUT_METHODS: Mapping[str, str] = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}

_STATE_VERSION = 1
#: Parameters that change between rounds of one request, left out of its digest.
_ROUND_KEYS = frozenset({"_meta", "inputResponses", "requestState"})


class InputRequired(McpError):
    """Raised inside a handler of a modern request that needs input from the client:
    the runtime answers ``InputRequiredResult`` with ``requests`` (key → ``{"method",
    "params"}``) and a ``requestState`` holding ``answers`` (the answers used so far).
    It is not an error on the wire; it derives from McpError so that handlers' own
    ``except Exception`` blocks in the runtime let it through."""

    def __init__(self, requests: dict[str, dict[str, Any]], answers: dict[str, Any]) -> None:
        super().__init__(f"input required: {', '.join(requests)}")
        self.requests = requests
        self.answers = answers


def input_required_result(requests: dict[str, dict[str, Any]], state: str | None) -> dict[str, Any]:
    """The wire form of an ``InputRequiredResult``."""
    result: dict[str, Any] = {"resultType": "input_required", "inputRequests": requests}
    if state is not None:
        result["requestState"] = state
    return result


def params_digest(method: str, params: Mapping[str, Any] | None) -> str:
    """A digest of a request's salient parameters (everything but ``_meta``,
    ``inputResponses`` and ``requestState``): a state minted for one request is refused
    on another."""
    salient = {k: v for k, v in (params or {}).items() if k not in _ROUND_KEYS}
    body = orjson.dumps([method, salient], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(body).hexdigest()[:32]


def read_input_responses(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The retry's ``inputResponses`` (empty when absent); -32602 when it is not an
    object of objects."""
    if params is None or "inputResponses" not in params:
        return {}
    responses = params["inputResponses"]
    if type(responses) is not dict:
        raise InvalidParams(
            "Invalid params: inputResponses must be an object mapping input keys to results",
            data={"path": "params.inputResponses"},
        )
    for key, value in responses.items():
        if type(value) is not dict:
            raise InvalidParams(
                f"Invalid params: inputResponses[{key!r}] must be an object (the client's "
                "result for that input request)",
                data={"path": f"params.inputResponses.{key}"},
            )
    return responses


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class RequestStateCodec:
    """Seals and opens ``requestState``: ``base64url(payload) "." base64url(HMAC-SHA256)``.

    The payload is JSON: the request's method and parameter digest, the principal (or
    None), an expiry (seconds since the epoch) and the answers so far. Nothing in it is
    secret (the client gave the answers), so it is signed, not encrypted; a state that
    fails any check is -32602 and the request is not run.
    """

    def __init__(self, key: bytes, *, ttl: float = 600.0) -> None:
        if len(key) < 16:
            raise ValueError("the requestState key must be at least 16 bytes")
        self._key = key
        self.ttl = ttl

    def _mac(self, body: bytes) -> bytes:
        return hmac.new(self._key, body, hashlib.sha256).digest()

    def seal(
        self, method: str, digest: str, principal: str | None, answers: dict[str, Any],
        now: float, *, nonce: str | None = None,
    ) -> str:
        """A signed state for a retry of this request (``nonce``: the state's own id,
        for a server that takes each state once)."""
        payload: dict[str, Any] = {"v": _STATE_VERSION, "m": method, "d": digest,
                                   "p": principal, "exp": int(now + self.ttl), "a": answers}
        if nonce is not None:
            payload["n"] = nonce
        body = orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)
        return f"{_b64(body)}.{_b64(self._mac(body))}"

    def open(
        self, state: object, method: str, digest: str, principal: str | None, now: float,
        *, spent: SpentStates | None = None,
    ) -> dict[str, Any]:
        """The answers a state carries, after checking its signature, request, principal
        and expiry; with ``spent``, also that it was not taken before (it is from now
        on)."""
        if type(state) is not str or state.count(".") != 1:
            raise self._refuse("it is not a requestState this server issued")
        body_text, mac_text = state.split(".")
        try:
            body, mac = _unb64(body_text), _unb64(mac_text)
        except ValueError:
            raise self._refuse("it is not valid base64url") from None
        if not hmac.compare_digest(mac, self._mac(body)):
            raise self._refuse("its signature does not verify (tampered, or another key)")
        payload = orjson.loads(body)
        if payload.get("v") != _STATE_VERSION:
            raise self._refuse("unknown state version")
        if payload.get("m") != method or payload.get("d") != digest:
            raise self._refuse("it was issued for a different request")
        if payload.get("p") != principal:
            raise self._refuse("it was issued to a different principal")
        if not isinstance(payload.get("exp"), int) or payload["exp"] < now:
            raise self._refuse("it has expired")
        if spent is not None:
            nonce = payload.get("n")
            if type(nonce) is not str:
                raise self._refuse("it carries no id, and this server takes each state once")
            if not spent.take(nonce, payload["exp"], now):
                raise self._refuse("it was used already (this server takes each state once)")
        answers = payload.get("a")
        return answers if type(answers) is dict else {}

    @staticmethod
    def _refuse(why: str) -> InvalidParams:
        return InvalidParams(f"Invalid params: requestState rejected: {why}",
                             data={"path": "params.requestState"})


class SpentStates:
    """The ids of the single-use states taken so far, each kept until it expires (a
    state past its expiry is refused anyway): MRTR's advice for servers whose inputs
    must be consumed at most once (a one-time redemption), enforced server-side."""

    def __init__(self) -> None:
        self._until: dict[str, int] = {}
        self._next_sweep = 0.0

    def take(self, nonce: str, expires: int, now: float) -> bool:
        """Mark ``nonce`` taken; False when it was already."""
        if now >= self._next_sweep:
            # Amortised: at most one sweep a minute keeps the table to the live states.
            self._until = {n: exp for n, exp in self._until.items() if exp >= now}
            self._next_sweep = now + 60.0
        if nonce in self._until:
            return False
        self._until[nonce] = expires
        return True

    def __len__(self) -> int:
        return len(self._until)


@attrs.frozen(kw_only=True)
class InputRequiredResponse:
    """Client side: a server's ``InputRequiredResult`` (the request is not answered
    yet). ``input_requests``: key → ``{"method", "params"}``; ``request_state``: echo
    it, unread, on the retry."""

    input_requests: dict[str, dict[str, Any]]
    request_state: str | None
    raw: dict[str, Any]

    @classmethod
    def of(cls, result: dict[str, Any]) -> InputRequiredResponse:
        """Read one off the wire (malformed parts are left out, not guessed at)."""
        requests = result.get("inputRequests")
        state = result.get("requestState")
        return cls(
            input_requests={k: v for k, v in requests.items() if type(v) is dict}
            if type(requests) is dict else {},
            request_state=state if type(state) is str else None,
            raw=result,
        )
