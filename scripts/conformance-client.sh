#!/usr/bin/env bash
# CI entry point: run every non-auth client scenario of the official conformance
# suite against examples/conformance_client.py (mcpactor's Streamable HTTP client).
# Exits non-zero on any FAILURE, WARNING, client timeout or non-zero client exit.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
CONFORMANCE_STRICT=1 exec "$ROOT/scripts/conformance.sh" client "$PY" "$ROOT/examples/conformance_client.py"
