#!/usr/bin/env bash
# Run every auth/* client scenario of the official conformance suite (core auth,
# 2025-03-26 back-compat, draft and extension ones) against examples/conformance_client.py.
# Exits non-zero on any FAILURE, WARNING, client timeout or non-zero client exit.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
# Every auth/* client scenario the installed suite lists (22 in 0.1.16).
mapfile -t SCENARIOS < <("$ROOT/scripts/conformance.sh" list 2>/dev/null \
    | sed -n 's/^  - \(auth\/[^ ]*\).*/\1/p')
if ((${#SCENARIOS[@]} == 0)); then
    echo "[conformance-auth] error: the suite lists no auth/* scenarios" >&2
    exit 2
fi
echo "[conformance-auth] ${#SCENARIOS[@]} scenarios: ${SCENARIOS[*]}" >&2
CONFORMANCE_STRICT=1 CONFORMANCE_CLIENT_SCENARIOS="${SCENARIOS[*]}" \
    exec "$ROOT/scripts/conformance.sh" client "$PY" "$ROOT/examples/conformance_client.py"
