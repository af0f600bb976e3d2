"""The claim reads only what it returns: index choice and records read, with a big history.

InnoDB locks every index record a locking read scans, so a claim that scanned history or
future jobs would be slow *and* would lock rows it does not return.
"""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from django_skipqueue.models import Job
from django_skipqueue.queues import unpaused
from tests.support.bulkfill import insert_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql]

LIMIT = 50
HANDLER_READS = (
    "Handler_read_first",
    "Handler_read_key",
    "Handler_read_last",
    "Handler_read_next",
    "Handler_read_prev",
    "Handler_read_rnd",
    "Handler_read_rnd_next",
)


def session_handler_reads() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SHOW SESSION STATUS LIKE 'Handler_read%%'")
        return sum(int(value) for name, value in cursor.fetchall() if name in HANDLER_READS)


def records_read_by(work) -> int:
    """Handler_read_* delta of ``work`` on this connection, minus SHOW STATUS's own reads."""
    first = session_handler_reads()
    overhead = session_handler_reads() - first
    before = session_handler_reads()
    work()
    return session_handler_reads() - before - overhead


def explain_claim(queue_name: str = "default") -> list[dict]:
    with transaction.atomic():
        sql, params = Job.objects.claimable(queue_name)[:LIMIT].query.sql_with_params()
    assert "FOR UPDATE SKIP LOCKED" in sql
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + sql, params)
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def analyze() -> None:
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE TABLE skipqueue_job")
        cursor.fetchall()


def measured_claim(owner: str) -> tuple[int, list[Job]]:
    """Records one claim's statements read, and the jobs it claimed.

    The list of paused queues, read at most once a second (about 11 records of its own on a
    fresh connection), is read before the measure starts: it is not the claim's index at work.
    """
    unpaused(["default"])
    claimed: list[Job] = []
    reads = records_read_by(
        lambda: claimed.extend(Job.objects.claim(["default"], limit=LIMIT, owner=owner))
    )
    return reads, claimed


def test_claim_uses_the_claim_index_and_reads_only_what_it_claims():
    insert_jobs(500)
    analyze()
    empty_history_reads, _ = measured_claim("w-empty")

    insert_jobs(200_000, status="succeeded", finished_seconds_ago=3600)
    insert_jobs(50_000, status="scheduled", run_after_seconds=86_400)
    insert_jobs(500)
    insert_jobs(20_000, status="failed", finished_seconds_ago=60)
    analyze()

    [plan] = explain_claim()
    assert plan["key"] == "skipqueue_claim", plan
    assert "filesort" not in (plan["Extra"] or ""), plan
    assert int(plan["rows"]) < 5_000, plan  # the ready prefix, not the history

    big_history_reads, claimed = measured_claim("w-big")
    assert len(claimed) == LIMIT
    assert all(job.status == "claimed" for job in claimed)
    assert empty_history_reads <= 3 * LIMIT + 10, empty_history_reads
    assert big_history_reads <= 3 * LIMIT + 10, big_history_reads
    assert abs(big_history_reads - empty_history_reads) <= 5


def test_a_full_table_scan_would_be_caught():
    """The counter is real: the same measurement sees a scan of the history."""
    insert_jobs(5_000, status="succeeded", finished_seconds_ago=10)
    reads = records_read_by(lambda: list(Job.objects.filter(task_path="nothing")))
    assert reads >= 5_000


def test_a_worker_of_every_queue_finds_the_ready_queues_by_a_short_index_read():
    """QUEUES = []: each poll asks which queues have ready jobs (see Claimer)."""
    from django_skipqueue.monitoring.metrics import Metrics
    from django_skipqueue.worker.claimer import Claimer
    from django_skipqueue.worker.options import WorkerOptions

    for queue_name in ("alpha", "beta", "gamma"):
        insert_jobs(5_000, queue_name=queue_name)
        insert_jobs(20_000, status="succeeded", queue_name=queue_name, finished_seconds_ago=60)
    insert_jobs(20_000, status="scheduled", queue_name="delta", run_after_seconds=3600)
    analyze()
    claimer = Claimer(WorkerOptions(queues=()), "w-any", Metrics())
    found: list[str] = []
    reads = records_read_by(lambda: found.extend(claimer.queues_with_ready_jobs()))
    assert found == ["alpha", "beta", "gamma"]
    assert reads < 20, reads  # one or two index entries per queue, not the 15,000 ready rows
