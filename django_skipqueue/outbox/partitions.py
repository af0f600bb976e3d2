"""Partition leases and the relay's read: the only places that lock or read the outbox.

Per-key order rules out SKIP LOCKED on the message rows: a relay skipping a locked row would
send the next message of the same key first. So relays lock *partitions* (a key always hashes
to the same one) with SKIP LOCKED, in a short transaction that records a lease, and read the
messages of their partitions without locks: no other relay sends them while the lease lasts.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from django.db import connections
from django.db.models import (
    BooleanField,
    Exists,
    ExpressionWrapper,
    OuterRef,
    Q,
    QuerySet,
    TextField,
    Value,
)
from django.db.models.functions import Cast

from django_skipqueue.db.clock import DatabaseNow
from django_skipqueue.db.statements import retry_whole_transaction, short_transaction, slot_int
from django_skipqueue.outbox import compiled
from django_skipqueue.outbox.models import OutboxMessage, OutboxPartition
from django_skipqueue.outbox.states import MessageStatus


def ensure_partitions(using: str, count: int) -> None:
    """Create the partition rows 0..count-1 that do not exist yet."""
    rows = [OutboxPartition(number=number) for number in range(count)]
    OutboxPartition.objects.using(using).bulk_create(rows, ignore_conflicts=True)


def with_work(using: str) -> list[int]:
    """Return the partitions that hold unsent messages.

    Two index dives per partition row (EXISTS on the claim index's prefix), however long the
    backlog: a DISTINCT over the messages would read every pending entry.
    """
    return [number for number, _ in _with_work(using)]


def free_with_work(using: str) -> tuple[list[int], int]:
    """Return the partitions with work that no live lease holds, and how many others hold.

    Relays choose among free partitions only, so that several relays do not keep picking the
    same ones and come back empty-handed.
    """
    rows = _with_work(using)
    free = [number for number, held in rows if not held]
    return free, len(rows) - len(free)


def _with_work(using: str) -> list[tuple[int, bool]]:
    def build() -> QuerySet[Any, Any]:
        messages = OutboxMessage.objects.using(using).filter(partition=OuterRef("number"))
        pending = Exists(messages.filter(status=MessageStatus.PENDING))
        retrying = Exists(messages.filter(status=MessageStatus.RETRY))
        held = Q(owner__isnull=False, lease_until__gte=DatabaseNow())
        return (
            OutboxPartition.objects.using(using)
            .filter(pending | retrying)
            .annotate(held=ExpressionWrapper(held, output_field=BooleanField()))
            .order_by("number")
            .values_list("number", "held")
        )

    rows = compiled.read_rows(using, "outbox-with-work", build, [])
    return [(number, bool(busy)) for number, busy in rows]


def claim(using: str, owner: str, candidates: list[int], *, limit: int, lease: float) -> list[int]:
    """Lease up to ``limit`` free partitions of ``candidates`` to ``owner``; return them.

    Two statements, in a transaction of their own, or in the caller's (the relay's claim, which
    reads and stamps the messages before it commits): no savepoint, two round trips less.
    Publishing happens after the commit, under the lease.
    """
    chosen = random.sample(candidates, min(limit, len(candidates)))
    if not chosen:
        return []

    def lock_and_lease() -> list[int]:
        numbers = compiled.lock_free_partitions(using, chosen)
        if numbers:
            compiled.lease_partitions(using, numbers, owner, lease)
        return numbers

    connection = connections[using]
    if connection.in_atomic_block or not connection.get_autocommit():
        return lock_and_lease()

    def alone() -> list[int]:
        with short_transaction(using):
            return lock_and_lease()

    return retry_whole_transaction(using, alone)


def release(using: str, owner: str, numbers: list[int]) -> None:
    """Give the partitions back, fenced: a lease taken over by another relay is not touched."""
    if numbers:
        compiled.release_partitions(using, owner, numbers)


def still_held(using: str, owner: str, numbers: list[int]) -> bool:
    """Tell whether ``owner`` still holds every partition's lease (database clock)."""
    held = OutboxPartition.objects.using(using).filter(
        number__in=numbers, owner=owner, lease_until__gte=DatabaseNow()
    )
    return held.count() == len(numbers)


