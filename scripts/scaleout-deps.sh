#!/usr/bin/env bash
# The programs the scale-out tests run for real: Debian's redis-server (the shared
# state) and haproxy (a round-robin load balancer in front of the workers).
#
#   scripts/scaleout-deps.sh install   install them with apt-get when missing (idempotent)
#   scripts/scaleout-deps.sh check     exit 1 unless both are on PATH
#
# apt-get runs as root, or through sudo when there is one. The tests start and stop
# their own instances on free loopback ports; no system service is enabled or used.
set -euo pipefail

log() { printf '[scaleout-deps] %s\n' "$*" >&2; }

have() {
    command -v redis-server >/dev/null 2>&1 && { command -v haproxy >/dev/null 2>&1 || [[ -x /usr/sbin/haproxy ]]; }
}

install() {
    if have; then
        log "already installed: $(redis-server --version | cut -d' ' -f3), $( (haproxy -v 2>/dev/null || /usr/sbin/haproxy -v) | head -1 | cut -d' ' -f3)"
        return 0
    fi
    local sudo=()
    if [[ "$(id -u)" != 0 ]]; then
        command -v sudo >/dev/null || { log "error: not root and no sudo: install redis-server and haproxy by hand"; exit 2; }
        sudo=(sudo -n)
    fi
    command -v apt-get >/dev/null || { log "error: apt-get is required (Debian or Ubuntu)"; exit 2; }
    log "installing redis-server and haproxy with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq
    # The tests start their own instances; a service the package may start is not used.
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends redis-server haproxy >/dev/null
    have || { log "error: install finished but redis-server or haproxy is missing"; exit 1; }
    log "installed: $(redis-server --version | cut -d' ' -f3)"
}

case "${1:-}" in
    install) install ;;
    check) have ;;
    *) echo "usage: $0 install|check" >&2; exit 2 ;;
esac
