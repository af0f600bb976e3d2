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
# The suites each older Django runs: the contract, the workers (the per-version test among
# them), the reliability suite and the docs' how-to samples, on MariaDB.
SUITES=(tests/backend tests/worker tests/reliability tests/docs/test_docs.py::test_howto_page)
# Run on the newest Django only (scripts/test.sh), to keep .ci/run within its time: scenarios
# whose point is scale or a server's outage, not an API of Django (the claim, reap and
# completion statements are this package's own SQL, the same on every Django): the 20,000-job
# drain and claim race, random kill -9 over 10,000 jobs, the mixed-load deadlock count, the
# server restarts under load and at startup.
NEWEST_ONLY="not test_two_processes_drain_20000_jobs_each_exactly_once"
NEWEST_ONLY+=" and not test_runworkers_waits_for_a_database_that_is_down_at_start"
NEWEST_ONLY+=" and not test_an_outage_while_running_logs_a_few_lines_per_process"
NEWEST_ONLY+=" and not test_workers_survive_killed_connections_and_a_server_restart"
NEWEST_ONLY+=" and not test_sixteen_claimers_claim_twenty_thousand_jobs_exactly_once"
NEWEST_ONLY+=" and not test_random_kill_9_loses_nothing_and_explains_every_duplicate"
NEWEST_ONLY+=" and not test_mixed_load_reports_its_deadlocks_and_loses_nothing"
NEWEST_ONLY+=" and not test_restarts_under_load_lose_nothing_and_hang_no_worker"

# Django version -> the Python it runs on ("" for the Python of scripts/setup.sh's .venv).
declare -A PYTHON_FOR=([5.2]="3.12" [6.0]="")
VERSIONS=("$@")
[[ ${#VERSIONS[@]} -eq 0 ]] && VERSIONS=(5.2 6.0)

log() { printf '[matrix] %s\n' "$*" >&2; }

python_for() {
    local wanted="${PYTHON_FOR[$1]}"
    if [[ -z "$wanted" ]]; then
        command -v python3
        return
    fi
    local found
    found="$(ls -d "$(pyenv root 2>/dev/null || echo /nonexistent)"/versions/"$wanted"*/bin/python 2>/dev/null \
        | sort -V | tail -1 || true)"
    [[ -z "$found" ]] && found="$(command -v "python$wanted" || true)"
    [[ -n "$found" ]] || { log "no Python $wanted (pyenv or PATH) for Django $1"; return 1; }
    echo "$found"
}

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
for version in "${VERSIONS[@]}"; do
    printf '\n=== Django %s: contract, workers, reliability, how-to samples on MariaDB ===\n' "$version"
    started=$SECONDS
    make_venv "$version"
    venv="$VENVS/django-$version"
    # shellcheck disable=SC2086
    if ! DATABASE_URL="$MYSQL_URL" "$venv/bin/python" -m pytest -p no:cacheprovider \
        -m "not browser" -k "$NEWEST_ONLY" \
        ${SKIPQUEUE_MATRIX_PYTEST_ARGS:-} "${SUITES[@]}"; then
        status=1
    fi
    log "Django $version: $((SECONDS - started)) s"
done
exit $status
