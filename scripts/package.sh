#!/usr/bin/env bash
# The package as users get it: build the sdist and the wheel, check both with twine, then for
# each supported Django install the wheel into a fresh virtualenv outside the checkout, create a
# small project on MariaDB, migrate, enqueue a workload, run `runworkers --burst` and verify
# every job's result (docs/howto/install.md, "What CI runs").
# Usage: bash scripts/package.sh [VERSION...]   (default: 5.2 6.0 6.1)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
export PYTHONDONTWRITEBYTECODE=1
unset PYTHONPATH

MYSQL_HOST="${SKIPQUEUE_PACKAGE_MYSQL_HOST:-127.0.0.1}"
MYSQL_PORT="${SKIPQUEUE_PACKAGE_MYSQL_PORT:-3306}"
# Django version -> the Python it is tried with ("" for the Python running this script).
declare -A PYTHON_FOR=([5.2]="3.12" [6.0]="" [6.1]="")
VERSIONS=("$@")
[[ ${#VERSIONS[@]} -eq 0 ]] && VERSIONS=(5.2 6.0 6.1)
JOBS=20

log() { printf '[package] %s\n' "$*" >&2; }

WORK="$(mktemp -d /tmp/skipqueue-package.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

# shellcheck source=scripts/pythons.sh
source "$ROOT/scripts/pythons.sh"

printf '\n=== build the sdist and the wheel, twine check ===\n'
rm -rf "$WORK/dist"
python -m build --sdist --wheel --outdir "$WORK/dist" . >"$WORK/build.log" 2>&1 \
    || { cat "$WORK/build.log" >&2; exit 1; }
python -m twine check --strict "$WORK"/dist/*
WHEEL="$(ls "$WORK"/dist/django_skipqueue-*.whl)"
SDIST="$(ls "$WORK"/dist/django_skipqueue-*.tar.gz)"
# What the wheel must carry besides the code: templates, static files, migrations, the marker
# of a typed package, and the license.
python - "$WHEEL" "$SDIST" <<'EOF'
import sys, tarfile, zipfile
wheel = zipfile.ZipFile(sys.argv[1]).namelist()
for part in ("django_skipqueue/py.typed", "django_skipqueue/migrations/0001_initial.py",
             "django_skipqueue/templates/", "django_skipqueue/static/", "licenses/LICENSE"):
    assert any(part in name for name in wheel), f"the wheel has no {part}"
assert not any(name.startswith(("tests/", "testproject/", "benchmarks/")) for name in wheel)
sdist = tarfile.open(sys.argv[2]).getnames()
assert any(name.endswith("/LICENSE") for name in sdist), "the sdist has no LICENSE"
print(f"wheel: {len(wheel)} files; sdist: {len(sdist)} files")
EOF

# The small project: one app whose task has options, fails its first attempt on n == 0
# (retried), and returns n * n.
write_project() {
    local dir="$1" database="$2"
    mkdir -p "$dir/shop"
    "$dir/venv/bin/django-admin" startproject mysite "$dir" >/dev/null
    touch "$dir/shop/__init__.py"
    cat >"$dir/shop/tasks.py" <<'EOF'
from django_skipqueue.tasks import task


@task(takes_context=True, max_attempts=3, retry_backoff=0, timeout=60)
def square(context, n: int) -> int:
    if n == 0 and context.attempt < 2:
        raise RuntimeError("the first attempt on 0 fails")
    return n * n
EOF
    cat >>"$dir/mysite/settings.py" <<EOF

INSTALLED_APPS += ["django_skipqueue", "shop"]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.mysql",
        "HOST": "$MYSQL_HOST",
        "PORT": "$MYSQL_PORT",
        "USER": "root",
        "NAME": "$database",
    }
}
TASKS = {"default": {"BACKEND": "django_skipqueue.backend.SkipQueueBackend"}}
USE_TZ = True
EOF
}

ENQUEUE="
from shop.tasks import square
open('ids.txt', 'w').write(','.join(square.enqueue(n).id for n in range($JOBS)))
"
VERIFY="
import django, django_skipqueue, sys
from pathlib import Path
from shop.tasks import square
assert 'site-packages' in django_skipqueue.__file__, django_skipqueue.__file__
assert (Path(django_skipqueue.__file__).parent / 'templates').is_dir()
ids = open('ids.txt').read().strip().split(',')
results = [square.get_result(i) for i in ids]
assert all(r.status == 'SUCCESSFUL' for r in results), [r.status for r in results]
assert [r.return_value for r in results] == [n * n for n in range($JOBS)]
assert results[0].attempts == 2 and len(results[0].errors) == 1, results[0].errors
print(f'Django {django.get_version()}: {len(results)} jobs succeeded, one after a retry,'
      f' from {django_skipqueue.__file__}')
"

status=0
passed=0
failed=0
for version in "${VERSIONS[@]}"; do
    printf '\n=== the wheel on Django %s, outside the checkout ===\n' "$version"
    started=$SECONDS
    dir="$WORK/django-$version"
    database="skipqueue_wheel_${version//./_}"
    py="$(python_for "$version")"
    if ! (
        set -e
        "$py" -m venv "$dir/venv"
        "$dir/venv/bin/python" -m pip install -q "$WHEEL" "Django~=$version.0" \
            >"$dir/pip.log" 2>&1 || { cat "$dir/pip.log" >&2; exit 1; }
        write_project "$dir" "$database"
        mysql -h "$MYSQL_HOST" -P "$MYSQL_PORT" -uroot \
            -e "DROP DATABASE IF EXISTS $database; CREATE DATABASE $database"
        cd "$dir"
        venv/bin/python manage.py check --fail-level WARNING
        venv/bin/python manage.py migrate --verbosity 0
        venv/bin/python manage.py shell -c "$ENQUEUE"
        timeout 300 venv/bin/python manage.py runworkers --burst --processes 1 --threads 2 \
            >workers.log 2>&1 || { tail -50 workers.log >&2; exit 1; }
        venv/bin/python manage.py shell -c "$VERIFY"
        mysql -h "$MYSQL_HOST" -P "$MYSQL_PORT" -uroot -e "DROP DATABASE $database"
    ); then
        log "Django $version: FAILED"
        status=1
        failed=$((failed + 1))
    else
        passed=$((passed + 1))
    fi
    log "Django $version: $((SECONDS - started)) s"
done
printf 'package: %d passed, %d failed\n' "$passed" "$failed"
exit $status
