"""Acceptance: purge 500,000 finished rows in chunks of at most 5,000 while claims go on.

The server itself says how many rows each purge transaction changed: the purge's own session
counters ``Handler_delete + Handler_update + Handler_write`` (rows deleted, changed, inserted
in real tables; internal temporary tables count apart), read when the transaction begins and
again just before it commits. Meanwhile another connection claims and completes jobs and times
each claim.

Not ``information_schema.INNODB_TRX.trx_rows_modified``: that table is a server-wide cache,
refreshed only once nobody has read it for 0.1 s. Read at every commit of chunks that take
less than that (or while any other session polls it), it returns an earlier transaction's
figure; a chunk shrunk to 520 rows was reported with its 5,000-row predecessor's count.
"""

from __future__ import annotations

import statistics
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction

from django_skipqueue import transitions
from django_skipqueue.maintenance.purge import purge
from django_skipqueue.models import Job
from tests.support.bulkfill import insert_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql, pytest.mark.slow]
DAY = 86_400


#: The session counters of rows deleted, changed (not merely matched) and inserted.
CHANGE_COUNTERS = ("HANDLER_DELETE", "HANDLER_UPDATE", "HANDLER_WRITE")


def rows_changed_by_session() -> int:
    """Return how many rows this session has changed so far (exact and uncached)."""
    with connection.connection.cursor() as raw:  # the driver's cursor: no wrappers
        raw.execute(
            "SELECT SUM(VARIABLE_VALUE) FROM information_schema.SESSION_STATUS "
            "WHERE VARIABLE_NAME IN (%s, %s, %s)",
            CHANGE_COUNTERS,
        )
        return int(raw.fetchone()[0])


