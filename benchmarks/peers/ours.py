"""django-skipqueue (this project)."""

import os

from benchmarks.peers.base import *  # noqa: F403
from benchmarks.peers.base import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "django_skipqueue"]
TASKS = {"default": {"BACKEND": "django_skipqueue.backend.SkipQueueBackend"}}

# BENCH_PREFETCH: SKIPQUEUE_PREFETCH for a run (a number; unset: the adaptive default).
if os.environ.get("BENCH_PREFETCH"):
    SKIPQUEUE_PREFETCH = int(os.environ["BENCH_PREFETCH"])
