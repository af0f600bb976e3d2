"""Run claimed jobs: sync tasks on a thread pool, coroutines on one event loop.

A job's code never touches the queue's bookkeeping: its attempt ends in an ``Outcome``
(attempt.py), and the worker's main thread records outcomes in batches. The one exception is a
``transactional`` task, whose writes and fenced completion commit together in the job's own
transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from inspect import iscoroutinefunction
from typing import Any

from django.db import Error, close_old_connections, connections, transaction

from django_skipqueue import transitions
from django_skipqueue.batched_success import committed_successes
from django_skipqueue.compat import Task, task_started
from django_skipqueue.conf import get_settings
from django_skipqueue.context import JobContext, build_result, current_job, task_for_job
from django_skipqueue.db.outage import TOO_MANY_CONNECTIONS
from django_skipqueue.db.statements import dropped_by_server, retry_whole_transaction
from django_skipqueue.exceptions import (
    InvalidStoredPayload,
    JobTimedOut,
)
from django_skipqueue.models import Job
from django_skipqueue.monitoring import tracing
from django_skipqueue.queues import backend_class
from django_skipqueue.states import (
    JobStatus,
)
from django_skipqueue.worker.attempt import (
    NOT_RETRIED,
    REFUSED,
    RETRY,
    SNOOZED,
    OnDone,
    Outcome,
    Running,
    failure,
    timed_out,
    to_json,
    too_large_message,
)
from django_skipqueue.worker.started import StartedLog

__all__ = [
    "NOT_RETRIED",
    "REFUSED",
    "RETRY",
    "SNOOZED",
    "Executor",
    "JobThreads",
    "OnDone",
    "Outcome",
    "Running",
    "failure",
    "timed_out",
    "to_json",
    "too_large_message",
]

logger = logging.getLogger("django_skipqueue.worker")

#: Longest pause of a job thread whose tasks keep being refused a connection, in seconds.
MAX_REFUSED_PAUSE = 5.0
#: For this long after a refused connection, a job thread connects before it starts a task.
REFUSAL_MEMORY = 30.0


class _FenceRejected(Exception):
    """Roll a transactional task back: its lease was lost before it could commit."""


# The job threads. ThreadPoolExecutor builds a Future, a work item, a semaphore turn and two
# condition notifications per job, and the worker asks its Future one thing only: can this
# job still be taken back? Job threads report outcomes themselves, so the pool needs less: a
# queue of calls, a Ticket per call that a thread or the worker takes first, and no more
# threads than calls have waited at once.


class Ticket:
    """A call handed to the pool: begun by a thread or taken back by the worker, never both.

    Both sides pop the one element of a list, which the interpreter does atomically: only the
    first pop gets it.
    """

    __slots__ = ("_pending", "finished")

    def __init__(self) -> None:
        self._pending = [True]
        #: The call has returned, or was taken back: its thread is free (or never needed).
        self.finished = False

    def cancel(self) -> bool:
        """Take the call back if no thread has begun it; tell whether it was taken back."""
        if not self._take():
            return False
        self.finished = True
        return True

    def _take(self) -> bool:
        try:
            self._pending.pop()
        except IndexError:
            return False
        return True


_Call = tuple[Ticket, Callable[..., object], tuple[object, ...]]


class JobThreads:
    """Up to ``size`` threads that run submitted calls in submission order.

    A thread starts only when every existing one is busy, as with ThreadPoolExecutor: a
    worker that runs one job at a time keeps one thread, and one database connection.
    """

    def __init__(self, size: int, name: str) -> None:
        self.size = size
        self.name = name
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        #: Tickets not known to be finished; looked at only while a thread may be missing.
        self._unfinished: list[Ticket] = []
        self._shut = False

    def submit(self, call: Callable[..., object], *args: object) -> Ticket:
        """Queue ``call(*args)`` for the next free thread; return its ticket."""
        if self._shut:
            raise RuntimeError("The job threads have been shut down.")
        ticket = Ticket()
        if len(self._threads) < self.size:
            self._unfinished = [t for t in self._unfinished if not t.finished]
            self._unfinished.append(ticket)
            if len(self._unfinished) > len(self._threads):
                self._start_thread()
        self._calls.put((ticket, call, args))
        return ticket

    @property
    def threads(self) -> int:
        """How many threads the pool has started."""
        return len(self._threads)

    def _start_thread(self) -> None:
        name = f"{self.name}_{len(self._threads)}"
        thread = threading.Thread(target=self._serve, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _serve(self) -> None:
        while (item := self._calls.get()) is not None:
            ticket, call, args = item
            if ticket._take():  # not taken back meanwhile
                try:
                    call(*args)
                except BaseException:  # the calls report their own errors: a bug if seen
                    logger.exception("a job thread's call raised: %r", call)
                ticket.finished = True
            del item, ticket, call, args  # hold no job between calls

    def shutdown(self) -> None:
        """Take back the calls no thread has begun, and let idle threads end.

        Does not wait: a thread still in a job runs on until the process exits (the
        threads are daemons, as a stopping worker must not hang on a stuck job).
        """
        self._shut = True
        while True:
            try:
                item = self._calls.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[0].cancel()
        for _ in self._threads:
            self._calls.put(None)


class Executor:
    """Run jobs and report each outcome through ``on_done`` (called from any thread)."""

    def __init__(self, threads: int, backend_alias: str, using: str, on_done: OnDone) -> None:
        self.pool = JobThreads(threads, "skipqueue-job")
        self.backend_alias = backend_alias
        self.using = using
        self.on_done = on_done
        #: The sender of task_started: the configured backend's class, as Django documents.
        self.sender = backend_class(backend_alias)
        self._loop: asyncio.AbstractEventLoop | None = None
        #: OpenTelemetry spans per attempt (read once: off, no attempt calls into tracing).
        self.tracing = get_settings().TRACING and tracing.enabled()
        #: Close a job thread's connections after each job (SKIPQUEUE_RELEASE_JOB_CONNECTIONS).
        self.release_connections = get_settings().RELEASE_JOB_CONNECTIONS
        #: Per job thread: tasks refused a connection in a row (see _pause_after_refusal).
        self._refusals = threading.local()
        #: time.monotonic() of this process's latest refused connection (see _connect_first).
        self._refused_at = -REFUSAL_MEMORY
        #: Per task function: whether it is a coroutine function.
        self._coroutines: dict[Callable[..., Any], bool] = {}
        #: Where a job's start is noted for the supervisor (None: run without one).
        self.started: StartedLog | None = None
        #: Largest JSON return value, in bytes (the worker lowers it at start-up if the
        #: server's max_allowed_packet could not carry it: see db.packets.result_bound).
        self.max_result_bytes = get_settings().MAX_RESULT_BYTES

    def submit(self, running: Running, task: Task) -> None:
        """Start ``running`` on the pool or the event loop."""
        coroutine = self._coroutines.get(task.func)
        if coroutine is None:  # inspect's check costs more than the rest of submit
            coroutine = self._coroutines[task.func] = iscoroutinefunction(task.func)
        running.on_loop = coroutine and not _transactional(task)
        if running.on_loop:
            future = asyncio.run_coroutine_threadsafe(self._run_async(running, task), self.loop)
            running.future = future
            future.add_done_callback(partial(self._report, running))
        else:
            # The job thread reports the outcome itself: no done callback per job.
            running.future = self.pool.submit(self._run_and_report, running, task)

    def _report(self, running: Running, done: Future[Outcome]) -> None:
        """Report a coroutine's outcome (a future cancelled before it ran reports nothing).

        A coroutine's future can be cancelled once it runs (it is never marked running), so
        only its done callback knows whether the outcome stands.
        """
        if done.cancelled():  # never started: the worker releases it
            return
        try:
            outcome = done.result()
        except BaseException as error:  # a bug outside the task: the job must still end
            outcome = failure(running, None, error, running.started_at or time.monotonic())
        running.ended = True
        self.on_done(running, outcome)

    def _run_and_report(self, running: Running, task: Task) -> None:
        """Run a sync job on its thread and report how it ended (a cancelled one never runs)."""
        running.begun = True
        try:
            outcome = self._run_sync(running, task)
        except BaseException as error:  # a bug outside the task: the job must still end
            outcome = failure(running, None, error, running.started_at or time.monotonic())
        running.ended = True
        self.on_done(running, outcome)

    def fail_unstarted(self, running: Running, error: BaseException) -> None:
        """Report an attempt that could not start (its task path names no Task)."""
        self.on_done(running, failure(running, None, error, time.monotonic()))

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=_run_loop, args=(self._loop,), name="skipqueue-loop", daemon=True
            )
            thread.start()
        return self._loop

    def shutdown(self) -> None:
        """Stop taking work; running threads are not waited for (the process is exiting)."""
        self.pool.shutdown()
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)

    def _run_sync(self, running: Running, task: Task) -> Outcome:
        # Like a request: stale connections out before, broken ones out after.
        close_dead_connections()
        refused = self._connect_first(running)
        if refused is not None:
            self._pause_after_refusal(refused)
            return refused
        try:
            if self.tracing:
                with tracing.attempt_span(running.job) as span:
                    outcome = self._attempt(running, task)
                    tracing.attempt_ended(span, outcome.status, outcome.exception)
            else:
                outcome = self._attempt(running, task)
        finally:
            current_job.set(None)  # the thread's next log lines are no longer this job's
            if self.release_connections:  # an idle thread then holds no connection
                connections.close_all()
            else:
                close_old_connections()
        self._pause_after_refusal(outcome)
        return outcome

    def _connect_first(self, running: Running) -> Outcome | None:
        """Shortly after a refusal, connect before the task starts; give the job back if refused.

        A task refused a connection spends an attempt, and a server at ``max_connections``
        refuses many in a row: the job would fail for good on a fleet that is only full. So
        for REFUSAL_MEMORY seconds after any thread of this process was refused, a job thread
        opens its connection first, and a refusal then gives the job back unstarted (8), its
        attempt not spent. Otherwise nothing is opened early: a task may use no database.
        """
        if time.monotonic() - self._refused_at >= REFUSAL_MEMORY:
            return None
        try:
            connections[self.using].ensure_connection()
        except Error as error:
            if not (error.args and error.args[0] in TOO_MANY_CONNECTIONS):
                return None  # the task meets it, as it would have: its attempt, its error
            self._refused_at = time.monotonic()
            return Outcome(running, REFUSED, exception=error)
        return None

    def _pause_after_refusal(self, outcome: Outcome) -> None:
        """Hold this thread back for a while after its task was refused a connection.

        A server at ``max_connections`` refuses this thread's next connection too, at once, so
        the thread would be the first free one again and take the next job, often the retry of
        the one it just failed: a job could spend all its attempts on it while other threads
        and hosts have connections. Waiting before it reports (holding its slot, half a second
        and doubling up to MAX_REFUSED_PAUSE) lets those others take the retries.
        """
        error = outcome.exception
        refused = isinstance(error, Error) and bool(error.args)
        if refused and error is not None and error.args[0] in TOO_MANY_CONNECTIONS:
            self._refused_at = time.monotonic()
            self._refusals.count = getattr(self._refusals, "count", 0) + 1
            time.sleep(min(MAX_REFUSED_PAUSE, 0.5 * 2 ** (self._refusals.count - 1)))
        else:
            self._refusals.count = 0

    def _attempt(self, running: Running, task: Task) -> Outcome:
        context = self._start(running, task)
        started = running.started_at or time.monotonic()
        try:
            task_started.send(self.sender, task_result=context.task_result)
            if _transactional(task):
                return self._run_in_transaction(running, task, context, started)
            value = to_json(
                task.call(*_arguments(task, context, running.job), **running.job.kwargs),
                self.max_result_bytes,
            )
            return Outcome(
                running, JobStatus.SUCCEEDED, value, duration=time.monotonic() - started
            )
        except BaseException as error:  # a task's SystemExit is its failure, not ours
            return failure(running, task, error, started)

    def _run_in_transaction(
        self, running: Running, task: Task, context: JobContext, started: float
    ) -> Outcome:
        """Commit the task's writes and its fenced completion together, or neither."""
        job = running.job

        def attempt() -> Any:
            with transaction.atomic(using=self.using):
                returned = task.call(*_arguments(task, context, job), **job.kwargs)
                value = to_json(returned, self.max_result_bytes)
                if not transitions.succeed(job, value):
                    raise _FenceRejected
            return value

        try:
            value = retry_whole_transaction(self.using, attempt)
        except _FenceRejected:
            return Outcome(running, JobStatus.SUCCEEDED, recorded=True, lost=True)
        except Error:
            committed = self._committed_anyway(job)
            if committed is None:
                raise
            value = committed["return_value"]
        duration = time.monotonic() - started
        return Outcome(running, JobStatus.SUCCEEDED, value, duration=duration, recorded=True)

    def _committed_anyway(self, job: Job) -> dict[str, Any] | None:
        """After a connection broke at COMMIT, read whether the commit happened all the same."""
        with contextlib.suppress(Error):
            connections[self.using].close()
        with contextlib.suppress(Error):
            return committed_successes([job], self.using, "return_value").get(job.pk)
        return None

    async def _run_async(self, running: Running, task: Task) -> Outcome:
        running.begun = True
        if not self.tracing:
            return await self._attempt_async(running, task)
        with tracing.attempt_span(running.job) as span:
            outcome = await self._attempt_async(running, task)
            tracing.attempt_ended(span, outcome.status, outcome.exception)
            return outcome

    async def _attempt_async(self, running: Running, task: Task) -> Outcome:
        context = self._start(running, task)
        started = running.started_at or time.monotonic()
        deadline = asyncio.timeout(running.job.timeout_seconds)
        try:
            await task_started.asend(self.sender, task_result=context.task_result)
            async with deadline:
                value = await task.func(
                    *_arguments(task, context, running.job), **running.job.kwargs
                )
            duration = time.monotonic() - started
            value = to_json(value, self.max_result_bytes)
            return Outcome(running, JobStatus.SUCCEEDED, value, duration=duration)
        except BaseException as raised:
            error = raised
            if deadline.expired():
                error = JobTimedOut(f"Timed out after {running.job.timeout_seconds} s.")
            return failure(running, task, error, started)

    def _start(self, running: Running, task: Task) -> JobContext:
        if self.started is not None:  # before the task runs: it may kill this process
            self.started.mark(running.slot, running.job.pk)
        running.started_at = time.monotonic()
        current_job.set(running.job)
        job = running.job
        running.result = build_result(job, task_for_job(task, job), self.backend_alias)
        return JobContext(task_result=running.result, cancel_event=running.cancel_event)


