"""The worker's side of ``Job.objects.claim()``: how many jobs, from which queues, and when."""

from __future__ import annotations

import time

from django_skipqueue.db.clock import DatabaseNowPlus
from django_skipqueue.models import FlowKey, Job
from django_skipqueue.monitoring.metrics import Metrics
from django_skipqueue.queues import unpaused
from django_skipqueue.worker.options import WorkerOptions

#: First pause after an empty claim round; it doubles up to the idle cap.
FIRST_IDLE_PAUSE = 0.01
#: A burst worker waits for retries and deferred jobs due within this many seconds.
BURST_HORIZON = 10.0
#: A worker that heard a wake-up datagram this recently trusts them to announce new work.
WAKEUPS_TRUSTED_FOR = 60.0


class IdleBackoff:
    """When to claim next: at once while there is work, exponentially later when there is not."""

    def __init__(self, cap: float) -> None:
        self.cap = cap
        self.pause = 0.0
        self.next_claim_at = 0.0

    def claimed(self, got: int, wanted: int, *, woken_reliably: bool = False) -> None:
        """Plan the next claim after one that took ``got`` of ``wanted`` jobs.

        A claim that got fewer than it asked for emptied the queue. Polling alone must then
        look again soon and back off slowly, or a job enqueued a moment later would wait for
        the idle cap. A worker that wake-ups reach (``woken_reliably``) hears of that job
        anyway, so it waits the cap at once: each claim round in the ramp would cost a query
        for nothing.
        """
        if got == wanted:
            self.pause = 0.0
        elif woken_reliably:
            self.pause = self.cap
        else:
            self.pause = (
                FIRST_IDLE_PAUSE if got else min(self.cap, max(FIRST_IDLE_PAUSE, self.pause * 2))
            )
        self.next_claim_at = time.monotonic() + self.pause

    @property
    def backlogged(self) -> bool:
        """Tell whether the last claim got every job it asked for: more are likely waiting."""
        return self.pause == 0.0


