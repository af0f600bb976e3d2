"""One attempt of a job and how it ended: what the worker holds, and what it records.

A job's code never touches the queue's bookkeeping: its attempt ends in an :class:`Outcome`,
which carries the transition that records it (``states.Ending``), decided once here
(:func:`failure`, :func:`timed_out`) or by the success. The executor runs attempts; the
worker's main thread records their outcomes in batches (recording.py).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field
from typing import Any, Protocol

from django_skipqueue.compat import Task, TaskResult, normalize_json
from django_skipqueue.exceptions import (
    InvalidReturnValue,
    InvalidStoredPayload,
    JobCancelled,
    JobTimedOut,
    ResultTooLarge,
    Snooze,
    SnoozeLimitReached,
    TaskNotFound,
    error_record,
    message_record,
)
from django_skipqueue.models import Job
from django_skipqueue.states import (
    CANCEL_RUNNING,
    FAIL,
    REFUSAL,
    SNOOZE,
    SUCCESS,
    Ending,
    JobStatus,
    next_step,
    retry_after,
)
from django_skipqueue.tasks import retry_policy


class Handle(Protocol):
    """What takes a job back before it begins: a job thread's ticket, a coroutine's future."""

    def cancel(self) -> bool: ...


#: ``Outcome.status`` of an attempt to be retried (the job is then SCHEDULED or READY).
RETRY = "retry"
#: ``Outcome.status`` of a job given back unstarted: its thread was refused a connection.
REFUSED = "refused"
#: ``Outcome.status`` of an attempt that raised Snooze: SCHEDULED again, the attempt given back.
SNOOZED = "snoozed"

#: Errors that running the task again cannot fix: the job fails at once, attempts left or not.
#: A task path this worker cannot import is one (see docs/reference/workers.md, "Retries").
NOT_RETRIED = (TaskNotFound, InvalidReturnValue, InvalidStoredPayload)


@dataclass(eq=False)
class Running:
    """A job this process holds, from its claim until its outcome is recorded."""

    job: Job
    cancel_event: threading.Event = field(default_factory=threading.Event)
    #: time.monotonic() when the task began (None: not started yet).
    started_at: float | None = None
    #: What takes it back before it begins: its ticket of the job threads, or for a
    #: coroutine its future on the event loop. None until it is handed over.
    future: Handle | None = None
    #: Runs on the event loop (which enforces its timeout itself) rather than a thread.
    on_loop: bool = False
    #: Timed out: its thread may run on, but what it returns is ignored.
    abandoned: bool = False
    #: A heartbeat found the job taken over: its completion will be rejected.
    lease_lost: bool = False
    #: The TaskResult of this attempt (for task_started and the job's context), once it began;
    #: updated in place for task_finished.
    result: TaskResult | None = None
    #: time.monotonic() when this process took the job (its claim).
    held_at: float = field(default_factory=time.monotonic)
    #: Set by the job's thread (or the event loop) as it takes the job: it is no longer
    #: waiting. Flags the main loop reads instead of asking the future (a lock each time).
    begun: bool = False
    #: Set just before its outcome is handed to the main loop: it no longer runs.
    ended: bool = False
    #: Its slot in the process's StartedLog (None: no log, or none was free).
    slot: int | None = None


@dataclass(eq=False)
class Outcome:
    """How one attempt ended, waiting to be recorded by a fenced transition.

    ``ending`` is what it is recorded, counted and logged by: the transition that writes it
    (``states.Ending``), decided once. ``status`` is the word the log line, the tracing span
    and ``run_jobs()``'s report show: JobStatus.SUCCEEDED, FAILED (attempts spent) or
    CANCELLED, or RETRY, SNOOZED, REFUSED.
    """

    running: Running
    status: str
    return_value: Any = None
    error: dict[str, str] | None = None
    retry_in: float | None = None
    duration: float = 0.0
    #: Already written by the task's own transaction (transactional tasks).
    recorded: bool = False
    #: The fence rejected it: the lease had been lost, nothing was written.
    lost: bool = False
    #: What ended a failed attempt: task_finished is sent while it is being handled.
    exception: BaseException | None = None
    #: The ending already decided (``states.next_step()``); else read from ``status``.
    decided: InitVar[Ending | None] = None
    #: The transition that records it, and the delay before the next attempt.
    ending: Ending = field(init=False)

    def __post_init__(self, decided: Ending | None) -> None:
        self.ending = decided or _ending_of(self.status, self.retry_in, self.job.flow_key)

    @property
    def job(self) -> Job:
        return self.running.job

    def fail(self, error: dict[str, str], exception: BaseException) -> None:
        """Turn it into a failure that is not retried (a result no statement can carry)."""
        self.status = JobStatus.FAILED
        self.ending = Ending(FAIL)
        self.return_value = None
        self.retry_in = None
        self.error = error
        self.exception = exception

    @classmethod
    def after(
        cls,
        running: Running,
        step: Ending,
        error: dict[str, str],
        started: float,
        exception: BaseException,
    ) -> Outcome:
        """Return the outcome of an attempt that raised ``exception`` and ends with ``step``."""
        duration = time.monotonic() - started
        if step.transition is SNOOZE:  # not a failure: no error, no exception for receivers
            return cls(running, SNOOZED, retry_in=step.delay, duration=duration, decided=step)
        status = RETRY if step.retried else step.status
        return cls(
            running, status, None, error, step.delay, duration, exception=exception, decided=step
        )


def _ending_of(status: str, retry_in: float | None, flow_key: str | None) -> Ending:
    """The ending an outcome built from its status word alone stands for."""
    if status == JobStatus.SUCCEEDED:
        return SUCCESS
    if status == JobStatus.CANCELLED:
        return Ending(CANCEL_RUNNING)
    if status == SNOOZED:
        return Ending(SNOOZE, retry_in)
    if status == REFUSED:
        return REFUSAL
    return retry_after(retry_in, flow_key=flow_key)


OnDone = Callable[[Running, Outcome], None]


def failure(running: Running, task: Task | None, error: BaseException, started: float) -> Outcome:
    """Return the outcome of a failed attempt: cancelled, retried or failed for good."""
    job = running.job
    cancelled = isinstance(error, JobCancelled) or running.cancel_event.is_set()
    step = next_step(
        job.attempts,
        job.max_attempts,
        retry_policy(task),
        flow_key=job.flow_key,
        cancel_requested=cancelled,
        retryable=not isinstance(error, NOT_RETRIED),
        error=error,
        snoozes=job.snoozes,
    )
    if isinstance(error, Snooze) and step.transition is not SNOOZE:
        message = (
            f"Job {job.pk} asked to snooze after {job.snoozes} snoozes, the most its task "
            f"allows (max_snoozes or SKIPQUEUE_MAX_SNOOZES): {error}."
        )
        return Outcome.after(
            running, step, message_record(SnoozeLimitReached, message), started, error
        )
    return Outcome.after(running, step, error_record(error), started, error)


def timed_out(running: Running, task: Task | None) -> Outcome:
    """Return the outcome of a sync attempt that outlived its timeout (its thread runs on)."""
    job = running.job
    message = f"Job {job.pk} ran longer than its timeout of {job.timeout_seconds} s."
    exception = JobTimedOut(message)
    policy = retry_policy(task)
    step = next_step(
        job.attempts, job.max_attempts, policy, flow_key=job.flow_key, error=exception
    )
    error = message_record(JobTimedOut, message)
    started = running.started_at or time.monotonic()
    return Outcome.after(running, step, error, started, exception)


#: Return values that are short JSON as they are: returned without a round trip through the
#: encoder. Integers within 64 bits only: a huge one may not even encode (Python's limit on
#: int-to-str digits), so it takes the measured way.
_PLAIN_JSON = frozenset({type(None), bool})
_INT_BOUND = 2**63
#: Most JSON characters one character of a string can become (an astral one, as two \uXXXX).
_JSON_CHARS_PER_CHAR = 12


def to_json(value: Any, limit: int) -> Any:
    """Return a task's return value as plain JSON, or raise InvalidReturnValue.

    Raises ResultTooLarge when its JSON text exceeds ``limit`` bytes (it is ASCII: the field
    encodes with ``ensure_ascii``). Short strings and scalars are not encoded to be measured:
    a string of n characters has at most 12 n + 2 characters of JSON.
    """
    kind = type(value)
    if kind is str:
        if len(value) * _JSON_CHARS_PER_CHAR + 2 <= limit:
            return value
    elif kind in _PLAIN_JSON or (kind is float and math.isfinite(value)):
        return value  # what normalize_json() returns for them, and json.dumps() accepts
    elif kind is int and -_INT_BOUND < value < _INT_BOUND:
        return value
    try:
        normalized = normalize_json(value)
        size = len(json.dumps(normalized, allow_nan=False))
    except (TypeError, ValueError) as error:
        raise InvalidReturnValue(
            f"The task returned a {type(value).__qualname__}, which cannot be stored as JSON "
            f"({error}). Return None, a bool, a number, a string, or lists and dicts of them; "
            "the attempt is not retried, since running the task again would return the same."
        ) from error
    if size > limit:
        raise ResultTooLarge(too_large_message(size, limit))
    return normalized


def too_large_message(size: int | None, limit: int) -> str:
    """Say why a return value was not stored, and what to do instead."""
    what = f"{size:,} bytes of JSON" if size is not None else "a value too large to store"
    return (
        f"The task returned {what}, more than the {limit:,} bytes a result may take "
        "(SKIPQUEUE_MAX_RESULT_BYTES, bounded by the server's max_allowed_packet). Store large "
        "results elsewhere (a file, object storage, a table) and return a reference to them; "
        "the attempt is not retried, since running the task again would return the same."
    )
