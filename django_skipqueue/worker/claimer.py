"""The worker's side of ``Job.objects.claim()``: how many jobs, from which queues, and when."""

from __future__ import annotations

import time
from collections.abc import Callable

from django_skipqueue.db.clock import DatabaseNowPlus
from django_skipqueue.models import Job
from django_skipqueue.monitoring.metrics import Metrics
from django_skipqueue.pausing import unpaused
from django_skipqueue.worker.lifecycle import IdleBackoff
from django_skipqueue.worker.options import WorkerOptions

#: A burst worker waits for retries and deferred jobs due within this many seconds.
BURST_HORIZON = 10.0
#: A worker that heard a wake-up datagram this recently trusts them to announce new work.
WAKEUPS_TRUSTED_FOR = 60.0

ClaimInside = Callable[[Callable[[], list[Job]]], list[Job] | None]


class Claimer:
    """Claim into free slots queue by queue, in order; pace empty rounds with a backoff."""

    def __init__(self, options: WorkerOptions, owner: str, metrics: Metrics) -> None:
        self.options, self.owner, self.metrics = options, owner, metrics
        self.using = options.database
        # One claim query per queue a round: the pause scales so that an idle process
        # makes at most one claim query per ``poll_max`` seconds.
        self.idle = IdleBackoff(options.poll_max * max(len(options.queues), 1))
        #: Queues a wake-up named since the last claim: claimed at once, ahead of the poll.
        self.woken_for: set[str] = set()
        #: When the last wake-up datagram arrived (any queue): proof that they reach us.
        self.heard_at = float("-inf")

    @property
    def next_claim_at(self) -> float:
        return 0.0 if self.woken_for else self.idle.next_claim_at

    @property
    def backlogged(self) -> bool:
        return self.idle.backlogged

    def due(self) -> bool:
        return bool(self.woken_for) or self._poll_due()

    def wake(self, queues: set[str]) -> None:
        """Claim at the next turn from the queues a wake-up named, if this worker serves them."""
        if queues:
            self.heard_at = time.monotonic()
        self.woken_for |= queues & set(self.options.queues) if self.options.queues else queues

    @property
    def woken_reliably(self) -> bool:
        """Tell whether wake-ups reach this worker, so an emptied queue needs no quick re-poll.

        Producers wake workers after every enqueue, and the maintenance loop after it makes
        jobs ready (promotion, reaper, admin retry, queue resume). Only datagrams that have
        actually arrived lately count: producers on hosts that cannot reach the worker's
        address leave it polling as if wake-ups were off.
        """
        recent = time.monotonic() - self.heard_at < WAKEUPS_TRUSTED_FOR
        return self.options.wakeup and recent

    def claim(self, wanted: int, inside: ClaimInside) -> list[Job]:
        """Claim up to ``wanted`` jobs: the first queue through ``inside`` (which runs it in
        the transaction that records finished jobs), then the other queues in order.

        A claim that only a wake-up made due asks the queues it named, not every queue: the
        others were empty at the last poll, and the wake-up is often for a job that another
        worker has already taken. Nor does it move the poll when it finds nothing, so a
        stream of wake-ups for one queue never delays the poll of the others.
        """
        polling = self._poll_due() or not self.woken_for
        queues = self._queues_to_ask(polling)
        self.woken_for = set()
        first, others = (queues[0], queues[1:]) if queues else (None, [])
        claimed = inside(lambda: self.claim_from(first, wanted) if first else []) or []
        for queue_name in others:
            if len(claimed) < wanted:
                claimed += self.claim_from(queue_name, wanted - len(claimed))
        if polling or claimed:
            self.idle.claimed(len(claimed), wanted, woken_reliably=self.woken_reliably)
        return claimed

    def _queues_to_ask(self, polling: bool) -> list[str]:
        served = self.options.queues
        if not polling:
            return [q for q in served or sorted(self.woken_for) if q in self.woken_for]
        return list(served) or self.queues_with_ready_jobs()

    def queues_with_ready_jobs(self) -> list[str]:
        """Return the queues that have ready jobs, by name: a worker of every queue claims
        from these."""
        return Job.objects.using(self.using).ready_queue_names()

    def _poll_due(self) -> bool:
        return time.monotonic() >= self.idle.next_claim_at

    def claim_from(self, queue_name: str, limit: int) -> list[Job]:
        """Claim up to ``limit`` jobs of one queue, timing the claim query."""
        if not unpaused([queue_name], self.using):
            return []  # no query is made: it must not count as a (very fast) claim query
        began = time.perf_counter()
        got = Job.objects.db_manager(self.using).claim(
            [queue_name], limit=limit, owner=self.owner, lease=self.options.lease
        )
        self.metrics.claim_query(queue_name, (time.perf_counter() - began) * 1000, len(got))
        return got

    def due_soon(self) -> bool:
        """Tell a burst worker whether work is left for it: a ready job of an unpaused queue
        it serves, or a scheduled one due within BURST_HORIZON seconds.

        A ready job can be there after a claim that found nothing: the supervisor's promotion
        made it ready meanwhile, or another claim held its row locked (SKIP LOCKED skipped it).
        Scheduled jobs overdue by more than the horizon are left alone: nothing promotes them
        (no maintenance loop runs), and waiting for them would never end.
        """
        return self._ready_left() or self._scheduled_soon()

    def _ready_left(self) -> bool:
        if not self.options.queues:
            return bool(unpaused(self.queues_with_ready_jobs(), self.using))
        queues = unpaused(self.options.queues, self.using)
        return bool(queues) and (
            Job.objects.using(self.using).ready().filter(queue_name__in=queues).exists()
        )

    def _scheduled_soon(self) -> bool:
        jobs = Job.objects.using(self.using).scheduled()
        if self.options.queues:
            jobs = jobs.filter(queue_name__in=self.options.queues)
        return (
            jobs.filter(run_after__lte=DatabaseNowPlus(BURST_HORIZON))
            .filter(run_after__gte=DatabaseNowPlus(-BURST_HORIZON))
            .exists()
        )
