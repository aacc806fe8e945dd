"""When an :class:`~mcpactor.auth.OAuthClient` uses DPoP, and the state that goes
with it: :class:`DPoPSigner`.

It decides whether a token request asks for a DPoP-bound token (the client's ``dpop``
mode and what the resource server said), holds the key (generated when first needed,
for an algorithm both servers accept), signs each request's proof and keeps the nonces
servers hand out (``DPoP-Nonce``, RFC 9449 §8 and §9): a resource server's per origin,
a token endpoint's per endpoint (the two may share a host without taking each other's
nonces). Sans-I/O: the HTTP layers call it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Final, Literal

from mcpactor.auth.challenge import parse_www_authenticate
from mcpactor.auth.dpop import SUPPORTED_ALGORITHMS, DPoPKey, make_proof, proof_htu
from mcpactor.auth.errors import AuthorizationError
from mcpactor.auth.metadata import AuthorizationServerMetadata, ProtectedResourceMetadata, origin_of
from mcpactor.extras import MissingExtra

__all__ = ["DPOP_MODES", "DPoPMode", "DPoPSigner"]

log = logging.getLogger("mcpactor.auth.client")

DPoPMode = Literal["auto", "always", "never"]
#: ``auto``: DPoP when the resource server asks for it; ``always``: every token request,
#: and a Bearer token is refused; ``never``: plain Bearer tokens only.
DPOP_MODES: Final = ("auto", "always", "never")


def _algs(value: str | None) -> list[str] | None:
    return value.split() if value and value.strip() else None


class DPoPSigner:
    """One client's DPoP mode, key and nonces (see the module docstring)."""

    def __init__(self, mode: str = "auto", key: DPoPKey | None = None) -> None:
        if mode not in DPOP_MODES:
            raise ValueError(f"dpop={mode!r}: use one of {', '.join(map(repr, DPOP_MODES))}")
        if key is not None and not isinstance(key, DPoPKey):
            raise TypeError(f"dpop_key must be a DPoPKey (DPoPKey.generate() or "
                            f"DPoPKey.from_pem(...)), not {type(key).__name__}")
        if key is not None and mode == "never":
            raise ValueError("dpop_key was given with dpop='never': drop one of them")
        self.mode = mode
        #: The key; None until a token request first needs one (unless given).
        self.key = key
        #: The resource server accepts DPoP (its challenge or its metadata says so).
        self.resource_accepts = False
        #: ... and accepts nothing else (a DPoP-only challenge, or
        #: ``dpop_bound_access_tokens_required``).
        self.resource_requires = False
        #: Algorithms the resource server named (challenge ``algs``, metadata).
        self.resource_algs: list[str] | None = None
        self._nonces: dict[str, str] = {}

    # -- what the resource server says --------------------------------------------------

    def note_challenge(self, www_authenticate: str | None) -> None:
        """Read a 401/403's challenges: does the resource take (only) DPoP?"""
        if not www_authenticate:
            return
        challenges = parse_www_authenticate(www_authenticate)
        dpop = [c for c in challenges if c.scheme.lower() == "dpop"]
        if not dpop:
            return
        self.resource_accepts = True
        if not any(c.is_bearer for c in challenges):
            self.resource_requires = True
        algs = _algs(dpop[0].params.get("algs"))
        if algs:
            self.resource_algs = algs

    def note_resource_metadata(self, prm: ProtectedResourceMetadata) -> None:
        """Read RFC 9728's DPoP fields (RFC 9449 §5.2's ``dpop_*``)."""
        if prm.dpop_signing_alg_values_supported:
            self.resource_accepts = True
            self.resource_algs = prm.dpop_signing_alg_values_supported
        if prm.dpop_bound_access_tokens_required:
            self.resource_accepts = self.resource_requires = True

    # -- token requests ------------------------------------------------------------------

    def for_token_request(self, asm: AuthorizationServerMetadata) -> DPoPKey | None:
        """The key to bind the next token to, or None for a Bearer token.

        Makes the key when first needed, for an algorithm the authorization server
        (and the resource server, when it named some) accepts.
        """
        if self.mode == "never":
            if self.resource_requires:
                raise AuthorizationError(
                    "the server accepts only DPoP-bound access tokens (RFC 9449), and this "
                    "client was made with dpop='never': use dpop='auto' (the default) or "
                    "'always'")
            return None
        if self.mode == "auto" and not self.resource_accepts:
            return None
        offered = asm.dpop_signing_alg_values_supported
        if self.key is None:
            alg = self._choose_alg(offered)
            try:
                self.key = DPoPKey.generate(alg)
            except MissingExtra as exc:
                if self.mode == "auto" and not self.resource_requires:
                    log.info("DPoP offered, but %s: going on with Bearer tokens", exc)
                    return None
                raise AuthorizationError(str(exc)) from exc
            log.debug("generated a DPoP key (%s)", self.key.alg)
        elif offered is not None and self.key.alg not in offered:
            raise AuthorizationError(
                f"the authorization server takes DPoP proofs signed with "
                f"{', '.join(offered) or 'no algorithm'}, not with this client's {self.key.alg} "
                f"key: give OAuthClient a dpop_key of one of those")
        return self.key

    def _choose_alg(self, offered: list[str] | None) -> str:
        for alg in SUPPORTED_ALGORITHMS:
            if (offered is None or alg in offered) and (
                    self.resource_algs is None or alg in self.resource_algs):
                return alg
        # The resource's list may be for another purpose; the authorization server's
        # decides (it binds the token).
        for alg in SUPPORTED_ALGORITHMS:
            if offered is None or alg in offered:
                return alg
        raise AuthorizationError(
            f"the authorization server takes DPoP proofs signed with "
            f"{', '.join(offered or []) or 'no algorithm'}; this client can sign with "
            f"{', '.join(SUPPORTED_ALGORITHMS)}")

    @property
    def bearer_refused(self) -> bool:
        """Whether a Bearer token is no use (``always``, or a DPoP-only resource)."""
        return self.mode == "always" or self.resource_requires

    # -- proofs and nonces ---------------------------------------------------------------

    @staticmethod
    def _where(url: str, endpoint: bool) -> str:
        return "endpoint " + proof_htu(url) if endpoint else origin_of(url)

    def proof(self, method: str, url: str, *, access_token: str | None = None,
              endpoint: bool = False) -> str:
        """A fresh proof for one request, with the nonce its server gave us last
        (``endpoint``: a token endpoint's, else the origin's)."""
        if self.key is None:
            raise AuthorizationError("no DPoP key: a DPoP-bound token needs the key it was "
                                     "bound to")
        nonce = self._nonces.get(self._where(url, endpoint))
        return make_proof(self.key, method, url, access_token=access_token, nonce=nonce)

    def note_nonce(self, url: str, headers: Mapping[str, str], *,
                   endpoint: bool = False) -> bool:
        """Keep the ``DPoP-Nonce`` a response carries (any response may carry one);
        whether it carried a new one."""
        nonce = headers.get("dpop-nonce")
        if not nonce:
            return False
        where = self._where(url, endpoint)
        if self._nonces.get(where) == nonce:
            return False
        self._nonces[where] = nonce
        return True

    @staticmethod
    def is_nonce_challenge(status: int, headers: Mapping[str, str]) -> bool:
        """A resource server's "try again with this nonce" (RFC 9449 §9): a 401 whose
        DPoP challenge says ``use_dpop_nonce`` and that carries a ``DPoP-Nonce``."""
        if status != 401 or not headers.get("dpop-nonce"):
            return False
        return any(c.scheme.lower() == "dpop" and c.error == "use_dpop_nonce"
                   for c in parse_www_authenticate(headers.get("www-authenticate") or ""))
