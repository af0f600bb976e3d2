"""The job state machine: statuses, their groups, every transition by name, the retry decision.

A leaf: it imports no model (the models import it), so the manager, the worker, the reaper and
the admin all speak of states through the names here. Each transition is named once with the
statuses it leaves, the one it enters and the columns it writes; docs/discussions/job-states.md
numbers them the same way, and ``transitions.py`` holds the fenced UPDATEs that apply them.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from django.db import models

from django_skipqueue.backoff import exponential
from django_skipqueue.conf import get_settings
from django_skipqueue.exceptions import LeaseExpired, Snooze

logger = logging.getLogger("django_skipqueue.worker")


class JobStatus(models.TextChoices):
    # Waiting for run_after; promoted to READY when due, so claims never scan future jobs.
    SCHEDULED = "scheduled", "Scheduled"
    # Waiting to be claimed.
    READY = "ready", "Ready"
    # Leased by a worker (owner, lease_until) and running or about to run.
    CLAIMED = "claimed", "Claimed"
    SUCCEEDED = "succeeded", "Succeeded"
    # Attempts spent, or an error that is not retried.
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"
    # Waiting for a free slot or rate window of its flow key (flow control): out of the claim
    # index's ('ready', queue) range; admitted (made READY) when a slot or a window opens.
    # Last, so that the bits of KEY_BITS already stored in rows keep their meaning.
    BLOCKED = "blocked", "Blocked"


#: States a job can still leave on its own; the rest is history for purge.
ACTIVE_STATUSES = (JobStatus.SCHEDULED, JobStatus.READY, JobStatus.CLAIMED, JobStatus.BLOCKED)
FINISHED_STATUSES = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)
#: States in which an idempotency key blocks a new job with the same key (by default).
KEYED_STATUSES = (*ACTIVE_STATUSES, JobStatus.SUCCEEDED)
#: One bit per status: a job's ``key_statuses`` holds those of the states its key blocks in.
KEY_BITS = {status: 1 << n for n, status in enumerate(JobStatus)}


def key_mask(statuses: tuple[str, ...] | list[str]) -> int:
    """The ``key_statuses`` bits of these statuses."""
    return sum(KEY_BITS[JobStatus(status)] for status in set(statuses))


#: The default ``key_statuses``: KEYED_STATUSES.
KEYED_MASK = key_mask(KEYED_STATUSES)
#: States the admin may cancel (transition 11): not yet claimed by any worker.
WAITING_STATUSES = (JobStatus.SCHEDULED, JobStatus.READY)
#: Waiting states an operator may cancel: those, and blocked behind a flow key (11).
CANCELLABLE_STATUSES = (*WAITING_STATUSES, JobStatus.BLOCKED)


@dataclass(frozen=True)
class Transition:
    """One documented change of status: where from, where to, what it writes, who does it."""

    number: int
    name: str
    #: Statuses it leaves; empty for a new row (enqueue).
    sources: tuple[JobStatus, ...]
    #: The status it enters; None for the purge (the row is deleted).
    target: JobStatus | None
    #: Columns it may write besides ``status`` (a new row writes every column).
    writes: frozenset[str]
    who: str
    #: The label an attempt that ends by this transition is counted under: the per-minute
    #: counters (those of ``monitoring.metrics.COUNTERS``), the exported ``outcome``, the
    #: reaper's result and the worker's log line all read it here. None: no attempt ends so.
    outcome: str | None = None


def _transition(
    number: int,
    name: str,
    sources: tuple[JobStatus, ...],
    target: JobStatus | None,
    writes: str,
    who: str,
    outcome: str | None = None,
) -> Transition:
    return Transition(number, name, sources, target, frozenset(writes.split()), who, outcome)


S = JobStatus
#: Written when an attempt ends (5, 6, 7, 9, 10): the owner joins the history, the lease goes.
_ATTEMPT_OVER = "worker_ids lease_until"

ENQUEUE = _transition(1, "enqueue", (), S.READY, "*", "task.enqueue()")
ENQUEUE_DEFERRED = _transition(
    2, "enqueue (deferred)", (), S.SCHEDULED, "*", "task.using(run_after=...).enqueue()"
)
PROMOTE = _transition(3, "promote", (S.SCHEDULED,), S.READY, "", "the maintenance loop")
CLAIM = _transition(
    4,
    "claim",
    (S.READY,),
    S.CLAIMED,
    "owner lease_until attempts started_at last_attempted_at",
    "a worker with a free slot",
)
SUCCEED = _transition(
    5,
    "succeed",
    (S.CLAIMED,),
    S.SUCCEEDED,
    f"return_value finished_at {_ATTEMPT_OVER} flow_slot",
    "worker",
    outcome="succeeded",
)
RETRY_LATER = _transition(
    6,
    "retry after backoff",
    (S.CLAIMED,),
    S.SCHEDULED,
    f"errors run_after owner {_ATTEMPT_OVER}",
    "worker, reaper",
    outcome="retried",
)
RETRY_NOW = _transition(
    7,
    "retry now",
    (S.CLAIMED,),
    S.READY,
    # max_attempts: raised when a stopping worker cuts an attempt short (WorkerStopped).
    f"errors owner max_attempts {_ATTEMPT_OVER}",
    "worker (also as it stops), reaper, supervisor",
    outcome="retried",
)
RELEASE = _transition(
    8,
    "release",
    (S.CLAIMED,),
    S.READY,
    "owner lease_until attempts started_at",
    "worker at shutdown, or a job thread refused a connection before its task began",
    # The one attempt that ends by a release: its thread was refused a connection.
    outcome="refused",
)
FAIL = _transition(
    9,
    "fail",
    (S.CLAIMED,),
    S.FAILED,
    f"errors finished_at owner {_ATTEMPT_OVER} flow_slot",
    "worker, reaper, supervisor",
    outcome="failed",
)
CANCEL_RUNNING = _transition(
    10,
    "cancel while running",
    (S.CLAIMED,),
    S.CANCELLED,
    f"errors finished_at owner {_ATTEMPT_OVER} flow_slot",
    "worker, reaper",
    outcome="cancelled",
)
CANCEL = _transition(
    11,
    "cancel",
    CANCELLABLE_STATUSES,
    S.CANCELLED,
    "errors finished_at flow_slot",
    "an operator (admin)",
)
RETRY = _transition(
    12,
    "retry",
    (S.FAILED,),
    S.READY,
    "finished_at max_attempts owner lease_until run_after cancel_requested",
    "an operator (admin)",
)
RETRY_BLOCKED = _transition(
    20,
    "retry (blocked)",
    (S.FAILED,),
    S.BLOCKED,
    "finished_at max_attempts owner lease_until run_after cancel_requested",
    "an operator (admin), for a failed job of a flow key (its slot given back or kept)",
)
PURGE = _transition(13, "purge", FINISHED_STATUSES, None, "", "skipqueue_purge, runworkers")
SNOOZE = _transition(
    14,
    "snooze",
    (S.CLAIMED,),
    S.SCHEDULED,
    "run_after owner lease_until attempts started_at snoozes",
    "worker, when the task raised Snooze",
    outcome="snoozed",
)
REPLACE = _transition(
    15,
    "replace",
    WAITING_STATUSES,
    S.READY,
    "args kwargs run_after",
    "task.enqueue() with unique_replace, when a waiting job holds the key",
)
REPLACE_DEFERRED = _transition(
    16,
    "replace (deferred)",
    WAITING_STATUSES,
    S.SCHEDULED,
    "args kwargs run_after",
    "task.enqueue() with unique_replace and a future run_after (or a scheduled holder)",
)

# Flow control (django_skipqueue/flow): a keyed job waits as BLOCKED until its key has a free
# slot and an open rate window; admission takes the slot in the same transaction.
ENQUEUE_BLOCKED = _transition(
    17, "enqueue (blocked)", (), S.BLOCKED, "*", "task.enqueue() of a task with flow control"
)
ADMIT = _transition(
    18,
    "admit",
    (S.BLOCKED,),
    S.READY,
    "flow_slot",
    "whoever freed a slot or opened a window or blocked a job: enqueue, a job's end, "
    "promotion, a retry, the flow timer; a blocked slot holder by the rate alone",
)
PROMOTE_BLOCKED = _transition(
    19,
    "promote (blocked)",
    (S.SCHEDULED,),
    S.BLOCKED,
    "",
    "the maintenance loop, for a due job of a flow key (a slot it holds is kept)",
)

REPLACE_BLOCKED = _transition(
    22,
    "replace (blocked)",
    (S.SCHEDULED,),
    S.BLOCKED,
    "args kwargs run_after",
    "task.enqueue() with unique_replace, when the scheduled holder of a flow key is to run now",
)

RETRY_NOW_BLOCKED = _transition(
    21,
    "retry now (blocked)",
    (S.CLAIMED,),
    S.BLOCKED,
    # The same as RETRY_NOW: the next attempt is a start its key's rate window must count.
    # A slot holder keeps flow_slot: it waits for the rate alone, in its key's blocked_holders.
    f"errors owner max_attempts {_ATTEMPT_OVER}",
    "worker (also as it stops), reaper, supervisor, for a job of a flow key",
    outcome="retried",
)

TRANSITIONS = (
    ENQUEUE,
    ENQUEUE_DEFERRED,
    PROMOTE,
    CLAIM,
    SUCCEED,
    RETRY_LATER,
    RETRY_NOW,
    RELEASE,
    FAIL,
    CANCEL_RUNNING,
    CANCEL,
    RETRY,
    PURGE,
    SNOOZE,
    REPLACE,
    REPLACE_DEFERRED,
    ENQUEUE_BLOCKED,
    ADMIT,
    PROMOTE_BLOCKED,
    RETRY_BLOCKED,
    RETRY_NOW_BLOCKED,
    REPLACE_BLOCKED,
)


class Attempts(Protocol):
    """What the retry decision reads of a job."""

    attempts: int
    max_attempts: int


@dataclass(frozen=True)
class Ending:
    """How an attempt ends: the transition that records it, and the delay before the next.

    Every attempt's end carries one (the worker's ``Outcome.ending``, the reaper's and the
    supervisor's reclaims): what is written, counted and logged is read from its transition.
    """

    transition: Transition
    #: Seconds until the next attempt: > 0 for RETRY_LATER, 0 for RETRY_NOW (and
    #: RETRY_NOW_BLOCKED), else None.
    delay: float | None = None

    @property
    def status(self) -> JobStatus:
        assert self.transition.target is not None
        return self.transition.target

    @property
    def outcome(self) -> str:
        """The label it is counted and logged under (``Transition.outcome``)."""
        assert self.transition.outcome is not None
        return self.transition.outcome

    @property
    def retried(self) -> bool:
        """The job runs again after an attempt (6, 7): not a snooze, which spends none."""
        return self.delay is not None and self.transition is not SNOOZE


#: Succeeded: what every successful attempt's end carries.
SUCCESS = Ending(SUCCEED)
#: Given back before it began (a job thread refused a connection): released (8).
REFUSAL = Ending(RELEASE)

#: A task's own backoff: (the exception, the attempt that raised it) -> seconds, or None to
#: stop retrying (the job fails).
Backoff = Callable[[BaseException, int], float | None]
#: Exception classes, as the retry_on and discard_on options hold them.
Classes = tuple[type[BaseException], ...]


@dataclass(frozen=True)
class RetryPolicy:
    """What a task says of its attempts that raised: which are retried, when, how many snoozes.

    Built from the task's options (``tasks.retry_policy()``); the queue's own records of a lost
    attempt (``LeaseExpired``) are retried whatever ``retry_on`` says, since they say nothing
    about the task's exceptions, unless ``discard_on`` names them.
    """

    #: Exception classes that are retried; None: every exception.
    retry_on: Classes | None = None
    #: Exception classes that fail the job at once, attempts left or not (they win).
    discard_on: Classes = ()
    #: Base of the exponential backoff in seconds (None: SKIPQUEUE_RETRY_BACKOFF), or a
    #: callable ``(exception, attempt) -> seconds or None``.
    backoff: float | Backoff | None = None
    #: Snoozes before the job fails with SnoozeLimitReached (None: SKIPQUEUE_MAX_SNOOZES).
    max_snoozes: int | None = None

    def retries(self, error: BaseException | None) -> bool:
        """Tell whether an attempt that raised ``error`` may be retried (attempts permitting)."""
        if error is None:
            return True
        if self.discard_on and isinstance(error, self.discard_on):
            return False
        return self.retry_on is None or isinstance(error, (*self.retry_on, LeaseExpired))

    def delay(self, error: BaseException | None, attempts: int) -> float | None:
        """Return the seconds before attempt ``attempts + 1``, or None for no retry."""
        if not callable(self.backoff):
            return backoff_delay(attempts, self.backoff)
        try:
            seconds = self.backoff(error or LeaseExpired("lease lost"), attempts)
            if seconds is None:
                return None
            delay = float(seconds)
            if not math.isfinite(delay):
                raise ValueError(f"{seconds!r} is not a finite number of seconds")
        except Exception:
            # A broken backoff must not lose the job: the default backoff stands in.
            logger.exception("the backoff of a task failed; using the exponential default")
            return backoff_delay(attempts, None)
        return max(delay, 0.0)

    def snooze_limit(self) -> int:
        return get_settings().MAX_SNOOZES if self.max_snoozes is None else self.max_snoozes


def next_step(
    attempts: int,
    max_attempts: int,
    backoff: float | RetryPolicy | None,
    *,
    flow_key: str | None,
    cancel_requested: bool = False,
    retryable: bool = True,
    error: BaseException | None = None,
    snoozes: int = 0,
) -> Ending:
    """Decide how an attempt that raised (or was lost) ends: cancelled, snoozed, retried, failed.

    The one retry decision of the queue, for the worker, the reaper and the supervisor: a
    requested cancellation wins (10); a ``Snooze`` runs the job again later without spending
    the attempt (14) while the task's snoozes last, then fails it (9); spent attempts fail
    (9), and so does an error that running the task again cannot fix (``retryable=False``)
    or that the task's policy does not retry (``discard_on``, ``retry_on``); otherwise the
    job is retried after the policy's delay, later (6) or at once (7), unless the task's own
    backoff answers None (9). ``backoff`` is the task's policy, or the base of its exponential
    backoff (None for SKIPQUEUE_RETRY_BACKOFF). ``flow_key``: the job's (``Job.flow_key``), a
    required argument because a retry at once of a keyed job waits for its key's admission
    (21, not 7), which this decides too.
    """
    if cancel_requested:
        return Ending(CANCEL_RUNNING)
    policy = backoff if isinstance(backoff, RetryPolicy) else RetryPolicy(backoff=backoff)
    if isinstance(error, Snooze):
        if snoozes < policy.snooze_limit():
            return Ending(SNOOZE, error.seconds)
        return Ending(FAIL)
    if attempts >= max_attempts or not retryable or not policy.retries(error):
        return Ending(FAIL)
    return retry_after(policy.delay(error, attempts), flow_key=flow_key)


def retry_after(delay: float | None, *, flow_key: str | None) -> Ending:
    """Return the step of a retry in ``delay`` seconds; None means no retry: the job fails.

    A retry at once of a job of a flow key (``flow_key``) waits for its key's admission (21).
    Its next attempt is a new start, which its key's rate window must count: it waits
    BLOCKED instead of going READY (7), and the transaction that writes it has its key admit
    what it allows (18). A job that holds a slot keeps it and is admitted by the rate alone:
    at once when its key has no rate or a window with starts left. Deciding costs a plain
    job (no flow key) one attribute check, and a keyed job no query: the key's rate is read
    by the admission, under the key's lock, after the job's own row.
    """
    if delay is None:
        return Ending(FAIL)
    if delay > 0:
        return Ending(RETRY_LATER, delay)
    return Ending(RETRY_NOW, 0.0) if flow_key is None else Ending(RETRY_NOW_BLOCKED, 0.0)


def retry_delay(job: Attempts, backoff: float | None) -> float | None:
    """Return the seconds until ``job``'s next attempt, or None when its attempts are spent."""
    return next_step(job.attempts, job.max_attempts, backoff, flow_key=None).delay


def backoff_delay(attempts: int, backoff: float | None) -> float:
    """Return the seconds to wait before attempt ``attempts + 1``.

    The package's one backoff (:func:`django_skipqueue.backoff.exponential`): ``backoff * 2 **
    (attempt - 1)``, capped by SKIPQUEUE_RETRY_BACKOFF_MAX, with "equal jitter", so that jobs that
    failed together do not all come back at the same instant. A backoff of 0 retries at once.
    """
    config = get_settings()
    base = config.RETRY_BACKOFF if backoff is None else backoff
    return exponential(attempts, base, config.RETRY_BACKOFF_MAX)