class TransactionMeter:
    """Record the rows each DELETE removed, and the rows each committed transaction changed."""

    def __init__(self) -> None:
        self.deleted_by_statement: list[int] = []
        self._deleted_in_transaction = 0
        self._changed_before = 0
        #: (rows the transaction changed, rows its DELETEs removed), per commit.
        self.transactions: list[tuple[int, int]] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Hook the default connection's transaction start and commit."""
        connection.ensure_connection()
        set_autocommit, commit = connection._set_autocommit, connection._commit

        def begin_or_end(autocommit: bool) -> None:
            if not autocommit:
                self._begin()
            set_autocommit(autocommit)

        def measured_commit() -> None:
            self._end()
            commit()

        monkeypatch.setattr(connection, "_set_autocommit", begin_or_end)
        monkeypatch.setattr(connection, "_commit", measured_commit)

    def execute(self, execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if sql.lstrip().upper().startswith("DELETE"):
            self.deleted_by_statement.append(context["cursor"].rowcount)
            self._deleted_in_transaction += context["cursor"].rowcount
        return result

    def _begin(self) -> None:
        self._deleted_in_transaction = 0
        self._changed_before = rows_changed_by_session()

    def _end(self) -> None:
        changed = rows_changed_by_session() - self._changed_before
        self.transactions.append((changed, self._deleted_in_transaction))
        self._deleted_in_transaction = 0

    def chunk_transactions(self) -> list[int]:
        """The rows changed by each transaction that deleted jobs."""
        return [changed for changed, deleted in self.transactions if deleted]


def fill() -> None:
    """500,000 old finished rows in ten slices, with active jobs in the key range between."""
    for _ in range(10):
        insert_jobs(50_000, status="succeeded", finished_seconds_ago=8 * DAY)
        insert_jobs(300, status="ready", queue_name="emails")
        insert_jobs(100, status="ready")
        insert_jobs(50, status="claimed")
        insert_jobs(50, status="scheduled", run_after_seconds=3600)
    insert_jobs(100, status="succeeded", finished_seconds_ago=3600)  # recent: kept


def snapshot(ids=None) -> dict[int, tuple]:
    rows = Job.objects.exclude(status__in=["succeeded", "failed", "cancelled"])
    if ids is not None:
        rows = Job.objects.filter(pk__in=ids)
    return {r[0]: r[1:] for r in rows.values_list("pk", "status", "owner", "attempts")}


def test_the_meter_counts_each_of_several_quick_transactions_exactly(monkeypatch):
    """Transactions a few milliseconds apart, and one that also changes a row it keeps."""
    insert_jobs(60, status="succeeded", finished_seconds_ago=DAY)
    ids = sorted(Job.objects.values_list("pk", flat=True))
    meter = TransactionMeter()
    meter.install(monkeypatch)
    with connection.execute_wrapper(meter.execute):
        for size in (30, 5, 20):
            with transaction.atomic():
                Job.objects.filter(pk__in=ids[:size]).delete()
            ids = ids[size:]
        with transaction.atomic():
            Job.objects.filter(pk__in=ids[:3]).update(owner="someone-else")
            Job.objects.filter(pk__in=ids[3:]).delete()
    assert meter.transactions == [(30, 30), (5, 5), (20, 20), (5, 2)]
    assert meter.chunk_transactions() == [30, 5, 20, 5]


def test_purge_of_500k_rows_keeps_every_transaction_under_5000_rows_and_claims_working(
    close_thread_connections, monkeypatch
):
    fill()
    active = snapshot()
    assert len(active) == 5000
    done, latencies, claimed_ids = threading.Event(), [], []
    errors: list[BaseException] = []

    def claim_and_complete() -> None:
        try:
            while not done.is_set():
                began = time.perf_counter()
                jobs = Job.objects.claim(["emails"], limit=10, owner="claimer", lease=60)
                latencies.append((began, time.perf_counter() - began))
                for job in jobs:
                    claimed_ids.append(job.pk)
                    assert transitions.succeed(job, None)
                time.sleep(0.02)
        except BaseException as error:
            errors.append(error)
        finally:
            connections.close_all()

    meter = TransactionMeter()
    meter.install(monkeypatch)
    claimer = threading.Thread(target=claim_and_complete)
    claimer.start()
    try:
        time.sleep(2)  # claim latency without a purge, for comparison
        purge_began = time.perf_counter()
        with connection.execute_wrapper(meter.execute):
            summary = purge(older_than=timedelta(days=7), chunk=5000, sleep=0)
    finally:
        done.set()
        claimer.join()

    assert errors == []
    assert summary.deleted == 500_000
    assert sum(meter.deleted_by_statement) == 500_000
    chunks = meter.chunk_transactions()
    assert len(chunks) == summary.chunks, "one transaction per chunk"
    assert sum(chunks) == 500_000, "the chunks' transactions changed nothing but the deletes"
    assert max(chunks) <= 5000, "a transaction changed more rows"
    assert max(meter.deleted_by_statement) <= 5000
    # Untouched: every active job is still there, as it was, unless the claimer took it.
    after = snapshot(active)
    claimed = set(claimed_ids)
    assert set(after) == set(active)
    assert {pk: row for pk, row in after.items() if pk not in claimed} == {
        pk: row for pk, row in active.items() if pk not in claimed
    }
    assert Job.objects.filter(status="succeeded", owner="old-worker").count() == 100
    # Claims kept working during the whole purge.
    before = [latency for began, latency in latencies if began < purge_began]
    during = [latency for began, latency in latencies if began >= purge_began]
    assert len(claimed) >= 100 and len(during) >= 20
    p50, p95 = statistics.median(during), statistics.quantiles(during, n=20)[18]
    assert p95 < 1.0 and max(during) < 5.0, (p50, p95, max(during))
    idle_p50, idle_p95 = statistics.median(before), statistics.quantiles(before, n=20)[18]
    chunks = sorted(chunks)
    print(
        f"\npurge: {summary.deleted:,} rows in {summary.seconds:.1f}s "
        f"({summary.rate:,.0f} rows/s), {summary.chunks} chunks, sizes "
        f"min {chunks[0]} median {chunks[len(chunks) // 2]} max {chunks[-1]}, "
        f"longest transaction {summary.longest_transaction * 1000:.0f} ms; "
        f"claims during purge: {len(during)} queries, {len(claimed)} jobs in all, "
        f"p50 {p50 * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms, max {max(during) * 1000:.1f} ms; "
        f"before it: p50 {idle_p50 * 1000:.1f} ms, p95 {idle_p95 * 1000:.1f} ms"
    )
