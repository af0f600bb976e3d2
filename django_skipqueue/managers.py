"""Named job states as querysets, and claim(): the only query that locks."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import models
from django.db.models import Case, F, When

from django_skipqueue.db import statements
from django_skipqueue.db.clock import DatabaseNow, DatabaseNowPlus
from django_skipqueue.db.statements import (
    retry_whole_transaction,
    short_transaction,
    slot_float,
    slot_int,
    slot_str,
)
from django_skipqueue.queues import unpaused
from django_skipqueue.states import FINISHED_STATUSES, JobStatus

if TYPE_CHECKING:
    from django_skipqueue.models import Job

logger = logging.getLogger("django_skipqueue.claim")

CLAIM_ORDER = ("priority_rank", "id")


class JobQuerySet(models.QuerySet["Job"]):
    def ready(self) -> JobQuerySet:
        return self.filter(status=JobStatus.READY)

    def scheduled(self) -> JobQuerySet:
        return self.filter(status=JobStatus.SCHEDULED)

    def claimed(self) -> JobQuerySet:
        return self.filter(status=JobStatus.CLAIMED)

    def finished(self) -> JobQuerySet:
        return self.filter(status__in=FINISHED_STATUSES)

    def in_queue(self, queue_name: str) -> JobQuerySet:
        return self.filter(queue_name=queue_name)

    def due(self) -> JobQuerySet:
        """Scheduled jobs whose run_after has passed, by the database clock."""
        return self.scheduled().filter(run_after__lte=DatabaseNow())

    def expired(self) -> JobQuerySet:
        """Claimed jobs whose lease has run out, by the database clock."""
        return self.claimed().filter(lease_until__lt=DatabaseNow())

    def held_by(self, owner: str) -> JobQuerySet:
        return self.claimed().filter(owner=owner)

    def finished_before(self, moment: datetime) -> JobQuerySet:
        return self.finished().filter(finished_at__lt=moment)

    def ready_queue_names(self, limit: int | None = None) -> list[str]:
        """Return the names of the queues with ready jobs, in order, by one seek per name.

        A skip scan of the claim index: ``SELECT DISTINCT`` would read the whole ready backlog
        when MariaDB skips its loose index scan, and PostgreSQL has none.
        """
        ready = self.ready().order_by("queue_name")
        names: list[str] = []
        while limit is None or len(names) < limit:
            after = ready.filter(queue_name__gt=names[-1]) if names else ready
            name = after.values_list("queue_name", flat=True).first()
            if name is None:
                break
            names.append(name)
        return names

    def in_claim_order(self) -> JobQuerySet:
        return self.order_by(*CLAIM_ORDER)


class JobManager(models.Manager.from_queryset(JobQuerySet)):  # type: ignore[misc]
    def claim(
        self,
        queues: Sequence[str],
        *,
        limit: int,
        owner: str,
        lease: float | None = None,
    ) -> list[Job]:
        """Claim up to ``limit`` ready jobs from ``queues``, in that order, for ``owner``.

        One short transaction per queue locks only keys, in exactly the claim index's order,
        and marks them claimed; the payloads are read after commit so no lock waits on them.
        ``lease`` (seconds) overrides each job's own lease length. Paused queues are left
        out (their list is cached for about a second, see queues.py).
        """
        if limit < 1:
            raise ValueError("limit must be at least 1.")
        claimed: list[tuple[list[int], list[Job]]] = []
        for queue_name in unpaused(queues, self.db):
            wanted = limit - sum(len(ids) for ids, _ in claimed)
            if wanted <= 0:
                break
            claimed.append(self._claim_with_retry(queue_name, wanted, owner, lease))
        ids = [pk for queue_ids, _ in claimed for pk in queue_ids]
        return self._read_claimed(ids, [job for _, jobs in claimed for job in jobs], owner)

    def claim_from(
        self, queue_name: str, *, limit: int, owner: str, lease: float | None = None
    ) -> list[Job]:
        """Claim from one queue, paused or not: a worker checks its queues once a round."""
        ids, jobs = self._claim_with_retry(queue_name, limit, owner, lease)
        return self._read_claimed(ids, jobs, owner)

    def _read_claimed(self, claimed_ids: list[int], jobs: list[Job], owner: str) -> list[Job]:
        """Put the claimed rows in claim order; log those taken over."""
        if not claimed_ids:
            return []
        by_id = {job.pk: job for job in jobs}
        if len(by_id) < len(claimed_ids):
            lost = [pk for pk in claimed_ids if pk not in by_id]
            logger.warning("claims taken over before they were read jobs=%s owner=%s", lost, owner)
        return [by_id[pk] for pk in claimed_ids if pk in by_id]

    def _claim_with_retry(
        self, queue_name: str, limit: int, owner: str, lease: float | None
    ) -> tuple[list[int], list[Job]]:
        return retry_whole_transaction(
            self.db, lambda: self._claim_from(queue_name, limit, owner, lease)
        )

    def _claim_from(
        self, queue_name: str, limit: int, owner: str, lease: float | None
    ) -> tuple[list[int], list[Job]]:
        """Lock, mark and read the claimed rows: the ids in claim order, and the jobs.

        Three statements in two round trips where the driver pipelines (statements.py): the
        mark and the read of the marked rows go out together (the read needs only the ids),
        and the locking read carries the pending START TRANSACTION.
        """
        # The statements are compiled once (statements.py): ORM work used to cost more
        # CPU than the database spent on the claim; and a short transaction saves MySQL
        # the two autocommit switches of atomic().
        # One statement for every limit (LIMIT is a parameter), and the mark and the read
        # compiled for a few list sizes (statements.padded_size), not for every batch size.
        lock = statements.cached(self.db, "claim-lock", self._lock)
        # Inside a caller's transaction (a worker commits its finished jobs with its next
        # claim) no savepoint: half a claim is worth nothing, and a failed claim fails the
        # caller's transaction, as Django's atomic(savepoint=False) documents.
        with short_transaction(self.db, savepoint=False):
            ids: list[int] = statements.fetch_values(self.db, lock, [queue_name, limit])
            if not ids:
                return ids, []
            size = statements.padded_size(len(ids))
            keys = statements.padded(ids, size)
            shape = ("claim-mark", size, lease is None)
            mark = statements.cached(self.db, shape, lambda: self._mark(size, lease))
            fetch = self._fetch(size)
            _, rows = statements.run_together(
                self.db,
                [
                    statements.Run(mark, [*keys, owner, lease]),
                    statements.Run(fetch, [*keys, owner], rows=True),
                ],
            )
        return ids, statements.as_models(self.model, self.db, fetch, rows)

    def _lock(self) -> statements.Statement:
        """The locking read, its LIMIT a parameter (slot 1) after the queue name (slot 0)."""
        # Django compiles FOR UPDATE only inside a transaction.
        with short_transaction(self.db):
            queryset = self.claimable(slot_str(0))[: statements.LIMIT_MARKER]
            return statements.limit_as_parameter(statements.compile_select(queryset, 1), 1)

    def _mark(self, count: int, lease: float | None) -> statements.Statement:
        rows = self.filter(pk__in=[slot_int(i) for i in range(count)])
        fields = claimed_fields(slot_str(count), None if lease is None else slot_float(count + 1))
        return statements.compile_update(rows, fields, count + (1 if lease is None else 2))

    def _fetch(self, count: int) -> statements.Statement:
        """The read of ``count`` claimed rows, payloads included, by primary key.

        Only rows claimed by the owner (its parameter after the ids) are read. It runs in the
        claim's transaction, with the mark, so every row is still locked by the claim: the
        filter matters where a claim's rows are read later (a process paused between a
        commit and its read may find a row that the reaper took back and another worker
        claimed since; reading it would hand the caller another owner's lease).
        """
        return statements.cached(
            self.db,
            ("claim-fetch", count),
            lambda: statements.compile_select(
                self.filter(
                    pk__in=[slot_int(i) for i in range(count)],
                    owner=slot_str(count),
                    status=JobStatus.CLAIMED,
                ),
                count + 1,
            ),
        )

    def claimable(self, queue_name: str) -> models.QuerySet[Job, int]:
        """The locking read of a claim: keys only, in exactly the claim index's order."""
        return (
            self.ready()
            .in_queue(queue_name)
            .in_claim_order()
            .select_for_update(skip_locked=True)
            .values_list("pk", flat=True)
        )

    def lock_batch(self, queryset: JobQuerySet, fields: Sequence[str], limit: int) -> list[tuple]:
        """Lock up to ``limit`` rows of ``queryset``, skipping rows that others hold.

        The maintenance counterpart of claim(), for the reaper and the promotion: call it
        inside the caller's short transaction; many supervisors can run it at once and each
        gets a disjoint batch. InnoDB locks what it scans, and a filesort scans everything
        before the LIMIT: order only by what an index serves, or not at all.
        """
        locking = queryset.select_for_update(skip_locked=True)
        return list(locking.values_list(*fields)[:limit])


def claimed_fields(owner: Any, lease: Any) -> dict[str, object]:
    """Return what a claim (4) writes; the manager compiles it into the claim statement.

    Here, not in ``transitions.py``: the claim is the manager's one locking method, and the
    transitions import the models, which import this module.
    """
    now = DatabaseNow()
    return {
        "status": JobStatus.CLAIMED,
        "owner": owner,
        "lease_until": DatabaseNowPlus(F("lease_seconds") if lease is None else lease),
        "attempts": F("attempts") + 1,
        "started_at": Case(When(started_at__isnull=True, then=now), default=F("started_at")),
        "last_attempted_at": now,
    }
