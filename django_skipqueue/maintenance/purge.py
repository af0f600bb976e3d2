"""Purge finished jobs in primary-key chunks, one short transaction each, replica-aware.

One big ``DELETE ... WHERE finished_at < ...`` is one huge transaction: it locks for its
whole length, bloats undo, and reaches each replica as a single event group that stalls
replication for as long as it took. Here each chunk is the next few thousand matching keys
in primary-key order, locked with SKIP LOCKED (the purge never waits on anyone), optionally
copied into the history table, deleted, and committed. Between chunks the purge sleeps,
re-sizes the chunk toward a target duration, and waits while a replica is behind.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q

from django_skipqueue.db.clock import read_db_now
from django_skipqueue.db.counting import estimate_count
from django_skipqueue.db.statements import retry_whole_transaction
from django_skipqueue.maintenance.archive import archive, delete_rows
from django_skipqueue.maintenance.purge_options import PurgeOptions
from django_skipqueue.maintenance.purge_report import (
    ChunkReport,
    LogReporter,
    PurgeReporter,
    PurgeSummary,
)
from django_skipqueue.maintenance.reap import runner_id
from django_skipqueue.maintenance.replicas import lagging
from django_skipqueue.managers import JobQuerySet
from django_skipqueue.models import Job, MaintenanceRun

__all__ = ["ChunkReport", "Purge", "PurgeOptions", "PurgeSummary", "purge"]

#: The adaptive chunk never shrinks below this many rows.
MIN_CHUNK = 50


class Purge:
    """One purge run; ``run()`` can be called again to go on after a time budget ran out."""

    def __init__(
        self,
        options: PurgeOptions,
        *,
        reporter: PurgeReporter | None = None,
        should_stop: Callable[[], bool] | None = None,
        runner: str | None = None,
    ) -> None:
        self.options = options
        self.runner = runner or runner_id("purge")
        self.reporter = reporter or LogReporter()
        self.should_stop = should_stop or (lambda: False)
        self.chunk = options.chunk
        #: Every key at or below this one has been dealt with.
        self.position = 0
        self.summary = PurgeSummary(dry_run=options.dry_run)
        self._condition: Q | None = None
        self._paused_at: float | None = None
        self._started_at: datetime | None = None

    def run(self, max_seconds: float | None = None) -> bool:
        """Purge until done (True), stopped or out of ``max_seconds`` (False).

        A time budget also bounds a pause for replica lag: the maintenance loop calls this
        with a few seconds at a time so that promotion and reaping never wait on a purge.
        """
        started = time.monotonic()
        try:
            if self._condition is None:
                self._start()
            while not self.should_stop():
                if max_seconds is not None and time.monotonic() - started >= max_seconds:
                    return False
                if not self._replicas_caught_up():
                    continue
                ids = self._next_ids()
                if not ids:
                    self._record()
                    return True
                self._purge_chunk(ids)
            self.summary.interrupted = True
            return False
        finally:
            self.summary.seconds += time.monotonic() - started

    def rows_left(self) -> int | None:
        """Estimate the rows still to purge (None when there is no estimate)."""
        if self.summary.estimated_total is None:
            return None
        return max(0, self.summary.estimated_total - self.summary.deleted)

    def _start(self) -> None:
        now = self._started_at = read_db_now(self.options.using)
        condition = Q(pk__in=[])
        for status, age in self.options.retention.items():
            condition |= Q(status=status, finished_at__lt=now - age)
        self._condition = condition
        self.summary.estimated_total = self._estimate()

    def _record(self) -> None:
        """Write the finished run where status shows it (a dry run changed nothing)."""
        if not self.options.dry_run and self._started_at is not None:
            summary = self.summary.as_dict()
            MaintenanceRun.record(
                self.options.using, "purge", self.runner, self._started_at, summary
            )

    def _estimate(self) -> int | None:
        if not self.options.retention:
            return 0
        return estimate_count(self._matching())

    def _matching(self) -> JobQuerySet:
        assert self._condition is not None
        return Job.objects.using(self.options.using).filter(self._condition)

    def _next_ids(self) -> list[int]:
        """Read the next chunk's keys, without locking: the transaction locks them again."""
        after = self._matching().filter(pk__gt=self.position).order_by("pk")
        return list(after.values_list("pk", flat=True)[: self.chunk])

    def _purge_chunk(self, ids: list[int]) -> None:
        if self.options.dry_run:
            deleted = len(ids)
            archived = 0
            seconds = 0.0
        else:
            began = time.monotonic()
            deleted, archived = retry_whole_transaction(
                self.options.using, lambda: self._delete(ids)
            )
            seconds = time.monotonic() - began
        report = ChunkReport(deleted, archived, seconds, len(ids), ids[0], ids[-1])
        self.position = ids[-1]
        self.summary.add(report)
        self.reporter.chunk(self, report)
        if not self.options.dry_run:
            self._adapt(seconds)
            self._sleep(self.options.sleep)

    def _delete(self, ids: list[int]) -> tuple[int, int]:
        """Lock, archive and delete one chunk in one transaction; return both counts."""
        using = self.options.using
        with transaction.atomic(using=using):
            candidates = self._matching().filter(pk__in=ids).order_by("pk")
            # Skip rows somebody holds (an admin retrying a failed job): the next run gets them.
            locked = list(
                candidates.select_for_update(skip_locked=True).values_list("pk", flat=True)
            )
            if not locked:
                return 0, 0
            archived = archive(using, locked) if self.options.archive else 0
            deleted = delete_rows(using, locked)
        return deleted, archived

    def _adapt(self, seconds: float) -> None:
        """Grow or shrink the chunk so one takes about ``chunk_seconds``, never over --chunk."""
        target = self.options.chunk_seconds
        if seconds > target:
            wanted = int(self.chunk * target / seconds * 0.9)
        elif seconds < target / 2:
            wanted = int(self.chunk * 1.5) + 1
        else:
            return
        self.chunk = max(min(MIN_CHUNK, self.options.chunk), min(wanted, self.options.chunk))

    def _replicas_caught_up(self) -> bool:
        """Tell whether every watched replica is within the lag limit; if not, wait a poll.

        An unknown lag (SQL thread stopped, replica unreachable) counts as too far behind.
        """
        behind = lagging(self.options.replicas, self.options.max_replica_lag)
        if not behind:
            if self._paused_at is not None:
                paused_for = time.monotonic() - self._paused_at
                self._paused_at = None
                self.summary.paused_seconds += paused_for
                self.reporter.resumed(self, paused_for)
            return True
        if self._paused_at is None:
            self._paused_at = time.monotonic()
            self.summary.pauses += 1
        self.reporter.paused(self, behind)
        self._sleep(self.options.lag_poll_seconds)
        return False

    def _sleep(self, seconds: float) -> bool:
        """Sleep in short steps so a stop request is seen; False if stopped."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if self.should_stop():
                return False
            time.sleep(min(left, 0.1))
        return not self.should_stop()


def purge(
    *,
    using: str = "default",
    older_than: timedelta | None = None,
    statuses: list[str] | None = None,
    reporter: PurgeReporter | None = None,
    should_stop: Callable[[], bool] | None = None,
    **options: object,
) -> PurgeSummary:
    """Purge finished jobs now, by the retention settings or ``older_than``; return the summary.

    Keyword ``options`` override the settings: chunk, chunk_seconds, sleep, replicas,
    max_replica_lag, archive, dry_run (see PurgeOptions).
    """
    config = PurgeOptions.from_settings(
        using=using, statuses=statuses, older_than=older_than, **options
    )
    runner = Purge(config, reporter=reporter, should_stop=should_stop)
    runner.run()
    return runner.summary