@dataclass(slots=True)
class Row:
    """A message as the relay reads it: plain values, the payload as the JSON text stored.

    No model instance and no JSON decoding per message: the stored text is the body sent.
    """

    pk: int
    status: str
    key: str
    topic: str
    message_id: str
    #: The payload's JSON text, as written (compact) and sent.
    body: str
    headers: dict[str, str]
    #: The claim that last published it, if it was never settled (a possible duplicate).
    owner: str | None
    attempts: int
    due: bool


#: The columns of a Row, in its fields' order (``body`` is the payload cast to text).
COLUMNS = ("id", "status", "key", "topic", "message_id", "body", "headers", "owner", "attempts")


@dataclass(frozen=True, slots=True)
class Backlog:
    """The sendable messages of a partition, and the keys held back by a waiting retry."""

    messages: list[Row]
    held_keys: frozenset[str]


def sendable(using: str, partition: int, limit: int) -> Backlog:
    """Return the messages of ``partition`` to send now, in id order.

    A message waiting for its retry holds back every later message of its key; a due retry is
    the first of its key. One statement in the usual case, a UNION ALL of the retries and the
    first ``limit`` pending messages, each part in the claim index's order (status, partition,
    id); a second read of the pending messages, without the held keys, only when a retry is
    not due yet (the first read may then be filled with messages that cannot go).
    """
    rows: list[Any]
    if connections[using].features.supports_slicing_ordering_in_compound:

        def both() -> QuerySet[Any, Any]:
            part = slot_int(0)
            return _retrying(using, part).union(_pending(using, part, limit), all=True)

        rows = compiled.read_rows(using, ("outbox-sendable", limit), both, [partition])
    else:  # SQLite: no ORDER BY or LIMIT inside a UNION's parts, so two reads
        rows = [*_retrying(using, partition), *_pending(using, partition, limit)]
    messages = [Row(*row) for row in rows]
    retrying = [m for m in messages if m.status == MessageStatus.RETRY]
    pending = [m for m in messages if m.status == MessageStatus.PENDING]
    held = frozenset(m.key for m in retrying if not m.due and m.key)
    if held:
        again: list[Any] = list(_pending(using, partition, limit, held))
        pending = [Row(*row) for row in again]
    due = [m for m in retrying if m.due]
    if due:  # a due retry goes first of its key; pending rows of that key follow it in id order
        pending = sorted([*due, *pending], key=lambda m: m.pk)
    return Backlog(pending[:limit], held)


def _rows(messages: QuerySet[OutboxMessage], due: Any) -> QuerySet[OutboxMessage]:
    """The columns of a Row, ``due`` last: the same in both parts of the UNION."""
    text = Cast("payload", output_field=TextField())
    return messages.annotate(body=text, due=due).values_list(*COLUMNS, "due")


def _retrying(using: str, partition: int) -> QuerySet[OutboxMessage]:
    # partition__in: the same SQL as an equality, and it compiles with a placeholder value
    # outside a small integer's range (compiled.read_rows).
    retries = OutboxMessage.objects.using(using).filter(
        status=MessageStatus.RETRY, partition__in=[partition]
    )
    return _rows(retries, Q(available_at__lte=DatabaseNow())).order_by("id")


def _pending(
    using: str, partition: int, limit: int, held: frozenset[str] = frozenset()
) -> QuerySet[OutboxMessage]:
    messages = OutboxMessage.objects.using(using).filter(
        status=MessageStatus.PENDING, partition__in=[partition]
    )
    if held:
        messages = messages.exclude(key__in=held)
    return _rows(messages, Value(True)).order_by("id")[:limit]
