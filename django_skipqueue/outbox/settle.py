"""Record what the broker said, fenced on the claim that published: a lost lease changes nothing.

Every statement matches rows by id *and* by the claim's token in ``owner``: if another relay
took the partition over (this relay stalled past its lease), it re-marked the rows with its
own token, and this relay's confirm, retry or release matches nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db.models import F, Subquery

from ..db.clock import DatabaseNow, DatabaseNowPlus
from .models import MessageStatus, OutboxMessage, OutboxPartition
from .partitions import Row


@dataclass(slots=True)
class Outcomes:
    """The fate of each message of a round, filled in while publishing."""

    sent: list[int] = field(default_factory=list)
    retry: list[tuple[Row, str]] = field(default_factory=list)
    dead: list[tuple[Row, str]] = field(default_factory=list)
    #: Published but unconfirmed when the connection broke: may have reached the broker.
    unknown: list[tuple[Row, str]] = field(default_factory=list)
    untried: list[int] = field(default_factory=list)
    #: Confirmed after an earlier message of its key was refused (more than one in flight).
    overtaken: int = 0


def mark_claimed(using: str, ids: Sequence[int], token: str, relay: str, partition: int) -> int:
    """Stamp the rows with the claim's token before publishing; return the rows stamped.

    The stamp is the fence of every later write, and the trace a crash leaves (a row still
    stamped when read again may have reached the broker). It is fenced itself on the relay's
    live lease of the partition: a relay that stalled past its lease stamps nothing (0), and
    must publish nothing, since another relay may be sending the same rows.
    """
    leased = OutboxPartition.objects.using(using).filter(
        number=partition, owner=relay, lease_until__gte=DatabaseNow()
    )
    rows = OutboxMessage.objects.using(using).filter(
        pk__in=ids, partition__in=Subquery(leased.values("number"))
    )
    return rows.update(owner=token, attempts=F("attempts") + 1)


def settle(
    using: str, token: str, outcomes: Outcomes, *, backoff: float, cap: float, max_attempts: int
) -> tuple[int, int, int]:
    """Write the outcomes; return how many rows were deleted, retried and dead-lettered."""
    objects = OutboxMessage.objects.using(using)
    sent = objects.filter(pk__in=outcomes.sent, owner=token).delete()[0] if outcomes.sent else 0
    retried = dead = 0
    for message, error in outcomes.retry:
        if message.attempts >= max_attempts:
            dead += _dead(using, token, message, f"{error} (after {message.attempts} attempts)")
            continue
        delay = min(backoff * 2 ** (message.attempts - 1), cap)
        retried += objects.filter(pk=message.pk, owner=token).update(
            status=MessageStatus.RETRY,
            available_at=DatabaseNowPlus(delay),
            last_error=error,
            owner=None,
        )
    for message, error in outcomes.dead:
        dead += _dead(using, token, message, error)
    for message, error in outcomes.unknown:
        objects.filter(pk=message.pk, owner=token).update(last_error=error)
    if outcomes.untried:
        # Never handed to the broker: no attempt spent, no trace of a possible duplicate.
        objects.filter(pk__in=outcomes.untried, owner=token).update(
            owner=None, attempts=F("attempts") - 1
        )
    return sent, retried, dead


def _dead(using: str, token: str, message: Row, error: str) -> int:
    return (
        OutboxMessage.objects.using(using)
        .filter(pk=message.pk, owner=token)
        .update(status=MessageStatus.DEAD, last_error=error, owner=None, available_at=None)
    )
