"""Outcome listeners: what an app runs inside the transaction that records a job's outcome.

The one hook of the state machine. An optional app registers a listener from its
``AppConfig.ready()`` (the workflows app counts a batch's outcomes this way); ``transitions.py``
calls every listener in the transaction of the fenced UPDATE that wrote the outcomes, after
the write and only if the fence let it through. So a listener's writes commit with the outcome
or not at all: a write the fence rejects is heard by nobody, and what a listener writes never
commits without the outcome it heard. A listener that raises rolls the outcome back with it.

Only the outcomes of jobs that belong to a batch (``Job.batch_id`` set) are announced: a plain
job pays one attribute check, and its end opens no savepoint for listeners.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from django_skipqueue.states import JobStatus


class Ended(NamedTuple):
    """An outcome a batch counts: SUCCEEDED, FAILED, CANCELLED, or READY (a failure retried)."""

    batch_id: int
    status: JobStatus
    job_id: int
    return_value: Any = None


#: A listener: ``(database alias, the outcomes just written)``, called in their transaction.
OutcomeListener = Callable[[str, Sequence[Ended]], None]

_listeners: list[OutcomeListener] = []


def register_outcome_listener(listener: OutcomeListener) -> None:
    """Call ``listener`` inside every transaction that records outcomes of batched jobs.

    Idempotent: ``ready()`` may run again (a test that changes ``INSTALLED_APPS``).
    """
    if listener not in _listeners:
        _listeners.append(listener)


def unregister_outcome_listener(listener: OutcomeListener) -> None:
    """Stop calling ``listener`` (a no-op when it is not registered)."""
    if listener in _listeners:
        _listeners.remove(listener)


def outcome_listeners() -> tuple[OutcomeListener, ...]:
    """Return the registered listeners, in the order they are called."""
    return tuple(_listeners)


def outcomes_recorded(using: str, ended: Sequence[Ended]) -> None:
    """Tell every listener of ``ended``, in the caller's transaction (``transitions.py``)."""
    if ended:
        for listener in _listeners:
            listener(using, ended)
