"""The outbox message state machine: statuses, every transition by name, the retry decision.

A leaf like the job's ``states.py``: it imports no model (the models import it). Each
transition is named once with the statuses it leaves, the one it enters and the columns it
writes; docs/discussions/outbox-states.md numbers them the same way, and the outbox's
``transitions.py`` holds the fenced statements that apply them (the only writes of a message
row). A claim is not a status: the relay stamps its token in ``owner`` and the row keeps its
status, so several transitions leave the status as they found it.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import models

from django_skipqueue.backoff import exponential


class MessageStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    # Refused by the broker, waiting for available_at; later messages of its key wait too.
    RETRY = "retry", "Retry"
    DEAD = "dead", "Dead letter"


#: Statuses the relay reads: a message in one of them is still to be sent.
UNSENT_STATUSES = (MessageStatus.PENDING, MessageStatus.RETRY)


@dataclass(frozen=True)
class Transition:
    """One documented change of a message row: where from, where to, what it writes, who."""

    number: int
    name: str
    #: Statuses it leaves; empty for a new row (publish).
    sources: tuple[MessageStatus, ...]
    #: The status it enters; None where the row keeps the status it had (a claim's bookkeeping).
    target: MessageStatus | None
    #: Columns it may write besides ``status`` (a new row writes every column).
    writes: frozenset[str]
    who: str
    #: The row is deleted (sent: the broker confirmed it).
    deletes: bool = False


def _transition(
    number: int,
    name: str,
    sources: tuple[MessageStatus, ...],
    target: MessageStatus | None,
    writes: str,
    who: str,
    *,
    deletes: bool = False,
) -> Transition:
    return Transition(number, name, sources, target, frozenset(writes.split()), who, deletes)


M = MessageStatus

PUBLISH = _transition(1, "publish", (), M.PENDING, "*", "publish(), publish_many()")
CLAIM = _transition(
    2, "claim", UNSENT_STATUSES, None, "owner attempts", "a relay holding the partition's lease"
)
SEND = _transition(
    3, "send", UNSENT_STATUSES, None, "", "the relay, once the broker confirmed", deletes=True
)
RETRY = _transition(
    4,
    "retry after refusal",
    UNSENT_STATUSES,
    M.RETRY,
    "available_at last_error owner",
    "the relay, when the broker refused a message with attempts left",
)
RETRY_UNANSWERED = _transition(
    5,
    "retry unanswered",
    UNSENT_STATUSES,
    M.RETRY,
    "available_at last_error owner attempts",
    "the relay, when the broker never answered (no attempt spent)",
)
DEAD_LETTER = _transition(
    6,
    "dead-letter",
    UNSENT_STATUSES,
    M.DEAD,
    "last_error owner available_at",
    "the relay: attempts spent, or a message no broker can take",
)
LOSE_ANSWER = _transition(
    7,
    "answer lost",
    UNSENT_STATUSES,
    None,
    "last_error attempts",
    "the relay, for a message in flight when the connection broke",
)
GIVE_BACK = _transition(
    8,
    "give back",
    UNSENT_STATUSES,
    None,
    "owner attempts",
    "the relay, for a message its claim never handed to the broker",
)
SEND_AGAIN = _transition(
    9,
    "send again",
    (M.DEAD,),
    M.PENDING,
    "attempts owner available_at",
    "an operator (admin action, resend permission)",
)

TRANSITIONS = (
    PUBLISH,
    CLAIM,
    SEND,
    RETRY,
    RETRY_UNANSWERED,
    DEAD_LETTER,
    LOSE_ANSWER,
    GIVE_BACK,
    SEND_AGAIN,
)


@dataclass(frozen=True)
class Step:
    """What follows a broker's refusal: the transition, and the delay of a retry."""

    transition: Transition
    #: Seconds until the next attempt (RETRY, RETRY_UNANSWERED), else None.
    delay: float | None = None


def after_refusal(attempts: int, max_attempts: int, backoff: float, cap: float) -> Step:
    """Decide how a refused message goes on: a dead letter once its attempts are spent
    (``attempts`` counts the refused one), else a retry after the shared backoff."""
    if attempts >= max_attempts:
        return Step(DEAD_LETTER)
    return Step(RETRY, exponential(attempts, backoff, cap))


def after_no_answer(attempts: int, backoff: float, cap: float) -> Step:
    """Decide how a message the broker never answered goes on: a retry that spends no attempt
    (the claim's is given back), so its delay is that of the attempt before."""
    return Step(RETRY_UNANSWERED, exponential(max(attempts - 1, 0), backoff, cap))
