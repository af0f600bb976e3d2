"""django-q2 with its ORM broker (package defaults, one cluster of BENCH_WORKERS)."""

import os

from benchmarks.peers.base import *  # noqa: F403
from benchmarks.peers.base import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "django_q"]
Q_CLUSTER = {
    "name": "bench",
    "orm": "default",
    "workers": int(os.environ.get("BENCH_WORKERS", "1")),
    "timeout": 60,
    "retry": 120,
    "ack_failures": True,
    "catch_up": False,
    "log_level": "WARNING",
}
