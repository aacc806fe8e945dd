#!/usr/bin/env bash
# Run the auth/* client scenarios of the official conformance suite against
# examples/conformance_client.py. Exits non-zero on any FAILURE, WARNING, client
# timeout or non-zero client exit.
#
#   - the pinned 0.1.16 suite: every auth/* scenario it lists (core auth, 2025-03-26
#     back-compat, draft and extension ones; 22), at the 2025-11-25 wire;
#   - 0.2.0-alpha.12: the auth/* scenarios of the requirement sets 2026-07-28 (25
#     required, at the stateless wire) and 2025-11-25 (14), one at a time. Of the
#     extension scenarios a set runs without scoring, those mcpactor implements
#     (SCORED_EXTENSIONS: DPoP, DPoP nonces, workload identity federation,
#     enterprise-managed authorization, client credentials) count like the required
#     ones; any other is reported but never fails the run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
CLIENT=("$PY" "$ROOT/examples/conformance_client.py")
SCORED_EXTENSIONS=(auth/dpop auth/dpop-nonce auth/wif-jwt-bearer
    auth/enterprise-managed-authorization auth/client-credentials-basic
    auth/client-credentials-jwt)

mapfile -t SCENARIOS < <("$ROOT/scripts/conformance.sh" list 2>/dev/null \
    | sed -n 's/^  - \(auth\/[^ ]*\).*/\1/p')
if ((${#SCENARIOS[@]} == 0)); then
    echo "[conformance-auth] error: the suite lists no auth/* scenarios" >&2
    exit 2
fi
echo "[conformance-auth] ${#SCENARIOS[@]} scenarios: ${SCENARIOS[*]}" >&2
rc=0
CONFORMANCE_STRICT=1 CONFORMANCE_CLIENT_SCENARIOS="${SCENARIOS[*]}" \
    "$ROOT/scripts/conformance.sh" client "${CLIENT[@]}" || rc=$?
for rev in 2026-07-28 2025-11-25; do
    CONFORMANCE_STRICT=1 CONFORMANCE_VERSION=0.2.0-alpha.12 CONFORMANCE_REQUIREMENTS="$rev" \
        CONFORMANCE_CLIENT_KIND=auth CONFORMANCE_SCORE="${SCORED_EXTENSIONS[*]}" \
        "$ROOT/scripts/conformance.sh" client "${CLIENT[@]}" || rc=$?
done
exit "$rc"
