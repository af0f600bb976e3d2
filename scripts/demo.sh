#!/usr/bin/env bash
# Run workers on the demo workload. With no DATABASE_URL the demo uses an embedded SQLite
# file; set DATABASE_URL=mysql://root@127.0.0.1:3306/skipqueue to use MariaDB/MySQL.
# Extra arguments go to runworkers (default: --processes 2 --threads 4 --burst).
set -euo pipefail
cd "$(dirname "$0")/.."
SKIPQUEUE_EXTRAS="${SKIPQUEUE_EXTRAS:-postgres}" source scripts/setup.sh
python testproject/manage.py migrate --verbosity 0
python testproject/manage.py enqueue_demo --jobs "${DEMO_JOBS:-2000}"
[[ $# -eq 0 ]] && set -- --processes=2 --threads=4 --burst
python testproject/manage.py runworkers "$@"
python testproject/manage.py enqueue_demo --report
