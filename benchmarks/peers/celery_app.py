"""Celery with the local Redis as broker, ``acks_late``, no result backend."""

from __future__ import annotations

import os

from celery import Celery

from benchmarks import jobs

REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
QUEUE = "bench"

app = Celery("bench", broker=REDIS_URL)
app.conf.update(
    task_acks_late=True,
    task_ignore_result=True,
    task_default_queue=QUEUE,
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
)

noop = app.task(name="bench.noop")(jobs.noop_function)
probe = app.task(name="bench.probe")(jobs.probe_function)
