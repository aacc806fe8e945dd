#!/usr/bin/env bash
# Create (or refresh) the benchmark venv at .cache/bench-venv.
#
# Peers (the official SDK, FastMCP) pull in pydantic, starlette, uvicorn, ...; keeping
# them out of the project's .venv means the project's tests never pass by accident
# because a peer dragged in a dependency. Idempotent: re-running only installs what
# changed, and skips pip entirely when requirements and pyproject are unchanged.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.cache/bench-venv"
python="${PYTHON:-python3.11}"
command -v "$python" >/dev/null 2>&1 || python=python3

if [[ ! -x "$venv/bin/python" ]]; then
    mkdir -p "$root/.cache"
    "$python" -m venv "$venv"
fi

# A stamp of the inputs lets repeated runs (CI, the harness) return in milliseconds.
stamp="$venv/.bench-stamp"
want="$(cat "$root/benchmarks/requirements.txt" "$root/pyproject.toml" | sha256sum | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "bench venv up to date: $venv"
    exit 0
fi

pip_install() {
    # This machine's pip config names local indexes that may be absent; pip warns per
    # package about them, which buries real errors, so only those lines are dropped.
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@" \
        2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
}
pip_install -r "$root/benchmarks/requirements.txt"
# --no-deps would miss a new project dependency; a plain editable install is cheap.
# hypercorn is an extra now (mcpactor[hypercorn]); the benchmarks serve through it too,
# and the scale-out workload runs `mcpactor run --redis` (mcpactor[redis]).
pip_install -e "$root[hypercorn,redis]"
echo "$want" > "$stamp"
echo "bench venv ready: $venv"
