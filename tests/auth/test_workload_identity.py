"""Workload identity federation (SEP-1933): the workload's JWT as an RFC 7523 grant,
against a real authorization server and resource gate on 127.0.0.1
(tests/auth/ext_stub.py): the three assertion sources, refusals surfaced and never
retried, bad configuration named, DPoP on top."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.lowlevel
from ext_stub import JWT_BEARER, ExtAuthServer, ext_stack

from mcpactor import connect_http
from mcpactor.auth import ClientConfig, OAuthClient, WorkloadIdentityGrant
from mcpactor.protocol.errors import RequestError


def _client(url: str, grant: WorkloadIdentityGrant, **options: Any) -> OAuthClient:
    return OAuthClient(url, grant=grant, **options)


async def _add(url: str, auth: OAuthClient, mode: str = "auto") -> None:
    async with connect_http(url, auth=auth, timeout=10, mode=mode) as client:
        result = await client.call_tool("add", {"a": 2, "b": 3})
        assert result.content[0].text == "5"  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_workload_jwt_gets_a_token(mode: str) -> None:
    with trio.fail_after(30):
        async with ext_stack(schemes=("Bearer",)) as st:
            jwt = st.auth.workload_jwt()
            await _add(st.mcp_url, _client(st.mcp_url, WorkloadIdentityGrant(jwt)), mode)
            [req] = st.auth.token_requests
            assert req.status == 200
            assert req.form == {"grant_type": JWT_BEARER, "assertion": jwt,
                                "resource": st.mcp_url}  # no client id, no secret
            assert not st.auth.requests("/register") and not st.auth.requests("/authorize")
            ok = [j for j in st.gate.judged if j.verdict == "ok"]
            assert ok and {j.scheme for j in ok} == {"Bearer"}
            assert ok[0].claims is not None
            assert ok[0].claims["sub"] == "system:serviceaccount:ci:runner"


async def test_the_file_is_read_for_each_token_request(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with ext_stack(schemes=("Bearer",)) as st:
            path = tmp_path / "token"
            first = st.auth.workload_jwt(sub="one")
            path.write_text(first + "\n")
            auth = _client(st.mcp_url, WorkloadIdentityGrant(assertion_file=path))
            await _add(st.mcp_url, auth)
            # The platform rotates the file; the next token (the first one expired)
            # comes from the new JWT.
            second = st.auth.workload_jwt(sub="two")
            path.write_text(second)
            auth.clock = lambda: 10.0**10
            await _add(st.mcp_url, auth)
            assert [r.form["assertion"] for r in st.auth.token_requests] == [first, second]


async def test_a_function_gives_the_jwt_for_the_issuer() -> None:
    with trio.fail_after(30):
        async with ext_stack(schemes=("Bearer",)) as st:
            asked: list[str] = []

            async def fetch(audience: str) -> str:
                asked.append(audience)
                await trio.lowlevel.checkpoint()
                return st.auth.workload_jwt(audience=audience)

            await _add(st.mcp_url, _client(st.mcp_url, WorkloadIdentityGrant(fetch)))
            assert asked == [st.auth.base]
            assert [r.status for r in st.auth.token_requests] == [200]


@pytest.mark.parametrize(("kind", "error"), [
    ("expired", "invalid_grant"),
    ("wrong audience", "invalid_grant"),
    ("forbidden scope", "invalid_scope"),
])
async def test_a_refusal_is_surfaced_and_never_retried(kind: str, error: str) -> None:
    with trio.fail_after(30):
        async with ext_stack(schemes=("Bearer",)) as st:
            jwt = {"expired": st.auth.workload_jwt(lifetime=-60),
                   "wrong audience": st.auth.workload_jwt(audience="https://elsewhere.example"),
                   "forbidden scope": st.auth.workload_jwt()}[kind]
            config = ClientConfig(scope="forbidden" if kind == "forbidden scope" else None)
            auth = _client(st.mcp_url, WorkloadIdentityGrant(jwt), config=config)
            with pytest.raises(RequestError, match=f"token endpoint: {error}"):
                await _add(st.mcp_url, auth)
            with pytest.raises(RequestError, match="the same assertion is not sent again"):
                await _add(st.mcp_url, auth)  # the application tries again: no request
            # One token request in all, of the jwt-bearer grant: no retry, no other grant.
            assert [(r.form["grant_type"], r.error) for r in st.auth.token_requests] \
                == [(JWT_BEARER, error)]
            assert not st.auth.requests("/authorize") and not st.auth.requests("/register")


async def test_a_new_jwt_after_a_refusal_is_tried(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with ext_stack(schemes=("Bearer",)) as st:
            path = tmp_path / "token"
            path.write_text(st.auth.workload_jwt(lifetime=-60))
            auth = _client(st.mcp_url, WorkloadIdentityGrant(assertion_file=path))
            with pytest.raises(RequestError, match="invalid_grant"):
                await _add(st.mcp_url, auth)
            path.write_text(st.auth.workload_jwt())  # the platform's next token
            await _add(st.mcp_url, auth)
            assert [r.status for r in st.auth.token_requests] == [400, 200]


async def test_server_errors_are_not_remembered_as_refusals() -> None:
    with trio.fail_after(30):
        async with ext_stack(schemes=("Bearer",)) as st:
            jwt = st.auth.workload_jwt()
            handle = st.auth.handle
            down = {"on": True}

            def flaky(seen: Any) -> Any:
                if seen.path == "/token" and down["on"]:
                    return 503, {"error": "temporarily_unavailable"}, {}
                return handle(seen)

            st.auth.handle = flaky  # type: ignore[method-assign]
            auth = _client(st.mcp_url, WorkloadIdentityGrant(jwt))
            with pytest.raises(RequestError, match="temporarily_unavailable"):
                await _add(st.mcp_url, auth)
            down["on"] = False
            await _add(st.mcp_url, auth)


async def test_workload_tokens_can_be_dpop_bound() -> None:
    with trio.fail_after(30):
        async with ext_stack() as st:  # a DPoP-only resource
            auth = _client(st.mcp_url, WorkloadIdentityGrant(st.auth.workload_jwt()))
            await _add(st.mcp_url, auth)
            [req] = st.auth.token_requests
            assert auth.dpop.key is not None and req.jkt == auth.dpop.key.thumbprint
            assert {j.scheme for j in st.gate.judged if j.verdict == "ok"} == {"DPoP"}


async def test_an_authorization_server_without_the_grant_is_named() -> None:
    with trio.fail_after(30):
        plain = ExtAuthServer(grant_types=["authorization_code"])
        async with ext_stack(auth=plain, schemes=("Bearer",)) as st:
            auth = _client(st.mcp_url, WorkloadIdentityGrant(st.auth.workload_jwt()))
            with pytest.raises(RequestError, match="does not offer the JWT bearer grant"):
                await _add(st.mcp_url, auth)
            assert st.auth.token_requests == []


async def test_bad_sources_are_named_when_used(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with ext_stack(schemes=("Bearer",)) as st:
            missing = tmp_path / "nope"
            cases: list[tuple[WorkloadIdentityGrant, str]] = [
                (WorkloadIdentityGrant(assertion_file=missing),
                 f"cannot read the workload assertion from {missing}"),
                (WorkloadIdentityGrant(lambda aud: "not a jwt"),
                 "the workload assertion source holds no JWT"),
                (WorkloadIdentityGrant(lambda aud: 42),  # type: ignore[arg-type,return-value]
                 "returned a int, not a JWT string"),
                (WorkloadIdentityGrant(lambda aud: 1 / 0),
                 "the workload assertion source failed: ZeroDivisionError"),
            ]
            empty = tmp_path / "empty"
            empty.write_text("\n")
            cases.append((WorkloadIdentityGrant(assertion_file=empty),
                          f"the file {empty} holds no JWT"))
            for grant, message in cases:
                with pytest.raises(RequestError, match=message):
                    await _add(st.mcp_url, _client(st.mcp_url, grant))
            assert st.auth.token_requests == []


def test_bad_configuration_is_refused_when_made(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs exactly one assertion source"):
        WorkloadIdentityGrant()
    with pytest.raises(ValueError, match="needs exactly one assertion source"):
        WorkloadIdentityGrant("a.b.c", assertion_file=tmp_path / "t")
    with pytest.raises(ValueError, match="assertion= is not a JWT"):
        WorkloadIdentityGrant("/var/run/secrets/token")  # a path given as the JWT
    with pytest.raises(TypeError, match="must be a JWT string or a function"):
        WorkloadIdentityGrant(b"a.b.c")  # type: ignore[arg-type]
