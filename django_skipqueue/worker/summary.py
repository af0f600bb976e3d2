"""The summary line ``runworkers`` logs on exit: totals of every worker process it ran."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from django.db import Error
from django.db.models import Sum

from django_skipqueue.models import WorkerProcess
from django_skipqueue.worker.heartbeat import ROW_COUNTERS

if TYPE_CHECKING:
    from django_skipqueue.worker.supervisor import Supervisor

logger = logging.getLogger("django_skipqueue.supervisor")


def worker_totals(supervisor_owner: str, using: str) -> dict[str, int]:
    """Sum the counters of the worker processes one supervisor ran."""
    rows = WorkerProcess.objects.using(using).filter(supervisor=supervisor_owner)
    sums = rows.aggregate(**{name: Sum(name) for name in ROW_COUNTERS})
    return {name: int(sums[name] or 0) for name in ROW_COUNTERS}


def log_summary(supervisor: Supervisor) -> None:
    elapsed = time.monotonic() - supervisor.began
    try:
        totals = worker_totals(supervisor.owner, supervisor.using)
    except Error:
        totals = dict.fromkeys(ROW_COUNTERS, 0)
    totals["reclaimed"] += supervisor.metrics.totals["reclaimed"]
    finished = totals["succeeded"] + totals["failed"]
    logger.info(
        "runworkers stopped supervisor=%s processes_started=%s killed=%s elapsed_s=%.1f "
        "jobs_per_s=%.0f %s",
        supervisor.owner, supervisor.spawned, supervisor.killed, elapsed,
        finished / elapsed if elapsed else 0, " ".join(f"{k}={v}" for k, v in totals.items()),
    )  # fmt: skip
