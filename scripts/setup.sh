#!/usr/bin/env bash
# Prepare a machine: a Python 3.12+ virtualenv with the project and the servers its caller uses.
# Safe to run again: it skips what is done and never touches a server that already answers.
# Usage: source scripts/setup.sh, with SKIPQUEUE_EXTRAS the pip extras (default: test,docs,bench).
# With the test extras it needs MariaDB, PostgreSQL, RabbitMQ and NATS on their usual local ports;
# otherwise (the demo) only the server DATABASE_URL names: none for SQLite, the default.
# Where apt-get exists it installs what is missing (Debian); elsewhere it says in one line what to
# install. A server it installs itself is given the passwordless local access the tests assume.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
EXTRAS="${SKIPQUEUE_EXTRAS:-test,docs,bench}"
STAMP="$VENV/.installed-$(sha1sum <"$ROOT/pyproject.toml" | cut -c1-12)-${EXTRAS//,/-}"

log() { printf '[setup] %s\n' "$*" >&2; }

as_root() {
    if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

wait_for_port() {
    local port="$1" name="$2"
    for _ in $(seq 120); do port_open "$port" && return; sleep 0.5; done
    log "$name does not answer on 127.0.0.1:$port"; return 1
}

install_packages() {
    # Install the Debian packages not installed yet; without apt-get, name them and stop.
    local missing=()
    for pkg; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
    [[ ${#missing[@]} -eq 0 ]] && return
    if ! command -v apt-get >/dev/null 2>&1; then
        log "install ${missing[*]} (Debian's names; your system's equivalents), then run this again"
        return 1
    fi
    log "installing system packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # Another apt-get (an unattended upgrade, a second checkout's setup) may hold dpkg's lock:
    # wait for it rather than fail.
    local apt=(apt-get -o DPkg::Lock::Timeout=600 -y -q)
    as_root "${apt[@]}" install "${missing[@]}" >/dev/null \
        || { as_root "${apt[@]}" update >/dev/null && as_root "${apt[@]}" install "${missing[@]}" >/dev/null; }
}

# --- Python ---------------------------------------------------------------------------------

is_recent_python() {
    "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1
}

find_python() {
    # The newest Python 3.12+ on PATH or in pyenv; else Debian's, where the distribution has one.
    local candidates=() version
    for name in python3.14 python3.13 python3.12 python3; do
        command -v "$name" >/dev/null 2>&1 && candidates+=("$(command -v "$name")")
    done
    if command -v pyenv >/dev/null 2>&1; then
        candidates+=($(ls -d "$(pyenv root)"/versions/3.1[2-9]*/bin/python 2>/dev/null | sort -rV))
    fi
    for py in "${candidates[@]}"; do
        is_recent_python "$py" && { echo "$py"; return; }
    done
    for version in 3.14 3.13 3.12; do
        if command -v apt-get >/dev/null 2>&1 && apt-cache show "python$version" >/dev/null 2>&1; then
            install_packages "python$version"
            command -v "python$version"; return
        fi
    done
    log "no Python 3.12+ here: install one (Debian 12 has 3.11 only: pyenv install 3.12), then run this again"
    return 1
}

python_packages() {
    # Debian's own Python lacks venv (ensurepip) and the headers mysqlclient builds with.
    command -v dpkg >/dev/null 2>&1 || return 0
    local py="$1" version include wanted=()
    version="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    include="$("$py" -c 'import sysconfig; print(sysconfig.get_path("include"))')"
    "$py" -c 'import ensurepip' >/dev/null 2>&1 || wanted+=("python$version-venv")
    [[ -f "$include/Python.h" ]] || wanted+=("python$version-dev")
    install_packages pkg-config libmariadb-dev gcc "${wanted[@]}"
}

make_virtualenv() {
    # The stamp names the pyproject.toml and the extras installed: with it, nothing is installed.
    [[ -f "$STAMP" ]] && is_recent_python "$VENV/bin/python" && return
    if ! is_recent_python "$VENV/bin/python"; then
        local py
        py="$(find_python)"
        python_packages "$py"
        log "creating virtualenv with $py"
        rm -rf "$VENV"; "$py" -m venv "$VENV"
        "$VENV/bin/python" -m pip install -q --upgrade pip 2>/dev/null
    fi
    python_packages "$VENV/bin/python"
    log "installing the project with extras [$EXTRAS]"
    "$VENV/bin/python" -m pip install -q -e "$ROOT[$EXTRAS]" >"$VENV/pip-install.log" 2>&1 \
        || { cat "$VENV/pip-install.log" >&2; return 1; }
    "$VENV/bin/python" -c 'import django_skipqueue, MySQLdb, environ'
    touch "$STAMP"
}

# --- Servers --------------------------------------------------------------------------------

declare -A PORT=([mariadb]=3306 [postgresql]=5432 [rabbitmq]=5672 [nats]=4222)
declare -A PACKAGE=([mariadb]=mariadb-server [postgresql]=postgresql [rabbitmq]=rabbitmq-server
    [nats]=nats-server)

wanted_servers() {
    # The tests use every server; the demo only the one its DATABASE_URL names.
    if [[ "$EXTRAS" == *test* ]]; then echo mariadb postgresql rabbitmq nats; return; fi
    case "${DATABASE_URL:-}" in
        mysql*|mariadb*) echo mariadb ;;
        postgres*|pgsql*) echo postgresql ;;
    esac
}

server_installed() {
    case "$1" in
        mariadb) installed mariadbd ;;
        postgresql) installed pg_ctlcluster && ls -d /etc/postgresql/*/main >/dev/null 2>&1 ;;
        *) installed "${PACKAGE[$1]}" ;;
    esac
}

installed() {
    command -v "$1" >/dev/null 2>&1 || [[ -x "/usr/sbin/$1" ]]
}

start_service() {
    # Start a Debian service, without systemd where there is none (containers).
    if [[ -d /run/systemd/system ]]; then as_root systemctl start "$1"; else as_root service "$1" start; fi
}

start_mariadb() { start_service mariadb; }
start_postgresql() { start_service postgresql; }
start_rabbitmq() { start_service rabbitmq-server; }

start_nats() {
    # Debian's service runs without JetStream, which the outbox tests publish to.
    as_root mkdir -p /var/lib/nats-server
    as_root start-stop-daemon --start --oknodo --background \
        --exec "$(command -v nats-server || echo /usr/sbin/nats-server)" -- \
        -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
}

configure_mariadb() {
    # Debian's root logs in over the socket only; the tests connect over TCP with no password.
    as_root mariadb -e \
        "ALTER USER root@localhost IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD('')"
}

configure_postgresql() {
    # A fresh cluster asks for a password over TCP; the tests connect as postgres with none.
    local cluster
    cluster="$(ls -d /etc/postgresql/*/main | sort -V | tail -1)"
    as_root sed -i '1i host all postgres 127.0.0.1/32 trust' "$cluster/pg_hba.conf"
    as_root pg_ctlcluster "$(basename "$(dirname "$cluster")")" main reload
}

