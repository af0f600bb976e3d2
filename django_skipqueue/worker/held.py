"""Holdings: the jobs one worker process holds, and the outcomes waiting to be recorded.

A job is held from its claim until its outcome is written: while a finished job's outcome
waits for the next batch, its lease still needs renewing.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Callable

from django_skipqueue import transitions, wakeup
from django_skipqueue.models import Job
from django_skipqueue.monitoring.metrics import COUNTERS, Metrics
from django_skipqueue.states import RELEASE
from django_skipqueue.worker import recording
from django_skipqueue.worker.attempt import Outcome, Running
from django_skipqueue.worker.started import StartedLog

logger = logging.getLogger("django_skipqueue.worker")


class Holdings:
    """Held jobs by id, plus timed-out ones whose threads run on, plus unrecorded outcomes."""

    def __init__(self, owner: str, using: str, backend_alias: str, metrics: Metrics) -> None:
        self.owner = owner
        self.using = using
        self.backend_alias = backend_alias
        self.metrics = metrics
        self.held: dict[int, Running] = {}
        #: Timed out: failed already, but still occupying a thread.
        self.stuck: list[Running] = []
        #: Claimed, never started, taken off the executor at shutdown: to be given back.
        self.unstarted: list[Running] = []
        self.finished: queue.SimpleQueue[tuple[Running, Outcome]] = queue.SimpleQueue()
        self.unrecorded: list[Outcome] = []
        #: Outcomes (by id()) whose last write failed: it may have committed all the same.
        self.uncertain: set[int] = set()
        #: When the oldest unrecorded outcome was collected (time.monotonic()).
        self.unrecorded_since = 0.0
        #: Told the duration of every attempt that ran, as its outcome is collected.
        self.observe: Callable[[float], None] | None = None
        #: Which held jobs started, for the supervisor if this process dies (started.py).
        self.started: StartedLog | None = None

    def __len__(self) -> int:
        """Slots in use: held jobs and threads still stuck in timed-out jobs."""
        return len(self.held) + len(self.stuck)

    @property
    def busy(self) -> bool:
        return bool(self.held or self.unrecorded or not self.finished.empty())

    def hold(self, job: Job) -> Running:
        running = self.held[job.pk] = Running(job)
        if self.started is not None:
            running.slot = self.started.take()
        return running

    def _let_go(self, runnings: list[Running]) -> None:
        """Free the StartedLog slots of jobs whose outcome is written or that went back."""
        if self.started is not None:
            for running in runnings:
                self.started.give(running.slot)
                running.slot = None

    def on_done(self, running: Running, outcome: Outcome) -> None:
        """Take an outcome from a job's thread (any thread)."""
        self.finished.put((running, outcome))

    def has_finished(self) -> bool:
        """Tell whether outcomes wait to be collected (job threads hand them over any time)."""
        return not self.finished.empty()

    def just_started(self, age: float) -> bool:
        """Tell whether jobs still run, each begun less than ``age`` seconds ago (or not yet)."""
        back = {outcome.job.pk for outcome in self.unrecorded}
        running = [running for pk, running in self.held.items() if pk not in back]
        since = time.monotonic() - age
        return bool(running) and all(r.started_at is None or r.started_at > since for r in running)

    def collect(self) -> None:
        while not self.finished.empty():
            running, outcome = self.finished.get()
            if not running.abandoned:
                self._unrecorded(outcome)
            if self.observe is not None and running.started_at is not None:
                self.observe(outcome.duration)

    def _unrecorded(self, outcome: Outcome) -> None:
        if not self.unrecorded:
            self.unrecorded_since = time.monotonic()
        self.unrecorded.append(outcome)

    @staticmethod
    def must_write(batch: list[Outcome]) -> bool:
        """Tell whether ``batch`` holds outcomes to write (a transactional task wrote its own)."""
        return any(not outcome.recorded for outcome in batch)

    def fate_unknown(self, batch: list[Outcome]) -> None:
        """Note that the transaction writing ``batch`` failed: its commit may have happened."""
        self.uncertain.update(id(outcome) for outcome in batch)

    def written(self, batch: list[Outcome], written: list[bool]) -> None:
        """Settle ``batch`` after the transaction that wrote it (``recording.write``) committed."""
        recording.settle(batch, written)
        wakeup.after_commit(self.using, recording.made_ready(batch))
        self._recognise([o for o in batch if o.lost and id(o) in self.uncertain])
        self.uncertain.difference_update(id(outcome) for outcome in batch)
        self.settled(batch)

    def _recognise(self, rejected: list[Outcome]) -> None:
        """Outcomes rejected after a commit of unknown fate may be our own earlier write."""
        for outcome, ours in zip(rejected, recording.already_written(rejected), strict=True):
            outcome.lost = not ours

    @property
    def finishing(self) -> int:
        """Held jobs whose outcome waits to be recorded: their slots free up at the next write."""
        return sum(1 for outcome in self.unrecorded if outcome.job.pk in self.held)

    def settled(self, batch: list[Outcome]) -> None:
        """Let go of the jobs of a recorded ``batch``: count, log and announce each."""
        self.unrecorded = self.unrecorded[len(batch) :]
        if self.unrecorded:
            self.unrecorded_since = time.monotonic()
        for outcome in batch:
            self.held.pop(outcome.job.pk, None)
            self._account(outcome)
        self._let_go([outcome.running for outcome in batch])

    def _account(self, outcome: Outcome) -> None:
        queue_name = outcome.job.queue_name
        # The label of its transition (states.py): per-minute counters count those they name.
        if outcome.lost:
            self.metrics.count(queue_name, "lost_leases")
        elif outcome.ending.outcome in COUNTERS:
            self.metrics.count(queue_name, outcome.ending.outcome)
        if self.metrics.exporter is not None:
            self._export(outcome)
        recording.log_outcome(outcome, self.owner)
        # A refused job never started: released (8), no task_finished.
        if not outcome.lost and outcome.ending.transition is not RELEASE:
            recording.send_finished(outcome, self.backend_alias)

    def _export(self, outcome: Outcome) -> None:
        """Count the attempt by outcome; time it if it ran (a cancel before start did not)."""
        assert self.metrics.exporter is not None
        job = outcome.job
        label = "lost_lease" if outcome.lost else outcome.ending.outcome
        ran = outcome.running.started_at is not None
        seconds = outcome.duration if ran else None
        self.metrics.exporter.attempt(job.queue_name, job.task_path, label, seconds)

    def abandon(self, running: Running, outcome: Outcome) -> None:
        """Give up on a job past its timeout: record ``outcome``, ignore what its thread says."""
        running.abandoned = True
        del self.held[running.job.pk]
        self.stuck.append(running)
        self._unrecorded(outcome)

    def overdue(self) -> list[Running]:
        """Return the thread-run jobs that have outlived their timeout."""
        now = time.monotonic()
        return [running for running in self.held.values() if _deadline(running) < now]

    def deadlines(self) -> list[float]:
        return [_deadline(running) for running in self.held.values()]

    def renew(self, lease: float | None) -> None:
        """Renew every held lease in one UPDATE; flag lost leases and requested cancels."""
        flags = transitions.renew(self.owner, self.using, list(self.held), lease)
        for pk, running in self.held.items():
            if pk not in flags and not running.lease_lost:
                running.lease_lost = True
                job = running.job
                logger.warning(
                    "lease lost job=%s task=%s queue=%s attempt=%s worker=%s",
                    pk,
                    job.task_path,
                    job.queue_name,
                    job.attempts,
                    self.owner,
                )
            elif flags.get(pk):
                running.cancel_event.set()

    def shortest_lease(self, default: float) -> float:
        return min([float(r.job.lease_seconds) for r in self.held.values()], default=default)

    def unstart(self) -> None:
        """Take claimed jobs that have not started off the executor, to be given back.

        A coroutine's future can be cancelled while it runs: only one not begun is taken.
        """
        for pk, running in list(self.held.items()):
            future = running.future
            if running.started_at is None and future is not None and future.cancel():
                self.unstarted.append(self.held.pop(pk))

    def ahead(self, threads: int) -> list[Running]:
        """Return the jobs claimed ahead: waiting for a thread while none is idle for them.

        Held jobs handed to the executor and not begun, in claim order (the executor's), less
        as many as there are idle threads: those start at once.
        """
        if len(self.held) + len(self.stuck) <= threads:
            return []  # as many threads as jobs: none waits behind another
        held = self.held.values()
        waiting = [running for running in held if _waiting(running)]
        busy = sum(1 for running in held if _running(running)) + len(self.stuck)
        return waiting[max(0, threads - busy) :]

    def longest_run(self) -> float:
        """Return how long, in seconds, the longest running held job has run (0: none runs)."""
        began = [r.started_at for r in self.held.values() if _running(r)]
        return time.monotonic() - min(t for t in began if t is not None) if began else 0.0

    def give_back_ahead(self, threads: int) -> int:
        """Give back at once the jobs claimed ahead that have not begun; return how many.

        Each is taken off the executor first (a future that a thread has begun cannot be
        cancelled: that job runs). If the release fails, they are given back as the process
        stops, or taken back by the reaper when their leases expire.
        """
        taken = []
        for running in self.ahead(threads):
            future = running.future
            if future is not None and future.cancel():
                taken.append(self.held.pop(running.job.pk))
        if not taken:
            return 0
        self.unstarted.extend(taken)
        released = recording.give_back([running.job for running in taken], self.using)
        del self.unstarted[-len(taken) :]
        self._let_go(taken)
        return released

    def give_back_unstarted(self) -> int:
        """Give back the jobs :meth:`unstart` took off the executor; return how many."""
        released = recording.give_back([running.job for running in self.unstarted], self.using)
        self._let_go(self.unstarted)
        self.unstarted.clear()
        return released

    def give_back_all(self, reason: str) -> tuple[int, int]:
        """Give back every held job as the process stops; return (released, interrupted).

        A job that never started goes back without spending its attempt. One that started
        may have done part of its work: its attempt is recorded as interrupted.
        """
        self.unstart()
        never_started = [running.job for running in self.unstarted]
        started = [running.job for running in self.held.values()]
        released = recording.give_back(never_started, self.using)
        interrupted = recording.interrupt(started, self.using, reason)
        self._let_go([*self.unstarted, *self.held.values()])
        self.held.clear()
        self.unstarted.clear()
        return released, interrupted

    def release_strays(self) -> None:
        """Give back claims this process made but never learned of (a claim cut off mid-way)."""
        mine = Job.objects.using(self.using).held_by(self.owner)
        strays = list(mine.exclude(pk__in=list(self.held)))
        if strays:
            logger.warning("released unknown claims jobs=%s worker=%s", len(strays), self.owner)
            recording.give_back(strays, self.using)


def _waiting(running: Running) -> bool:
    """Handed to the executor and not yet taken by a thread (``future.cancel()`` decides)."""
    return running.future is not None and not running.begun and running.started_at is None


def _running(running: Running) -> bool:
    return running.started_at is not None and running.future is not None and not running.ended


def _deadline(running: Running) -> float:
    """When a thread-run job times out (the event loop times coroutines out itself)."""
    limit = running.job.timeout_seconds
    if not limit or running.started_at is None or running.on_loop:
        return float("inf")
    return running.started_at + limit
