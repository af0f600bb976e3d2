#!/usr/bin/env bash
# Run every quality gate and the test suite on MariaDB, PostgreSQL and SQLite.
# Extra arguments go to each pytest run (e.g. -k claim, -x).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
export PYTHONDONTWRITEBYTECODE=1

MYSQL_URL="${SKIPQUEUE_TEST_MYSQL_URL:-mysql://root@127.0.0.1:3306/skipqueue}"
PG_URL="${SKIPQUEUE_TEST_PG_URL:-postgres://postgres@127.0.0.1:5432/skipqueue}"

step() { printf '\n=== %s ===\n' "$*"; }

step "ruff"
ruff check .
ruff format --check .
step "mypy"
mypy django_skipqueue
step "makemigrations --check"
python testproject/manage.py makemigrations --check --dry-run
step "docs (warnings are errors)"
sphinx-build -q -W --keep-going -b html docs docs/_build/html

step "tests on MariaDB"
DATABASE_URL="$MYSQL_URL" pytest "$@"
step "Django's own tasks tests against SkipQueueBackend (docs/reference/conformance.md)"
DATABASE_URL="$MYSQL_URL" bash scripts/conformance.sh -q
step "tests on PostgreSQL"
DATABASE_URL="$PG_URL" pytest -m "not mysql and not browser" "$@"
step "tests on SQLite"
DATABASE_URL="sqlite:///$PWD/testproject/test.sqlite3" pytest -m "not mysql and not skip_locked and not browser" "$@"
