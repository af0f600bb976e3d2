#!/usr/bin/env bash
# The older supported Django versions (docs/howto/install.md): for each, a virtualenv of its own
# (cached under .venvs/, ignored by git), the project installed into it, and the backend
# contract, the workers, the reliability suite and the docs' how-to samples on MariaDB (the
# tutorial relies on Django 6.1's startproject settings, which print emails: newest only).
# scripts/test.sh runs the whole suite on the newest Django; this script runs after it.
# Usage: bash scripts/matrix.sh [VERSION...]   (default: every version below; extra pytest
# arguments go in SKIPQUEUE_MATRIX_PYTEST_ARGS, e.g. "-x").
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
export PYTHONDONTWRITEBYTECODE=1

MYSQL_URL="${SKIPQUEUE_TEST_MYSQL_URL:-mysql://root@127.0.0.1:3306/skipqueue}"
VENVS="${SKIPQUEUE_MATRIX_VENVS:-$ROOT/.venvs}"
# What each older Django runs, on MariaDB: the backend contract, the workers (the per-version
# test among them), the reliability suite, and the how-to pages' samples, each page on one of
# the older versions in turn (every page also runs on the newest Django).
SUITES=(tests/backend tests/worker tests/reliability)
# Run on the newest Django only (scripts/test.sh), to keep .ci/run within its time: what
# measures scale, query counts or the clock rather than an API of Django (the claim, reap and
# completion statements are this package's own SQL on every Django): the 20,000-job drain and
# claim race, random kill -9 over 10,000 jobs, the mixed-load deadlock count, server restarts
# and outages, wake-up and idle query counts, the hot path's module count, faked clocks, the
# daemons against private servers and brokers that the tests start and stop (they pass on the
# older versions too, but take 80 s a version under load for no API of Django).
NEWEST_ONLY=(
    test_daemon_dependencies
    test_two_processes_drain_20000_jobs_each_exactly_once
    test_runworkers_startup
    test_worker_database_faults
    test_sixteen_claimers_claim_twenty_thousand_jobs_exactly_once
    test_random_kill_9_loses_nothing_and_explains_every_duplicate
    test_mixed_load_reports_its_deadlocks_and_loses_nothing
    test_server_restart
    test_wakeup
    test_worker_idle
    test_hot_path_modules
    test_clock
)
DESELECT="not ${NEWEST_ONLY[0]}$(printf ' and not %s' "${NEWEST_ONLY[@]:1}")"

howto_pages() {
    # The how-to pages of tests/docs/test_docs.py (HOWTO_PAGES) that the $1-th older version
    # of $2 runs: every $2-th page, starting at the $1-th.
    python3 - "$1" "$2" <<'EOF'
import ast, sys
tree = ast.parse(open("tests/docs/test_docs.py").read())
pages = next(
    ast.literal_eval(node.value) for node in tree.body
    if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "HOWTO_PAGES"
)
share, of = int(sys.argv[1]), int(sys.argv[2])
for page in pages[share::of]:
    print(f"tests/docs/test_docs.py::test_howto_page[{page}]")
EOF
}

# Django version -> the Python it runs on ("" for the Python of scripts/setup.sh's .venv).
declare -A PYTHON_FOR=([5.2]="3.12" [6.0]="")
VERSIONS=("$@")
[[ ${#VERSIONS[@]} -eq 0 ]] && VERSIONS=(5.2 6.0)

log() { printf '[matrix] %s\n' "$*" >&2; }

# shellcheck source=scripts/pythons.sh
source "$ROOT/scripts/pythons.sh"

make_venv() {
    # A virtualenv with Django ~= $1 and the project (editable) with its test extra. Rebuilt
    # when pyproject.toml changes; the project's own source is always the checkout's.
    local version="$1" venv="$VENVS/django-$1" py
    py="$(python_for "$version")"
    if [[ ! -x "$venv/bin/python" ]]; then
        log "creating $venv with $py"
        "$py" -m venv "$venv"
        "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1
    fi
    local stamp
    stamp="$venv/.installed-$(sha1sum pyproject.toml | cut -c1-12)"
    if [[ ! -f "$stamp" ]]; then
        log "installing the project and Django~=$version.0 into $venv"
        "$venv/bin/python" -m pip install -q -e "$ROOT[test]" "Django~=$version.0" \
            >"$venv/pip-install.log" 2>&1 || { cat "$venv/pip-install.log" >&2; return 1; }
        rm -f "$venv"/.installed-*
        touch "$stamp"
    fi
    "$venv/bin/python" - "$version" <<'EOF'
import sys
import django
assert django.get_version().startswith(sys.argv[1] + "."), django.get_version()
EOF
}

status=0
share=0
for version in "${VERSIONS[@]}"; do
    printf '\n=== Django %s: contract, workers, reliability, how-to samples on MariaDB ===\n' "$version"
    started=$SECONDS
    make_venv "$version"
    venv="$VENVS/django-$version"
    mapfile -t pages < <(howto_pages "$share" "${#VERSIONS[@]}")
    share=$((share + 1))
    # shellcheck disable=SC2086
    if ! DATABASE_URL="$MYSQL_URL" "$venv/bin/python" -m pytest -p no:cacheprovider -q \
        -m "not browser" -k "$DESELECT" ${SKIPQUEUE_MATRIX_PYTEST_ARGS:-} \
        "${SUITES[@]}" "${pages[@]}"; then
        status=1
    fi
    log "Django $version: $((SECONDS - started)) s"
done
exit $status
