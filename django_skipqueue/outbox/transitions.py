"""The only writes of an outbox message row: one function per transition of ``states.py``.

The relay's are fenced on the claim's token in ``owner``: if another relay took the partition
over (this one stalled past its lease), it re-marked the rows with its own token, and this
relay's confirm, retry or release matches nothing. The claim and the confirm run statements
compiled once (``compiled.py``), the rest plain ORM UPDATEs; the insert of ``publish()`` is
built in ``writing.py`` (checks, cuts by packet size) and carries ``states.PUBLISH``'s status.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import F, QuerySet

from django_skipqueue.db.clock import DatabaseNowPlus
from django_skipqueue.outbox import compiled
from django_skipqueue.outbox.models import OutboxMessage
from django_skipqueue.outbox.states import MessageStatus


def claim(using: str, ids: Sequence[int], token: str, relay: str, partition: int) -> int:
    """2: stamp the rows with the claim's token and count the attempt; return the rows stamped.

    Fenced on the relay's live lease of the partition: a relay that stalled past its lease
    stamps nothing (0), and must publish nothing.
    """
    return compiled.mark_claimed(using, ids, token, relay, partition) if ids else 0


def send(using: str, ids: Sequence[int], token: str) -> int:
    """3: delete the confirmed rows still stamped with ``token``; return how many."""
    if not ids:
        return 0
    deleted = compiled.delete_sent(using, ids, token)
    if deleted is None:  # a delete receiver listens: the ORM must run
        return _claimed(using, ids, token).delete()[0]
    return deleted


def retry(using: str, token: str, pk: int, error: str, delay: float, trace: str | None) -> int:
    """4: put a refused message back for a later round, its attempt spent.

    ``trace``: what ``owner`` keeps, the claim that may have left a copy at the broker.
    """
    return _claimed(using, [pk], token).update(
        status=MessageStatus.RETRY,
        available_at=DatabaseNowPlus(delay),
        last_error=error,
        owner=trace,
    )


def retry_unanswered(using: str, token: str, pk: int, error: str, delay: float) -> int:
    """5: put back a message the broker never answered: no attempt spent, and this claim's
    token kept in ``owner`` as the trace of a possible duplicate."""
    return _claimed(using, [pk], token).update(
        status=MessageStatus.RETRY,
        available_at=DatabaseNowPlus(delay),
        last_error=error,
        owner=token,
        attempts=F("attempts") - 1,
    )


def dead_letter(using: str, token: str, pk: int, error: str) -> int:
    """6: give up on a message: an operator may send it again (9)."""
    return _claimed(using, [pk], token).update(
        status=MessageStatus.DEAD, last_error=error, owner=None, available_at=None
    )


def lose_answer(using: str, token: str, pk: int, error: str) -> int:
    """7: a message in flight when the connection broke: no answer, no attempt spent, and the
    token stays (it may have reached the broker)."""
    return _claimed(using, [pk], token).update(last_error=error, attempts=F("attempts") - 1)


def give_back(using: str, token: str, ids: Sequence[int], trace: str | None) -> int:
    """8: messages the claim never handed to the broker, as the claim found them: no attempt
    spent, ``owner`` back to ``trace`` (an earlier claim's token, or None)."""
    return _claimed(using, ids, token).update(owner=trace, attempts=F("attempts") - 1)


def send_again(messages: QuerySet[OutboxMessage]) -> int:
    """9: dead letters of ``messages`` back to the relay as new pending messages; others are
    left alone. Return how many."""
    return messages.filter(status=MessageStatus.DEAD).update(
        status=MessageStatus.PENDING, attempts=0, owner=None, available_at=None
    )


def _claimed(using: str, ids: Sequence[int], token: str) -> QuerySet[OutboxMessage]:
    """The rows of ``ids`` still stamped by the claim ``token``: the fence of every write."""
    return OutboxMessage.objects.using(using).filter(pk__in=ids, owner=token)