configure_rabbitmq() { :; }  # guest may log in from localhost
configure_nats() { :; }

ensure_servers() {
    # Start only what is down; install what is missing (in one go, or named in one line), and
    # configure only what was installed here: a server that runs already is left as it is.
    local down=() fresh=() server
    for server in $(wanted_servers); do port_open "${PORT[$server]}" || down+=("$server"); done
    for server in "${down[@]}"; do server_installed "$server" || fresh+=("$server"); done
    [[ ${#fresh[@]} -eq 0 ]] || install_packages $(for s in "${fresh[@]}"; do echo "${PACKAGE[$s]}"; done)
    for server in "${down[@]}"; do
        log "starting $server"
        "start_$server"
        wait_for_port "${PORT[$server]}" "$server"
    done
    for server in "${fresh[@]}"; do "configure_$server"; done
}

test_packages() {
    # prometheus: the metrics tests start the binary on a port of their own (never the service).
    # iproute2, nftables: the multi-host rig (network namespaces, tc netem, nft drop rules).
    # curl: the Prometheus how-to reads the metrics endpoints with it, as its reader does.
    [[ "$EXTRAS" != *test* ]] || install_packages chromium faketime prometheus iproute2 nftables curl
}

make_virtualenv
test_packages
ensure_servers
export PATH="$VENV/bin:$PATH"
