"""Supervisor: fork the worker processes, replace the ones that die, run maintenance, stop cleanly.

Signals: SIGTERM or SIGINT stop gracefully (each worker finishes its running jobs within
``--grace`` seconds, gives back the rest and exits 0); a second one, or SIGQUIT, stops at once
(workers give back everything they hold and exit). Workers run in their own process groups, so a
terminal's Ctrl-C reaches the supervisor alone, which then decides for all of them.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, NoReturn, Protocol, TypeVar

from django.db import Error, connections

from django_skipqueue import __version__
from django_skipqueue.conf import get_settings
from django_skipqueue.db.outage import is_unreachable, outage
from django_skipqueue.extensions import SideProcess
from django_skipqueue.models.worker import WorkerRole
from django_skipqueue.monitoring.metrics import Metrics
from django_skipqueue.wakeup import IMMEDIATE, STOP_SIGNALS, Stopping, Waker
from django_skipqueue.worker import heartbeat, recording
from django_skipqueue.worker.claimer import MAX_AUTO_PREFETCH
from django_skipqueue.worker.loop import Worker
from django_skipqueue.worker.options import RECYCLE_EXIT_CODE, REFUSED_EXIT_CODE, WorkerOptions
from django_skipqueue.worker.owner import new_token, owner_id
from django_skipqueue.worker.started import StartedLog, log_size

if TYPE_CHECKING:
    from django_skipqueue.monitoring.exporter import Endpoint

logger = logging.getLogger("django_skipqueue.supervisor")
T = TypeVar("T")

#: Seconds the supervisor waits past ``--grace`` before it kills a worker that did not stop.
GRACE_MARGIN = 3.0
#: Seconds workers get to give their jobs back after SIGQUIT before they are killed.
IMMEDIATE_WAIT = 3.0
#: A worker that lived this long before dying is not "crashing": its restart is not delayed.
STABLE_SECONDS = 60.0
#: Seconds after a dead worker's jobs were taken back when they are looked for once more: a
#: claim whose COMMIT was on its way when the process was killed is committed by the server
#: all the same, and may become visible only after the first look.
RECHECK_AFTER = 2.0
#: Ends the reason of a second look, so that it is not looked at a third time.
RECHECKED = ", late commit"


class MaintenanceLoop(Protocol):
    """What the supervisor runs between its checks: promotion, reaping, purging."""

    def run_due(self) -> float:
        """Run the steps that are due; return the seconds until the next one is."""
        ...


def default_maintenance(using: str, runner: str) -> MaintenanceLoop | None:
    """Return the maintenance loop of ``django_skipqueue.maintenance.loop``, if installed."""
    try:
        module = importlib.import_module("django_skipqueue.maintenance.loop")
    except ImportError:
        return None
    loop: MaintenanceLoop = module.Maintenance(using, runner=runner)
    return loop


@dataclass
class Child:
    """A forked worker process: its slot (for restarts), pid, owner id and start time, and
    the memory where it notes which held jobs started (None: an app's side process)."""

    slot: int
    pid: int
    owner: str
    born: float
    started: StartedLog | None = None


class Supervisor:
    """Run ``processes`` worker processes until told to stop (or, in burst mode, drained)."""

    def __init__(
        self,
        options: WorkerOptions,
        *,
        processes: int = 1,
        maintenance: MaintenanceLoop | None = None,
        owner: str | None = None,
        side: Sequence[SideProcess] = (),
        metrics_endpoint: Endpoint | None = None,
    ) -> None:
        self.options = options
        self.processes = processes
        self.maintenance = maintenance
        #: Processes the installed apps run as more children, in the slots after the workers'.
        self.side = tuple(side)
        #: The Prometheus endpoint of runworkers --metrics-port (None: metrics off).
        self.endpoint = metrics_endpoint
        self.owner = owner or owner_id()
        self.using = options.database
        self.waker = Waker(None)
        self.metrics = Metrics()
        self.children: dict[int, Child] = {}
        self.restarts: dict[int, float] = {}
        self.crashes: dict[int, int] = {}
        self.dead: list[tuple[str, str]] = []
        #: Dead workers to look at once more (see RECHECK_AFTER): owner -> (reason, when).
        self.rechecks: dict[str, tuple[str, float]] = {}
        #: Per dead worker, the ids of the held jobs that had started (they spend their
        #: attempt, the others go back unspent); absent or None: not known, all spend it.
        self.started: dict[str, frozenset[int] | None] = {}
        self.stopping = Stopping(self.waker.poke)
        self.spawned = self.killed = 0
        #: A --burst worker exited because the database refused the credentials.
        self.refused = False
        self.next_beat_at = 0.0
        self.began = time.monotonic()

    def run(self) -> int:
        """Supervise until every worker is gone; return the exit code for the command."""
        with self.stopping.signals_handled((*STOP_SIGNALS, signal.SIGCHLD)):
            if self.endpoint is None:
                return self._supervise()
            self.endpoint.start()
            self.metrics.exporter = self.endpoint.metrics
            try:
                return self._supervise()
            finally:
                self.endpoint.stop()

    def _supervise(self) -> int:
        heartbeat.bound_network_waits(self.using)  # the reaper's queries too: see worker.heartbeat
        self._database(lambda: heartbeat.register(self.owner, WorkerRole.SUPERVISOR, self.options))
        logger.info(
            "runworkers starting version=%s supervisor=%s processes=%s %s",
            __version__,
            self.owner,
            self.processes,
            self.options.describe(),
        )
        for slot in range(self.processes + len(self.side)):
            self._spawn(slot)
        while True:
            while self.children or self.restarts:
                self._turn()
            self._reclaim()  # once more, in case the database was down at the last exit
            if not self._recheck(final=True) or not self.options.burst:
                break
            if self.stopping.requested:
                break
            # A burst run drains what it was given: jobs a killed worker's late commit held.
            logger.info("late claims of dead workers taken back: draining them")
            self._spawn(0)
        self._database(lambda: heartbeat.mark_stopped(self.owner, self.using))
        self._log_summary()
        return 1 if self.killed or self.refused else 0

    def _turn(self) -> None:
        self._handle_signals()
        self._reap_children()
        self._reclaim()
        self._recheck()
        self._restart_due()
        self._kill_after_deadline()
        wait = self._maintain()
        if time.monotonic() >= self.next_beat_at:
            self._database(lambda: heartbeat.beat(self.owner, self.using, self.metrics))
            self.next_beat_at = time.monotonic() + get_settings().HEARTBEAT_SECONDS
        now = time.monotonic()
        until = [now + wait, self.next_beat_at, self.stopping.deadline, *self.restarts.values()]
        self.waker.wait(min(until) - now, listen=False)

    # Children.

    def _spawn(self, slot: int) -> None:
        token = new_token()
        started = None if self._side_of(slot) else self._started_log()
        connections.close_all()  # a child must never share the parent's database socket
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            self._child(token, slot, started)
        owner = owner_id(token, pid=pid)
        self.children[pid] = Child(slot, pid, owner, time.monotonic(), started)
        self.spawned += 1

    def _started_log(self) -> StartedLog:
        options = self.options
        return StartedLog(log_size(options.threads, options.prefetch, MAX_AUTO_PREFETCH))

    def _child(self, token: str, slot: int, started: StartedLog | None) -> NoReturn:
        code = 1
        try:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signals = self.stopping.signals
            del signals[:]  # the worker's handlers take over this list (shared: no gap)
            self.waker.close()
            os.setpgid(0, 0)
            side = self._side_of(slot)
            if self.endpoint is not None:
                self.endpoint.in_child(worker=side is None)
            if side is not None:
                code = side.run(self.using, self.options.burst)
            else:
                worker = Worker(
                    self.options,
                    owner=owner_id(token),
                    supervisor=self.owner,
                    parent_pid=os.getppid(),
                    started=started,
                )
                worker.stopping.signals = signals
                code = worker.run()
        except BaseException:
            logger.exception("worker process failed")
        finally:
            logging.shutdown()
            os._exit(code)

    def _side_of(self, slot: int) -> SideProcess | None:
        """The app's process that runs in ``slot``, or None for a worker's slot."""
        return self.side[slot - self.processes] if slot >= self.processes else None

    def _reap_children(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            child = self.children.pop(pid, None)
            if child is not None:
                self._after_exit(child, os.waitstatus_to_exitcode(status))

    def _after_exit(self, child: Child, code: int) -> None:
        if self.endpoint is not None:
            self.endpoint.process_died(child.pid)
        reason = f"exit {code}" if code >= 0 else f"signal {signal.Signals(-code).name}"
        self.started[child.owner] = _started_jobs(child)
        self.dead.append((child.owner, reason))
        lived = time.monotonic() - child.born
        if code == REFUSED_EXIT_CODE:
            self.refused = True
            logger.error(
                "worker exited worker=%s reason=%s (the database refused the credentials; "
                "not restarted)",
                child.owner,
                reason,
            )
            return
        if self.stopping.requested or (code == 0 and self.options.burst):
            logger.info("worker exited worker=%s reason=%s", child.owner, reason)
            return
        crashes = (
            0
            if code in (0, RECYCLE_EXIT_CODE) or lived > STABLE_SECONDS
            else (self.crashes.get(child.slot, 0) + 1)
        )
        self.crashes[child.slot] = crashes
        delay = min(get_settings().RESTART_BACKOFF_MAX, 0.5 * 2 ** (crashes - 1)) if crashes else 0
        self.restarts[child.slot] = time.monotonic() + delay
        log = logger.info if code in (0, RECYCLE_EXIT_CODE) else logger.warning
        log("worker exited worker=%s reason=%s restart_in=%.1f", child.owner, reason, delay)

    def _reclaim(self) -> None:
        """Take back what dead workers held, at once (retried while the database is down)."""
        while self.dead:
            owner, reason = self.dead[0]
            started = self.started.get(owner)
            taken = self._database(partial(recording.reclaim, owner, self.using, reason, started))
            if taken is None:
                return
            for job in taken:
                self.metrics.count(job.queue_name, "reclaimed")
                if self.metrics.exporter is not None:
                    self.metrics.exporter.reclaim(job.queue_name, job.task_path)
            self._database(partial(heartbeat.mark_stopped, owner, self.using))
            self.dead.pop(0)
            if reason.endswith(RECHECKED):
                self.started.pop(owner, None)
            else:
                self.rechecks[owner] = (reason, time.monotonic() + RECHECK_AFTER)

    def _recheck(self, *, final: bool = False) -> bool:
        """Take back the jobs of dead workers once more when due (all now if ``final``).

        Returns whether that took any job.
        """
        now = time.monotonic()
        due = [owner for owner, (_, at) in self.rechecks.items() if final or at <= now]
        if not due:
            return False
        before = self.metrics.totals["reclaimed"]
        for owner in due:
            reason, _ = self.rechecks.pop(owner)
            self.dead.append((owner, f"{reason}{RECHECKED}"))
        self._reclaim()
        return self.metrics.totals["reclaimed"] > before

    def _restart_due(self) -> None:
        now = time.monotonic()
        for slot, due in list(self.restarts.items()):
            if due <= now and not self.stopping.requested:
                del self.restarts[slot]
                self._spawn(slot)

    # Stopping.

    def _handle_signals(self) -> None:
        for mode, name in self.stopping.received():
            if mode == IMMEDIATE:
                self._stop(mode, name, signal.SIGQUIT, IMMEDIATE_WAIT)
            else:
                self._stop(mode, name, signal.SIGTERM, self.options.grace + GRACE_MARGIN)

    def _stop(self, mode: str, reason: str, forward: int, within: float) -> None:
        self.stopping.request(mode, reason, within=within)
        logger.info("runworkers stopping mode=%s signal=%s", mode, reason)
        self.restarts.clear()
        for pid in self.children:
            self._send(pid, forward)

    def _kill_after_deadline(self) -> None:
        if self.children and self.stopping.overdue:
            for pid, child in self.children.items():
                logger.warning("worker did not stop in time, killing worker=%s", child.owner)
                self._send(pid, signal.SIGKILL)
                self.killed += 1
            self.stopping.deadline = time.monotonic() + IMMEDIATE_WAIT

    @staticmethod
    def _send(pid: int, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):  # already gone; waitpid will tell
            os.kill(pid, signum)

    # Database work that must not kill the supervisor.

    def _maintain(self) -> float:
        if self.maintenance is None:
            return get_settings().HEARTBEAT_SECONDS
        try:  # the loop reports its own outcome to the outage log
            return self.maintenance.run_due()
        except Error as error:
            self._database_failed(error)
            return 1.0

    def _database(self, work: Callable[[], T]) -> T | None:
        try:
            done = work()
        except Error as error:
            self._database_failed(error)
            return None
        outage(self.using).recovered()
        return done

    def _database_failed(self, error: Error) -> None:
        if self.metrics.exporter is not None:
            self.metrics.exporter.database_error("supervisor")
        if is_unreachable(error):
            outage(self.using).failed(error)
        else:
            logger.warning("supervisor database error=%r", error)
        with contextlib.suppress(Error):
            connections[self.using].close()

    def _log_summary(self) -> None:
        """Log the line ``runworkers`` ends with: totals of every worker process it ran."""
        elapsed = time.monotonic() - self.began
        try:
            totals = heartbeat.worker_totals(self.owner, self.using)
        except Error:
            totals = dict.fromkeys(heartbeat.ROW_COUNTERS, 0)
        totals["reclaimed"] += self.metrics.totals["reclaimed"]
        finished = totals["succeeded"] + totals["failed"]
        logger.info(
            "runworkers stopped supervisor=%s processes_started=%s killed=%s elapsed_s=%.1f "
            "jobs_per_s=%.0f %s",
            self.owner,
            self.spawned,
            self.killed,
            elapsed,
            finished / elapsed if elapsed else 0,
            " ".join(f"{k}={v}" for k, v in totals.items()),
        )


def _started_jobs(child: Child) -> frozenset[int] | None:
    """Read which of a dead child's held jobs had started, then unmap its log."""
    log = child.started
    if log is None:
        return None
    try:
        return log.started()
    finally:
        log.close()
