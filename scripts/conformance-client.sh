#!/usr/bin/env bash
# CI entry point: run the official conformance suite's client scenarios against
# examples/conformance_client.py (mcpactor's Streamable HTTP client).
# Exits non-zero on any FAILURE, WARNING, client timeout or non-zero client exit.
#
# Two harness versions, installed side by side (scripts/conformance.sh install, and
# CONFORMANCE_VERSION=0.2.0-alpha.12 scripts/conformance.sh install):
#   - the pinned 0.1.16 suite: every non-auth client scenario (2025-11-25 wire);
#   - 0.2.0-alpha.12: every non-auth client scenario of the requirement sets 2026-07-28
#     (stateless wire) and 2025-11-25, one at a time at that revision's wire; the
#     scenarios a set runs without scoring (extensions, added after release) are
#     reported but never fail the run.
# The auth/* scenarios of both harnesses are in scripts/conformance-auth.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
CLIENT=("$PY" "$ROOT/examples/conformance_client.py")

rc=0
CONFORMANCE_STRICT=1 "$ROOT/scripts/conformance.sh" client "${CLIENT[@]}" || rc=$?
for rev in 2026-07-28 2025-11-25; do
    CONFORMANCE_STRICT=1 CONFORMANCE_VERSION=0.2.0-alpha.12 CONFORMANCE_REQUIREMENTS="$rev" \
        CONFORMANCE_CLIENT_KIND=core "$ROOT/scripts/conformance.sh" client "${CLIENT[@]}" || rc=$?
done
exit "$rc"