class Claimer:
    """Claim into free slots queue by queue, in order; pace empty rounds with a backoff."""

    def __init__(self, options: WorkerOptions, owner: str, metrics: Metrics) -> None:
        self.options = options
        self.owner = owner
        self.metrics = metrics
        self.using = options.database
        # One claim query per queue a round: the pause scales so that an idle process
        # makes at most one claim query per ``poll_max`` seconds.
        self.idle = IdleBackoff(options.poll_max * max(len(options.queues), 1))
        #: Queues a wake-up named since the last claim: claimed at once, ahead of the poll.
        self.woken_for: set[str] = set()
        #: When the last wake-up datagram arrived (any queue): proof that they reach us.
        self.heard_at = float("-inf")
        #: The current round polls every queue (rather than answering a wake-up alone).
        self.polling = True

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

    def queues_to_ask(self) -> list[str]:
        """Start a claim round: return the queues to ask, in order, paused ones left out.

        A claim that only a wake-up made due asks the queues it named, not every queue: the
        others were empty at the last poll, and the wake-up is often for a job that another
        worker has already taken. The pause check here is the round's only one (its list is
        cached for about a second, see queues.py).
        """
        self.polling = self._poll_due() or not self.woken_for
        queues = self._queues_to_ask(self.polling)
        self.woken_for = set()
        return unpaused(queues, self.using)

    def _queues_to_ask(self, polling: bool) -> list[str]:
        served = self.options.queues
        if not polling:
            return [q for q in served or sorted(self.woken_for) if q in self.woken_for]
        return list(served) or self.queues_with_ready_jobs()

    def queues_with_ready_jobs(self) -> list[str]:
        """Return the queues that have ready jobs, by name: a worker of every queue claims
        from these."""
        return Job.objects.using(self.using).ready_queue_names()

    def claim_from(self, queue_name: str, limit: int) -> list[Job]:
        """Claim up to ``limit`` jobs of one queue (not paused: see queues_to_ask), timed."""
        began = time.perf_counter()
        got = Job.objects.db_manager(self.using).claim_from(
            queue_name, limit=limit, owner=self.owner, lease=self.options.lease
        )
        seconds = time.perf_counter() - began
        self.metrics.claim_query(queue_name, seconds * 1000, len(got))
        if self.metrics.exporter is not None:
            self.metrics.exporter.claim(queue_name, seconds, (job.task_path for job in got))
        return got

    def claim_rest(self, queues: list[str], wanted: int, claimed: list[Job]) -> list[Job]:
        """Claim from ``queues`` in order until ``wanted`` jobs are held; end the round.

        A round that found nothing on a wake-up alone does not move the poll, so a stream of
        wake-ups for one queue never delays the poll of the others.
        """
        for queue_name in queues:
            if len(claimed) < wanted:
                claimed = claimed + self.claim_from(queue_name, wanted - len(claimed))
        if self.polling or claimed:
            self.idle.claimed(len(claimed), wanted, woken_reliably=self.woken_reliably)
        return claimed

    def claim(self, wanted: int) -> list[Job]:
        """Claim a whole round of up to ``wanted`` jobs, queue by queue, with nothing to record."""
        return self.claim_rest(self.queues_to_ask(), wanted, [])

    def _poll_due(self) -> bool:
        return time.monotonic() >= self.idle.next_claim_at

    def due_soon(self) -> bool:
        """Tell a burst worker whether work is left for it: a ready job of an unpaused queue
        it serves, or a scheduled one due within BURST_HORIZON seconds.

        A ready job can be there after a claim that found nothing: the supervisor's promotion
        made it ready meanwhile, or another claim held its row locked (SKIP LOCKED skipped it).
        Scheduled jobs overdue by more than the horizon are left alone: nothing promotes them
        (no maintenance loop runs), and waiting for them would never end. Jobs blocked behind
        a flow key count when the key's next rate window opens within the horizon.
        """
        return self._ready_left() or self._scheduled_soon() or self._window_soon()

    def _ready_left(self) -> bool:
        if not self.options.queues:
            return bool(unpaused(self.queues_with_ready_jobs(), self.using))
        queues = unpaused(self.options.queues, self.using)
        return bool(queues) and (
            Job.objects.using(self.using).ready().filter(queue_name__in=queues).exists()
        )

    def _window_soon(self) -> bool:
        keys = FlowKey.objects.using(self.using).filter(
            wake_at__lte=DatabaseNowPlus(BURST_HORIZON),
            wake_at__gte=DatabaseNowPlus(-BURST_HORIZON),
        )
        return keys.exists()

    def _scheduled_soon(self) -> bool:
        jobs = Job.objects.using(self.using).scheduled()
        if self.options.queues:
            jobs = jobs.filter(queue_name__in=self.options.queues)
        return (
            jobs.filter(run_after__lte=DatabaseNowPlus(BURST_HORIZON))
            .filter(run_after__gte=DatabaseNowPlus(-BURST_HORIZON))
            .exists()
        )


#: Most jobs an adaptive prefetch holds beyond the threads.
MAX_AUTO_PREFETCH = 64
#: Weight of the latest duration in the running average the adaptive prefetch follows.
DURATION_WEIGHT = 0.1


class Prefetch:
    """How many jobs to claim beyond the free threads (claiming ahead), and for how long.

    Jobs claimed ahead wait, in claim order, for a thread of this process. That saves a claim
    transaction and a commit per job when jobs are short, and costs fairness when they are
    not: a job waiting here cannot run on another worker's free thread. So a job claimed ahead
    starts within ``max_wait`` seconds or the worker gives it back (see Worker._release_stalled),
    and claiming ahead stops while a job has run longer than half of that. The adaptive size
    (``fixed`` None) claims ahead only while recent jobs average under a quarter of
    ``max_wait``, and about as many as the threads get through in half of it.
    """

    def __init__(self, threads: int, fixed: int | None, max_wait: float) -> None:
        self.threads = threads
        self.fixed = fixed
        self.max_wait = max_wait
        #: Running average of recent attempts' durations, in seconds (None: none seen yet).
        self.average: float | None = None
        self.seen = 0

    def observe(self, seconds: float) -> None:
        """Count one finished attempt's duration into the running average."""
        self.seen += 1
        average = self.average
        self.average = (
            seconds if average is None else average + DURATION_WEIGHT * (seconds - average)
        )

    def size(self, longest_run: float) -> int:
        """Return how many jobs to hold beyond the threads, given the longest running job."""
        if self.fixed == 0 or longest_run > self.max_wait / 2:
            return 0
        if self.fixed is not None:
            return self.fixed
        average = self.average
        if average is None or self.seen < self.threads or average >= self.max_wait / 4:
            return 0
        drained_in_half = int(self.threads * self.max_wait / 2 / max(average, 1e-4))
        return min(MAX_AUTO_PREFETCH, max(self.threads, drained_in_half))
