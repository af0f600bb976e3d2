#!/usr/bin/env bash
# Run Django's own tests of the Tasks framework (tests/tasks/ of the installed Django's source
# distribution) against SkipQueueBackend. The sdist is downloaded once into a cache directory
# outside the repository; the expected result of every test is the table in
# docs/reference/conformance.md (see tests/conformance/plugin.py). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE="${DJANGO_SDIST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/skipqueue-conformance}"
VERSION="$(python -c 'import django; print(django.__version__)')"
SDIST="$CACHE/django-$VERSION.tar.gz"
UPSTREAM="$CACHE/django-$VERSION/tests"

mkdir -p "$CACHE"
if [ ! -f "$SDIST" ]; then
    python -m pip download --quiet --no-binary :all: --no-deps "django==$VERSION" -d "$CACHE"
fi
if [ ! -d "$UPSTREAM/tasks" ]; then
    tar -xzf "$SDIST" -C "$CACHE" "django-$VERSION/tests/tasks"
fi

PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" exec python -m pytest -c pyproject.toml \
    --rootdir . --ds tests.conformance.settings -p tests.conformance.plugin \
    -p no:cacheprovider "$UPSTREAM/tasks" "$@"
