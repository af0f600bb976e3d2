"""Acceptance: runworkers drains a large backlog with real processes, each job exactly once."""

from __future__ import annotations

import re
import time

import pytest
from django.db.models import Count

from django_skipqueue.models import Job, WorkerProcess
from testproject.demo.models import LedgerEntry
from testproject.demo.tasks import record
from tests.support.workers import Runworkers, status_counts

pytestmark = pytest.mark.django_db(transaction=True)


def enqueue_records(backend, count: int) -> None:
    for start in range(0, count, 1000):
        backend.enqueue_many([(record, [], {"label": "drain"})] * min(1000, count - start))


def ledger_is_exactly_once(count: int) -> None:
    assert LedgerEntry.objects.count() == count
    per_job = LedgerEntry.objects.values("job_id").annotate(n=Count("id"))
    assert per_job.count() == count and not per_job.filter(n__gt=1).exists()
    assert set(LedgerEntry.objects.values_list("attempt", flat=True)) == {1}


@pytest.mark.mysql
@pytest.mark.slow
def test_two_processes_drain_20000_jobs_each_exactly_once(
    backend, child_env, manage_py, tmp_path, capsys
):
    enqueue_records(backend, 20_000)
    workers = Runworkers(
        manage_py, child_env, tmp_path / "drain.log",
        "--processes", "2", "--threads", "4", "--burst", "--queues", "default",
    )  # fmt: skip
    began = time.monotonic()
    try:
        assert workers.wait(timeout=900) == 0, workers.log()[-3000:]
    finally:
        workers.stop()
    elapsed = time.monotonic() - began
    assert status_counts() == {"succeeded": 20_000}
    ledger_is_exactly_once(20_000)
    rows = WorkerProcess.objects.filter(role="worker")
    assert rows.count() == 2 and all(row.stopped_at for row in rows)
    assert sum(row.succeeded for row in rows) == 20_000
    summary = re.search(r"runworkers stopped .*", workers.log())
    assert summary and "succeeded=20000" in summary.group(0)
    with capsys.disabled():
        print(f"\ndrain: 20000 jobs in {elapsed:.1f} s = {20_000 / elapsed:.0f} jobs/s")


def test_burst_drains_a_small_backlog_on_any_database(backend, child_env, manage_py, tmp_path):
    enqueue_records(backend, 300)
    workers = Runworkers(
        manage_py, child_env, tmp_path / "drain.log",
        "--processes", "2", "--threads", "2", "--burst", "--queues", "default",
    )  # fmt: skip
    try:
        assert workers.wait(timeout=300) == 0, workers.log()[-3000:]
    finally:
        workers.stop()
    assert status_counts() == {"succeeded": 300}
    ledger_is_exactly_once(300)
    log = workers.log()
    assert "runworkers starting" in log and "processes=2" in log and "threads=2" in log
    job_lines = re.findall(r"^job=\d+ .*status=succeeded.*$", log, re.MULTILINE)
    assert len(job_lines) == 300
    assert not Job.objects.claimed().exists()
