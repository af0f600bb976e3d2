"""The work every system runs: a no-op, and a probe that records when it started.

Plain functions, importable without Django (Celery, django-q2); the Django Tasks form
is in ``benchmarks.tasks``.
"""

from __future__ import annotations

import os
import time

#: File that ``probe`` appends "key start_time" lines to (set by the latency scenario).
PROBE_FILE_ENV = "BENCH_PROBE_FILE"


def noop_function() -> None:
    """Do nothing: the benchmark measures the queue, not the task."""


def probe_function(key: str) -> None:
    """Append this job's start time (wall clock, same host as the producer) to a file.

    One ``os.write`` of a short line to an O_APPEND file is atomic, so any number of
    worker processes and threads can share the file without a lock or a query.
    """
    started = time.time()
    fd = os.open(os.environ[PROBE_FILE_ENV], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{key} {started:.6f}\n".encode())
    finally:
        os.close(fd)
