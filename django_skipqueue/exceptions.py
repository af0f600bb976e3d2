"""Exceptions raised by django-skipqueue, and the records a job keeps of those it met.

A failed attempt leaves its error record in the job's ``errors``: the exception's class path
and its traceback, a long one trimmed (:func:`error_record`, :func:`message_record`). When the
job runs again is the state machine's decision: ``states.next_step()``.
"""

from __future__ import annotations

import traceback

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import CommandError

from django_skipqueue.compat import InvalidTask
from django_skipqueue.conf import get_settings


class SkipQueueError(Exception):
    """Base class for django-skipqueue errors. Do not raise directly."""


class AppNotInstalled(ImproperlyConfigured, CommandError):
    """An app of the package is used without its line in INSTALLED_APPS.

    A SkipQueueBackend without ``django_skipqueue``, or a call of an optional app's API
    (``publish()``, ``reserve()``, ``batch()``, ...) without that app.

    Also a CommandError, so that ``manage.py`` prints its one sentence rather than the
    traceback of the import (often the URLconf's, inside the system checks) that met it.
    """


class InvalidPayload(InvalidTask, TypeError):
    """The task's arguments cannot be stored as JSON.

    A TypeError too, as Django documents for a non-JSON argument, and an InvalidTask, as the
    other refusals at enqueue.
    """


class PayloadTooLarge(InvalidPayload):
    """The task's serialised arguments exceed the configured size limit."""


class InvalidStoredPayload(InvalidPayload):
    """Recorded as the error of a job whose stored args are not a JSON array or whose kwargs
    are not a JSON object (a row written behind the backend's back); not retried."""


class InvalidQueueName(InvalidTask):
    """The queue name is not a valid queue identifier."""


class InvalidTaskOption(InvalidTask):
    """A skipqueue task option (max_attempts, lease, timeout, ...) is invalid."""


class LeaseLost(SkipQueueError):
    """A fenced transition matched no row: another owner or the reaper took the job."""


class JobCancelled(SkipQueueError):
    """Recorded as the error of a job that was cancelled before it finished."""


class LeaseExpired(SkipQueueError):
    """Recorded as the error of an attempt whose worker stopped renewing its lease."""


class JobTimedOut(SkipQueueError):
    """Recorded as the error of an attempt that ran past its task's timeout."""


class TaskNotFound(SkipQueueError):
    """Recorded as the error of a job whose task path no longer names a Task; not retried."""


class InvalidReturnValue(SkipQueueError, TypeError):
    """Recorded as the error of an attempt whose task returned a value that is not JSON."""


class ResultTooLarge(InvalidReturnValue):
    """Recorded as the error of an attempt whose JSON return value exceeds
    SKIPQUEUE_MAX_RESULT_BYTES (or what the server's max_allowed_packet lets through)."""


class Snooze(Exception):
    """Raised by a task to run again in ``seconds`` without spending an attempt.

    Not a SkipQueueError: a task's ``except SkipQueueError`` must not swallow it. Each snooze
    counts on the job (``snoozes``); past the task's ``max_snoozes`` the job fails with
    SnoozeLimitReached, so a task cannot snooze forever unnoticed.
    """

    def __init__(self, seconds: float) -> None:
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
            raise ValueError(f"Snooze takes seconds >= 0, not {seconds!r}.")
        super().__init__(f"snooze for {seconds:g} s")
        self.seconds = float(seconds)


class SnoozeLimitReached(SkipQueueError):
    """Recorded as the error of a job that snoozed more often than its task's max_snoozes."""


class WorkerStopped(SkipQueueError):
    """Recorded as the error of an attempt that was running when its worker stopped at once."""


class WorkerDied(SkipQueueError):
    """Recorded as the error of an attempt whose worker process died while running it."""


class InvalidMessage(SkipQueueError, ValueError):
    """An outbox message's payload, headers, key or message id cannot be stored as given."""


class MessageTooLarge(InvalidMessage):
    """An outbox message's JSON payload exceeds SKIPQUEUE_OUTBOX_MAX_PAYLOAD_BYTES."""


class UnknownTopic(InvalidMessage):
    """The outbox topic is not one of SKIPQUEUE_OUTBOX_TOPICS."""


class DuplicateMessage(SkipQueueError):
    """An outbox message with this message_id was already written."""


class MessageRejected(SkipQueueError):
    """The broker refused an outbox message for good (unroutable, too large): a dead letter."""


class BrokerUnavailable(SkipQueueError):
    """The relay cannot reach the broker; it reconnects with exponential backoff."""


class MessageNotConfirmed(SkipQueueError):
    """The broker did not confirm an outbox message (nack, timeout): retried with backoff."""


class ReservationError(SkipQueueError):
    """Base class for the errors of reservation pools. Do not raise directly."""


class InvalidReservation(ReservationError, ValueError):
    """A quantity, ttl or holder is invalid; nothing was held or changed."""


class UnknownPool(ReservationError, LookupError):
    """No pool exists for this item and location (restock creates one)."""


class InsufficientStock(ReservationError):
    """Fewer free units than asked for could be claimed; nothing was held."""


class PoolFull(ReservationError):
    """A restock would take the pool past its cap; nothing was added."""


class HoldNotActive(ReservationError):
    """The hold was already confirmed, released or expired."""


class HoldExpired(HoldNotActive):
    """The hold's time ran out before it could be confirmed."""


class InvalidSchedule(SkipQueueError, ValueError):
    """A recurring task's definition is wrong: cron expression, interval, time zone or task."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        # What is wrong: "cron", "time_zone", "task", or "" for the rest of the definition.
        self.field = field


class BatchFinished(SkipQueueError):
    """Jobs were added to a batch that had already finished (its callbacks enqueued)."""


# The records of errors a job keeps.

ELISION = "\n[... {} characters elided ...]\n"


def error_record(error: BaseException) -> dict[str, str]:
    """Return the stored form of ``error``: its class path and (trimmed) traceback."""
    cls = type(error)
    text = "".join(traceback.format_exception(error))
    return {
        "exception_class_path": f"{cls.__module__}.{cls.__qualname__}",
        "traceback": trim(text),
    }


def message_record(error_class: type[BaseException], message: str) -> dict[str, str]:
    """Return an error record for an attempt that ended without a Python traceback."""
    path = f"{error_class.__module__}.{error_class.__qualname__}"
    return {"exception_class_path": path, "traceback": f"{path}: {message}\n"}


def trim(text: str) -> str:
    """Keep the head and the tail of a long traceback: both ends are where the answers are."""
    limit = get_settings().MAX_TRACEBACK_CHARS
    if len(text) <= limit:
        return text
    keep = max(limit - len(ELISION) - 10, 2) // 2
    return text[:keep] + ELISION.format(len(text) - 2 * keep) + text[-keep:]
