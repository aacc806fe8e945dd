#!/usr/bin/env bash
# CI entry point: run the official conformance suite's client scenarios against
# examples/conformance_client.py (mcpactor's Streamable HTTP client).
# Exits non-zero on any FAILURE, WARNING, client timeout or non-zero client exit.
#
# Two harness versions, installed side by side (scripts/conformance.sh install, and
# CONFORMANCE_VERSION=0.2.0-alpha.12 scripts/conformance.sh install):
#   - the pinned 0.1.16 suite: every non-auth client scenario (2025-11-25 wire);
#   - 0.2.0-alpha.12 at 2026-07-28: only the required scenarios that pass today.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"

rc=0
CONFORMANCE_STRICT=1 "$ROOT/scripts/conformance.sh" client "$PY" "$ROOT/examples/conformance_client.py" \
    || rc=$?

# 2026-07-28 client scenarios (requirements/2026-07-28.yaml `client:`) that pass.
ALPHA_PASSING="tools_call"
# KNOWN FAILING (required at 2026-07-28, not done yet; see docs/conformance.md):
#   request-metadata, sep-2322-client-request-state, http-standard-headers,
#   http-custom-headers, http-invalid-tool-headers, json-schema-ref-no-deref
#     (examples/conformance_client.py has no mapping for these scenarios yet, and the
#      client does not mirror x-mcp-header arguments nor drop invalid annotated tools);
#   every auth/* scenario at the 2026-07-28 wire (not run against the 2026 client yet).
CONFORMANCE_STRICT=1 CONFORMANCE_VERSION=0.2.0-alpha.12 CONFORMANCE_CLIENT_SCENARIOS="$ALPHA_PASSING" \
    "$ROOT/scripts/conformance.sh" client "$PY" "$ROOT/examples/conformance_client.py" || rc=$?
exit "$rc"
