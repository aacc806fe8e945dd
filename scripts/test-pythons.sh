#!/usr/bin/env bash
# The unit tests on the other Pythons the package declares (pyproject's classifiers):
# each in its own venv under .cache/venv-X.Y, the package installed there with its dev
# extras. `make test` runs them on the machine's default Python (3.11 here).
#
#   scripts/test-pythons.sh            3.12 and 3.13
#   scripts/test-pythons.sh 3.12       one of them
#
# The newest version runs the whole suite (less the parts named below); the versions
# between it and the main Python run the core folders (CORE: the protocol, sessions,
# transports, server, recording and replay, where the interpreter's internals and the
# compiled hooks matter), to keep CI well inside its hour.
# TEST_PYTHONS_FULL=1 runs the whole suite on every version.
#
# An interpreter is looked for in pyenv's versions folder, then as pythonX.Y on PATH,
# and used only if it runs and is that version. A version that is nowhere on the
# machine is reported, by name, with how to get it; it does not fail the run (the
# machine lacks it, the code is not at fault), and the line says that it was not tested.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.12 3.13)

works() {
    # A candidate counts only if it runs and is that version (a pyenv shim for a
    # version that is not selected is on PATH but fails).
    local py="$1" v="$2"
    [ -x "$py" ] && [ "$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" = "$v" ]
}

find_python() {
    local v="$1" cand
    local root="${PYENV_ROOT:-$HOME/.pyenv}"
    # pyenv's own folder first (the newest patch release there), then PATH.
    for cand in $(ls -d "$root"/versions/"$v".*/bin/python 2>/dev/null | sort -rV) \
                "$(command -v "python$v" 2>/dev/null || true)"; do
        if [ -n "$cand" ] && works "$cand" "$v"; then
            echo "$cand"
            return 0
        fi
    done
    return 1
}

CORE=(tests/protocol tests/session tests/transports tests/server tests/tracing
      tests/replay tests/testing tests/packaging)
newest="$(printf '%s\n' "${versions[@]}" | sort -V | tail -1)"

scripts/npm-interop.sh install
status=0
for v in "${versions[@]}"; do
    if ! py="$(find_python "$v")"; then
        echo "[test-pythons] Python $v: not on this machine (put python$v on PATH or" \
             "'pyenv install $v'): NOT TESTED"
        continue
    fi
    venv=".cache/venv-$v"
    echo "[test-pythons] Python $v: $py ($("$py" --version 2>&1)), venv $venv"
    if [ ! -x "$venv/bin/python" ]; then
        "$py" -m venv "$venv"
    fi
    "$venv/bin/python" -m pip install -q --upgrade pip
    "$venv/bin/python" -m pip install -q -e '.[dev]'
    # The live replay corpus (30+ traces x 10 replays), the scale-out deployments
    # (redis, haproxy, worker processes), the connection floods, the live --against
    # servers, the interop peers (the official SDKs and npm packages), the benchmark
    # drivers and the docs' examples run once, in `make unit` on the main Python: here
    # they would add minutes to CI for paths no Python version changes (sockets,
    # subprocesses, other projects' code, timing). The compiled hooks, the protocol
    # core, the sessions, transports, recording and replay all run here.
    targets=()
    if [ "$v" != "$newest" ] && [ "${TEST_PYTHONS_FULL:-0}" = 0 ]; then
        targets=("${CORE[@]}")
        echo "[test-pythons] Python $v: the core folders (${CORE[*]})"
    fi
    if "$venv/bin/python" -m pytest -q -p no:cacheprovider "${targets[@]}" \
            --ignore=tests/replay/test_replay_live_corpus.py --ignore=tests/scaleout \
            --ignore=tests/http/test_http_connection_limits.py \
            --ignore=tests/replay/test_replay_against_order.py \
            --ignore=tests/replay/test_replay_changed_live.py \
            --ignore=tests/interop --ignore=tests/bench_drivers --ignore=tests/docs; then
        echo "[test-pythons] Python $v: passed"
    else
        echo "[test-pythons] Python $v: FAILED"
        status=1
    fi
done
exit $status
