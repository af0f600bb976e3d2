#!/usr/bin/env bash
# Prepare a fresh machine: system packages, a Python 3.12+ virtualenv with the project,
# and the local MariaDB and PostgreSQL servers. Safe to run again; it skips what is done.
# Usage: source scripts/setup.sh [--with-test-extras]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
EXTRAS="${SKIPQUEUE_EXTRAS:-test,docs,bench}"

log() { printf '[setup] %s\n' "$*" >&2; }

install_system_packages() {
    local wanted=(pkg-config libmariadb-dev gcc)
    # prometheus: the metrics tests start the binary on a port of their own (never the service).
    # iproute2, nftables: the multi-host rig (network namespaces, tc netem, nft drop rules).
    [[ "$EXTRAS" == *test* ]] && wanted+=(chromium faketime prometheus iproute2 nftables)
    local missing=()
    for pkg in "${wanted[@]}"; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
    [[ ${#missing[@]} -eq 0 ]] && return
    log "installing system packages: ${missing[*]}"
    local sudo=""; [[ $(id -u) -ne 0 ]] && sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get install -y -q "${missing[@]}" >/dev/null \
        || { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q "${missing[@]}" >/dev/null; }
}

find_python() {
    # The newest Python 3.12+ on PATH or in pyenv, whatever its patch version.
    local candidates=()
    for name in python3.14 python3.13 python3.12 python3; do
        command -v "$name" >/dev/null 2>&1 && candidates+=("$(command -v "$name")")
    done
    if command -v pyenv >/dev/null 2>&1; then
        candidates+=($(ls -d "$(pyenv root)"/versions/3.1[2-9]*/bin/python 2>/dev/null | sort -rV))
    fi
    for py in "${candidates[@]}"; do
        if "$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; then
            echo "$py"; return
        fi
    done
    log "no Python 3.12+ found"; return 1
}

make_virtualenv() {
    if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
        local py; py="$(find_python)"
        log "creating virtualenv with $py"
        rm -rf "$VENV"; "$py" -m venv "$VENV"
        "$VENV/bin/python" -m pip install -q --upgrade pip 2>/dev/null
    fi
    local stamp="$VENV/.installed-$(cat "$ROOT/pyproject.toml" | sha1sum | cut -c1-12)-${EXTRAS//,/-}"
    if [[ ! -f "$stamp" ]]; then
        log "installing the project with extras [$EXTRAS]"
        "$VENV/bin/python" -m pip install -q -e "$ROOT[$EXTRAS]" >"$VENV/pip-install.log" 2>&1 \
            || { cat "$VENV/pip-install.log" >&2; return 1; }
        "$VENV/bin/python" -c 'import django_skipqueue, MySQLdb, environ'
        touch "$stamp"
    fi
}

start_services() {
    if ! mysqladmin -h127.0.0.1 -uroot ping >/dev/null 2>&1; then
        log "starting MariaDB"
        start-stop-daemon --start --oknodo --background --exec "$(command -v mariadbd || echo /usr/sbin/mariadbd)"
        for _ in $(seq 60); do mysqladmin -h127.0.0.1 -uroot ping >/dev/null 2>&1 && break; sleep 0.5; done
    fi
    if [[ "$EXTRAS" == *test* ]] && ! pg_isready -h 127.0.0.1 -q 2>/dev/null; then
        log "starting PostgreSQL"
        pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
        for _ in $(seq 60); do pg_isready -h 127.0.0.1 -q && break; sleep 0.5; done
    fi
    # The outbox tests publish to RabbitMQ (5672) and NATS JetStream (4222).
    if [[ "$EXTRAS" == *test* ]] && command -v rabbitmq-server >/dev/null \
        && ! (exec 3<>/dev/tcp/127.0.0.1/5672) 2>/dev/null; then
        log "starting RabbitMQ"
        rabbitmq-server -detached >/dev/null 2>&1 || true
        for _ in $(seq 120); do (exec 3<>/dev/tcp/127.0.0.1/5672) 2>/dev/null && break; sleep 0.5; done
    fi
    if [[ "$EXTRAS" == *test* ]] && [[ -x /usr/sbin/nats-server ]] \
        && ! (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null; then
        log "starting NATS with JetStream"
        mkdir -p /var/lib/nats-server
        start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
            -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
        for _ in $(seq 60); do (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null && break; sleep 0.5; done
    fi
}

install_system_packages
make_virtualenv
start_services
export PATH="$VENV/bin:$PATH"