def close_dead_connections() -> None:
    """Close this thread's connections that died since its last job, before the task runs.

    A job thread keeps its connection between jobs (CONN_MAX_AGE), and the server may have
    dropped it meanwhile (a restart, ``KILL``, ``wait_timeout``): without this check the next
    task's first query fails and spends an attempt. On MySQL/MariaDB a look at the socket,
    no round trip; elsewhere one ping per job, only on threads that hold a connection (what
    CONN_HEALTH_CHECKS does for a request). The same pass closes those past CONN_MAX_AGE or
    broken by an error, as ``close_old_connections()`` does.
    """
    for connection in connections.all(initialized_only=True):
        connection.close_if_unusable_or_obsolete()
        if connection.connection is not None and dropped_by_server(connection):
            connection.close()


def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
    try:
        loop.run_forever()
    finally:
        loop.close()


def _arguments(task: Task, context: JobContext, job: Job) -> list[Any]:
    # A row written behind the backend's back must not run with arguments nobody gave it
    # (list() of an object would pass its keys).
    if not isinstance(job.args, list) or not isinstance(job.kwargs, dict):
        raise InvalidStoredPayload(
            f"Job {job.pk} has args of type {type(job.args).__name__} and kwargs of type "
            f"{type(job.kwargs).__name__}: a JSON array and a JSON object are expected. Not "
            "retried: the row was written behind the backend's back and stays as it is."
        )
    return [context, *job.args] if task.takes_context else list(job.args)


def _transactional(task: Task) -> bool:
    return bool(getattr(task, "transactional", False))
