#!/usr/bin/env bash
# npm packages used by interop tests: the reference "everything" server and the
# official TypeScript SDK, installed into the npm prefix folder .cache/npm-interop/.
#
#   scripts/npm-interop.sh install   install (idempotent: skipped when already present)
#   scripts/npm-interop.sh path      print the server-everything entry point
#   scripts/npm-interop.sh stdio     run server-everything over stdio (for manual poking)
#
# Environment: SERVER_EVERYTHING_VERSION, TS_SDK_VERSION (npm versions; pinned defaults keep CI reproducible).
#
# Start server-everything over stdio from a test with:
#   node .cache/npm-interop/node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio
# (`stdio` is also the default when no transport argument is given).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="$ROOT/.cache/npm-interop"
MODULES="$PREFIX/node_modules/@modelcontextprotocol"
ENTRY="$MODULES/server-everything/dist/index.js"

log() { printf '[npm-interop] %s\n' "$*" >&2; }

installed() {
    [[ -f "$ENTRY" && -f "$MODULES/sdk/package.json" ]]
}

version_of() {
    node -p "require('$MODULES/$1/package.json').version"
}

install() {
    if installed; then
        log "already installed: server-everything $(version_of server-everything), sdk $(version_of sdk)"
        return 0
    fi
    command -v npm >/dev/null || { log "error: npm is required"; exit 2; }
    mkdir -p "$PREFIX"
    if [[ ! -f "$PREFIX/package.json" ]]; then
        printf '{\n  "name": "mcpactor-npm-interop",\n  "private": true\n}\n' >"$PREFIX/package.json"
    fi
    log "installing into $PREFIX"
    (cd "$PREFIX" && npm install --no-audit --no-fund --loglevel=error \
        "@modelcontextprotocol/server-everything@${SERVER_EVERYTHING_VERSION:-2026.8.31}" \
        "@modelcontextprotocol/sdk@${TS_SDK_VERSION:-1.32.2}")
    installed || { log "error: install finished but $ENTRY is missing"; exit 1; }
    log "installed: server-everything $(version_of server-everything), sdk $(version_of sdk)"
}

case "${1:-}" in
    install) install ;;
    path) installed || install; printf '%s\n' "$ENTRY" ;;
    stdio) installed || install; exec node "$ENTRY" stdio ;;
    *)
        sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
        [[ -z "${1:-}" ]] || exit 2
        ;;
esac
