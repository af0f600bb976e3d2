"""Worker: one process's loop of claim, run, record, renew.

The main thread owns every queue query (claims, batched completions, the heartbeat) on one
connection; job code runs on the executor's threads or its event loop and hands back outcomes.
The loop sleeps only in :class:`~django_skipqueue.wakeup.Waker`, so a finished job, a signal or
a wake-up datagram ends the sleep at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time

from django.db import Error, close_old_connections

from django_skipqueue.conf import get_settings
from django_skipqueue.context import resolve_task
from django_skipqueue.db.outage import is_access_denied, is_too_large
from django_skipqueue.db.statements import (
    retry_whole_transaction,
    round_trip,
    short_transaction,
)
from django_skipqueue.exceptions import JobCancelled, message_record
from django_skipqueue.models import Job
from django_skipqueue.models.worker import WorkerRole
from django_skipqueue.monitoring.metrics import Metrics
from django_skipqueue.states import JobStatus
from django_skipqueue.wakeup import GRACEFUL, IMMEDIATE, Stopping, Waker
from django_skipqueue.worker import heartbeat, recording
from django_skipqueue.worker.claimer import Claimer, Prefetch
from django_skipqueue.worker.executor import Executor, Outcome, Running, timed_out
from django_skipqueue.worker.heartbeat import (
    DatabaseBackoff,
    bound_network_waits,
    bounded_results,
    clock_offset,
    connections_kept_open,
    resident_megabytes,
)
from django_skipqueue.worker.held import Holdings
from django_skipqueue.worker.options import RECYCLE_EXIT_CODE, REFUSED_EXIT_CODE, WorkerOptions
from django_skipqueue.worker.started import StartedLog

logger = logging.getLogger("django_skipqueue.worker")

#: Shortest heartbeat interval: leases shorter than three times this are not supported.
MIN_HEARTBEAT_SECONDS = 0.2
#: Longest wait, before a claim, for jobs that began less than twice this long ago.
BATCH_FILL_SECONDS = 0.001
#: Over a slower link, up to one round trip to the database instead (at most this long).
MAX_BATCH_FILL_SECONDS = 0.05


def batch_fill_seconds(using: str) -> float:
    """How long a claim may wait for the jobs of the last batch: about one round trip.

    A record-and-claim transaction costs three round trips (statements.py); two of them for
    one finished job and then for the fifteen that finish while it runs cost twice as many.
    Waiting up to one round trip for the rest of the batch (its jobs began together) keeps
    them in one transaction: BATCH_FILL_SECONDS near the database, up to
    MAX_BATCH_FILL_SECONDS far from it.
    """
    measured = round_trip(using) or 0.0
    return max(BATCH_FILL_SECONDS, min(MAX_BATCH_FILL_SECONDS, measured))


class Worker:
    """Claim jobs into free slots, run them, record outcomes, keep leases alive."""

    def __init__(
        self,
        options: WorkerOptions,
        *,
        owner: str,
        supervisor: str | None = None,
        parent_pid: int | None = None,
        started: StartedLog | None = None,
    ) -> None:
        self.options = options
        self.owner = owner
        self.using = options.database
        self.supervisor = supervisor
        self.parent_pid = parent_pid
        config = get_settings()
        self.waker = Waker(
            config.WAKEUP_HOST if options.wakeup else None,
            max_rate=config.WAKEUP_MAX_RATE,
            names_only=True,
        )
        self.metrics = Metrics()
        self.jobs = Holdings(owner, self.using, options.backend, self.metrics)
        self.executor = Executor(options.threads, options.backend, self.using, self._on_done)
        # Which held jobs began, for the supervisor should this process die (started.py).
        self.jobs.started = self.executor.started = started
        self.claimer = Claimer(options, owner, self.metrics)
        self.prefetch = Prefetch(options.threads, options.prefetch, options.prefetch_max_wait)
        self.jobs.observe = self.prefetch.observe
        #: Jobs to hold beyond the threads this turn (claiming ahead; 0 while stopping).
        self.ahead = 0
        self.db_backoff = DatabaseBackoff(self.using)
        self.stopping = Stopping(self.waker.poke)
        self.started_jobs = self.released = self.interrupted = 0
        self.next_beat_at = 0.0
        self.reconcile = False
        self.born = time.monotonic()

    @property
    def exit_code(self) -> int:
        return self.stopping.exit_code

    @property
    def stop_reason(self) -> str:
        return self.stopping.reason

    def run(self) -> int:
        """Work until stopped (signal, burst drained, recycle); return the exit code."""
        try:
            with self.stopping.signals_handled(), connections_kept_open():
                bound_network_waits(self.using)
                if self._start():
                    try:
                        while not self._done():
                            self._step()
                    finally:
                        self._finish()
        finally:
            self.waker.close()
        return self.exit_code

    # The loop.

    def _start(self) -> bool:
        """Register in the workers table, retrying while the database is unreachable."""
        while not self.stopping.requested:
            try:
                self.metrics.clock_offset = clock_offset(self.using)
                self.executor.max_result_bytes = bounded_results(self.using)
                self._register()
                self._schedule_beat()
                logger.info("worker started worker=%s wakeup=%s", self.owner, self.waker.address)
                return True
            except Error as error:
                self._database_trouble(error)
            self._handle_signals()
        return False

    def _register(self) -> None:
        heartbeat.register(
            self.owner,
            WorkerRole.WORKER,
            self.options,
            supervisor=self.supervisor,
            wakeup_address=self.waker.address,
        )

    def _step(self) -> None:
        self._handle_signals()
        try:
            close_old_connections()
            self.jobs.collect()
            if self.reconcile:
                self.jobs.release_strays()
                self.reconcile = False
            self._check_health()
            self._release_stalled()
            if time.monotonic() >= self.next_beat_at:
                self._beat()
            self.ahead = 0 if self.stopping.requested else self.prefetch.size(self._longest_run())
            if self._claim_due():
                self._let_batch_fill()
                self._record_and_claim()
            else:
                if self._record_due():
                    self._record()
                self._flush_metrics_if_due()
            self.db_backoff.reset()
        except Error as error:
            self._database_trouble(error)
            return
        self._sleep()

    def _flush_metrics_if_due(self) -> None:
        """Write the counts of a turn that starts no job when they are due, or at once when
        no job runs (nothing to save then): per turn, it cost a no-op drain about 5%."""
        exporter = self.metrics.exporter
        if exporter is None:
            return
        due = exporter.flush_due()
        if due is not None and (not self.jobs.busy or due <= time.monotonic()):
            exporter.flush()

    def _done(self) -> bool:
        stopping = self.stopping
        if not stopping.requested:
            return False
        return stopping.mode == IMMEDIATE or not self.jobs.busy or stopping.overdue

    def _sleep(self) -> None:
        # A pending signal's poke may have been drained by a short wait (_let_batch_fill).
        if self._record_due() or self.stopping.signals or self._done():
            return
        now = time.monotonic()
        until = [self.next_beat_at, self.stopping.deadline, *self.jobs.deadlines()]
        if self.jobs.unrecorded:
            until.append(self.jobs.unrecorded_since + self._record_within)
        if self.metrics.exporter is not None and (due := self.metrics.exporter.flush_due()):
            until.append(due)
        until.append(self._release_at())
        listen = not self.stopping.requested and self._room(self.jobs.finishing) > 0
        if listen:
            until.append(self.claimer.next_claim_at)
        timeout = min(until) - now
        heard = self.waker.wait(timeout, listen=listen, ready=self.jobs.has_finished)
        self.claimer.wake(heard)

    # Claims.

    def _free_slots(self, finishing: int = 0) -> int:
        """Slots free now (plus ``finishing``: those whose outcomes are being recorded)."""
        free = self.options.threads + self.ahead - len(self.jobs) + finishing
        if self.options.max_jobs is not None:
            free = min(free, self.options.max_jobs - self.started_jobs)
        return free

    def _room(self, finishing: int) -> int:
        """Slots to claim into now: any free one while a thread idles, else only once half
        the jobs claimed ahead have started (claims ahead come in batches, not one by one)."""
        free = self._free_slots(finishing)
        idle_thread = len(self.jobs) - finishing < self.options.threads
        return free if free > 0 and (idle_thread or free >= (self.ahead + 1) // 2) else 0

    def _claim_due(self) -> bool:
        room = self._room(self.jobs.finishing)
        return not self.stopping.requested and room > 0 and self.claimer.due()

    def _let_batch_fill(self) -> None:
        """Wait up to batch_fill_seconds() for jobs that began moments ago to finish as well.

        Short jobs started by one claim finish nearly together, and the first one back would
        otherwise take a transaction of its own (record one, claim one): batches then average
        below the pool's size. One transaction for all of them saved about 0.08 ms of CPU per
        no-op job, worker and database together, at 4 threads. Only while jobs queue up (the
        last claim was full) and a finished job is what woke the loop: a wake-up for new work
        on a quiet queue claims at once. A job that has run longer than twice that wait is not
        waited for, nor is anything once a signal came.
        """
        if self.ahead or not (self.claimer.backlogged and self.jobs.finishing):
            return
        fill = batch_fill_seconds(self.using)
        deadline = time.monotonic() + fill
        while self.jobs.just_started(2 * fill) and not self.stopping.signals:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self.waker.wait(left, listen=False, ready=self.jobs.has_finished)
            self.jobs.collect()

    def _record_and_claim(self) -> None:
        """Record what finished and claim into the free slots, with one commit for both.

        The finished jobs' outcomes and the claim of the first queue share one transaction:
        on a server where a commit waits for the disk, that halves the commits a busy worker
        makes. The other queues are claimed after it, one short transaction each.
        """
        wanted = self._free_slots(self.jobs.finishing)
        queues = self.claimer.queues_to_ask()
        first = queues[0] if queues else None
        others = queues[1:]
        claimed = self._record(claim_from=first, wanted=wanted)
        claimed = self.claimer.claim_rest(others, wanted, claimed)
        if self.metrics.exporter is not None:
            self.metrics.exporter.flush()  # before a job starts: it may kill this process
        for job in claimed:
            self._start_job(job)
        if claimed:
            self._schedule_beat(sooner_only=True)
        drained = self.options.burst and not claimed and not self.jobs.busy
        if drained and not self.claimer.due_soon():
            self._request_stop(GRACEFUL, "drained")

    def _record(self, *, claim_from: str | None = None, wanted: int = 0) -> list[Job]:
        """Write the unrecorded outcomes and claim from ``claim_from`` in one transaction.

        If the transaction fails, the outcomes stay unrecorded for the next turn; its commit
        may have happened all the same, which the next write recognises. If the server refused
        the batch for its size, it is no outage: each outcome is written alone, at once, and
        the claim waits for the next turn (recording.write_each).
        """
        batch = self.jobs.unrecorded
        if not self.jobs.must_write(batch):
            claimed = self._claim_first(claim_from, wanted)
            self.jobs.settled(batch)
            return claimed

        def record_and_claim() -> tuple[list[bool], list[Job]]:
            with short_transaction(self.using):
                # The successes' UPDATE goes out with the claim's first statement.
                written = recording.write_later(batch)
                claimed = self._claim_first(claim_from, wanted)
                return written(), claimed

        try:
            written, claimed = retry_whole_transaction(self.using, record_and_claim)
        except Error as error:
            self.jobs.fate_unknown(batch)
            if not is_too_large(error):
                raise
            written, claimed = self._write_each(batch), []
        self.jobs.written(batch, written)
        return claimed

    def _write_each(self, batch: list[Outcome]) -> list[bool]:
        return recording.write_each(batch, self.using, self.executor.max_result_bytes)

    def _claim_first(self, queue_name: str | None, wanted: int) -> list[Job]:
        return self.claimer.claim_from(queue_name, wanted) if queue_name else []

    def _start_job(self, job: Job) -> None:
        running = self.jobs.hold(job)
        self.started_jobs += 1
        if job.cancel_requested:
            error = message_record(JobCancelled, f"Job {job.pk} was cancelled before it started.")
            self.jobs.unrecorded.append(Outcome(running, JobStatus.CANCELLED, error=error))
            return
        try:
            task = resolve_task(job.task_path)
        except Exception as error:
            self.executor.fail_unstarted(running, error)
            return
        self.executor.submit(running, task)

    def _on_done(self, running: Running, outcome: Outcome) -> None:
        """Called on the job's thread: hand the outcome to the main loop."""
        self.jobs.on_done(running, outcome)
        self.waker.nudge()

    # Claiming ahead (prefetch).

    @property
    def _record_within(self) -> float:
        """Longest wait of a finished job's outcome for a bigger batch while claiming ahead."""
        return self.options.prefetch_max_wait / 4

    def _record_due(self) -> bool:
        """Tell whether to write the finished jobs' outcomes now rather than with more.

        Without jobs claimed ahead, at once (as soon as the loop turns). With them, the
        outcomes wait for the next claim (one transaction for both) up to a quarter of
        SKIPQUEUE_PREFETCH_MAX_WAIT, or until as many are back as half the jobs claimed ahead.
        """
        unrecorded = self.jobs.unrecorded
        if not unrecorded:
            return False
        if not self.ahead or self.stopping.requested:
            return True
        if len(unrecorded) >= max(self.options.threads, self.ahead // 2):
            return True
        return time.monotonic() - self.jobs.unrecorded_since >= self._record_within

    def _longest_run(self) -> float:
        return self.jobs.longest_run() if self.options.prefetch != 0 else 0.0

    def _release_at(self) -> float:
        """When the jobs claimed ahead are to be given back unless they have started."""
        if self.options.prefetch == 0:
            return float("inf")
        waiting = self.jobs.ahead(self.options.threads)
        if not waiting:
            return float("inf")
        limit = self.options.prefetch_max_wait
        oldest = min(running.held_at for running in waiting)
        longest = self.jobs.longest_run()
        return min(oldest + limit, time.monotonic() - longest + limit / 2)

    def _release_stalled(self) -> None:
        """Give back the jobs claimed ahead once one has waited SKIPQUEUE_PREFETCH_MAX_WAIT,
        or a running job has run half as long: another worker's free thread may take them.

        They go back ready, their attempt not spent, and wake-ups go out for their queues.
        """
        if time.monotonic() < self._release_at():
            return
        given = self.jobs.give_back_ahead(self.options.threads)
        self.released += given
        if given:
            logger.info("gave back jobs claimed ahead jobs=%s worker=%s", given, self.owner)

    # Leases and health.

    def _beat(self) -> None:
        self.jobs.renew(self.options.lease)
        if not heartbeat.beat(self.owner, self.using, self.metrics):
            logger.warning("workers row missing, registering again worker=%s", self.owner)
            self._register()
        self._schedule_beat()

    def _schedule_beat(self, *, sooner_only: bool = False) -> None:
        """Plan the next heartbeat: every HEARTBEAT_SECONDS, or a third of the shortest lease."""
        beat = get_settings().HEARTBEAT_SECONDS
        interval = min(beat, (self.options.lease or self.jobs.shortest_lease(beat * 3)) / 3)
        due = time.monotonic() + max(interval, MIN_HEARTBEAT_SECONDS)
        self.next_beat_at = min(due, self.next_beat_at) if sooner_only else due

    def _check_health(self) -> None:
        for running in self.jobs.overdue():
            self._abandon(running)
        if self.parent_pid is not None and os.getppid() != self.parent_pid:
            self._request_stop(GRACEFUL, "supervisor gone")
        limit_mb = self.options.max_memory_mb
        memory = resident_megabytes() if limit_mb is not None else None
        if limit_mb is not None and memory is not None and memory > limit_mb:
            self._request_stop(GRACEFUL, f"memory {memory:.0f} MiB", RECYCLE_EXIT_CODE)
        max_jobs = self.options.max_jobs
        # Once the last of them has begun: jobs claimed ahead and not begun would go back.
        if max_jobs is not None and self.started_jobs >= max_jobs and not self.jobs.ahead(0):
            self._request_stop(GRACEFUL, "max jobs", RECYCLE_EXIT_CODE)

    def _abandon(self, running: Running) -> None:
        """Fail a thread-run job past its timeout; a thread cannot be killed, so recycle."""
        task = None
        with contextlib.suppress(Exception):  # only the retry backoff comes from it
            task = resolve_task(running.job.task_path)
        self.jobs.abandon(running, timed_out(running, task))
        self._request_stop(GRACEFUL, f"job {running.job.pk} timed out", RECYCLE_EXIT_CODE)

    def _database_trouble(self, error: Error) -> None:
        if self.metrics.exporter is not None:
            self.metrics.exporter.database_error("worker")
        delay = self.db_backoff.failed(error)
        if self.options.burst and is_access_denied(error):  # a burst run must end
            self._request_stop(IMMEDIATE, "database refused the credentials")
            self.stopping.exit_code = REFUSED_EXIT_CODE  # an immediate stop keeps 0 otherwise
            return
        self.reconcile = True
        self.waker.wait(delay, listen=False)

    # Stopping.

    def _handle_signals(self) -> None:
        for mode, name in self.stopping.received():
            self._request_stop(mode, name)

    def _request_stop(self, mode: str, reason: str, exit_code: int = 0) -> None:
        within = 0.0 if mode == IMMEDIATE else self.options.grace
        if not self.stopping.request(mode, reason, within=within, exit_code=exit_code):
            return
        if mode == GRACEFUL:
            self.jobs.unstart()
            try:  # at once: the running jobs may take the whole grace period
                self.released += self.jobs.give_back_unstarted()
            except Error:
                logger.warning("could not give back unstarted jobs yet worker=%s", self.owner)
        if reason != "drained":
            logger.info("worker stopping mode=%s reason=%s worker=%s", mode, reason, self.owner)

    def _stop_cause(self) -> str:
        """Why jobs still running are cut short: an immediate stop, or the grace ran out."""
        if self.stopping.mode == IMMEDIATE:
            return f"immediate stop, {self.stop_reason}"
        return f"grace of {self.options.grace:g} s over, {self.stop_reason}"

    def _finish(self) -> None:
        """Record what finished, give back what did not, and leave the workers table."""
        try:
            self.jobs.collect()
            self._record()
            released, self.interrupted = self.jobs.give_back_all(self._stop_cause())
            self.released += released
            heartbeat.beat(self.owner, self.using, self.metrics)
            heartbeat.mark_stopped(self.owner, self.using)
            if self.metrics.exporter is not None:
                self.metrics.exporter.flush()
        except Error as error:
            if is_access_denied(error):  # said once already, by the outage log
                logger.warning("could not record the final state worker=%s", self.owner)
            else:
                logger.exception("could not record the final state worker=%s", self.owner)
        self.executor.shutdown()
        totals = self.metrics.totals
        logger.info(
            "worker stopped worker=%s reason=%s claimed=%s succeeded=%s failed=%s retried=%s "
            "lost_leases=%s released=%s interrupted=%s uptime_s=%.1f exit=%s",
            self.owner,
            self.stop_reason,
            totals["claimed"],
            totals["succeeded"],
            totals["failed"],
            totals["retried"],
            totals["lost_leases"],
            self.released,
            self.interrupted,
            time.monotonic() - self.born,
            self.exit_code,
        )
