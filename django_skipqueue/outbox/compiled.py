"""The relay's statements of every round, built with the ORM once per thread and database.

An idle relay woken by a commit spent about 8 ms claiming its message, of which some 6 ms
went on building and compiling querysets (the five statements themselves took about 0.5 ms
each): time between the commit and the publish. Each statement here is compiled once with
placeholder values, as the job claim's are (see :mod:`django_skipqueue.db.statements`), so it
stays right on every backend; the statements, their order and their locks are those the
querysets ran. Lists of ids are padded to a few compiled sizes (``statements.padded_size``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db.models import F, Q, QuerySet, Subquery
from django.db.models.signals import post_delete, pre_delete
from django.db.models.sql import DeleteQuery

from django_skipqueue.db import statements
from django_skipqueue.db.clock import DatabaseNow, DatabaseNowPlus
from django_skipqueue.db.statements import (
    RowReader,
    Run,
    Statement,
    slot_float,
    slot_int,
    slot_str,
)
from django_skipqueue.outbox.models import OutboxMessage, OutboxPartition


def lock_free_partitions(using: str, chosen: Sequence[int]) -> list[int]:
    """``SELECT ... FOR UPDATE SKIP LOCKED`` of the partitions of ``chosen`` no lease holds."""
    size = statements.padded_size(len(chosen))

    def build() -> Statement:
        free = _partitions(using, size).filter(
            Q(owner__isnull=True) | Q(lease_until__lt=DatabaseNow())
        )
        numbers = free.select_for_update(skip_locked=True).values_list("number", flat=True)
        return statements.compile_select(numbers, size)

    statement = statements.cached(using, ("outbox-lock", size), build)
    return statements.fetch_values(using, statement, statements.padded(chosen, size))


def lease_partitions(using: str, numbers: Sequence[int], owner: str, lease: float) -> int:
    """Record ``owner``'s lease on the (locked) partitions, ``lease`` seconds from now."""
    size = statements.padded_size(len(numbers))

    def build() -> Statement:
        fields = {"owner": slot_str(size), "lease_until": DatabaseNowPlus(slot_float(size + 1))}
        return statements.compile_update(_partitions(using, size), fields, size + 2)

    statement = statements.cached(using, ("outbox-lease", size), build)
    return statements.execute(using, statement, [*statements.padded(numbers, size), owner, lease])


def release_partitions(using: str, owner: str, numbers: Sequence[int]) -> int:
    """Give ``owner``'s leases on ``numbers`` back (fenced on the owner)."""
    size = statements.padded_size(len(numbers))

    def build() -> Statement:
        rows = _partitions(using, size).filter(owner=slot_str(size))
        return statements.compile_update(rows, {"owner": None, "lease_until": None}, size + 1)

    statement = statements.cached(using, ("outbox-release", size), build)
    return statements.execute(using, statement, [*statements.padded(numbers, size), owner])


def mark_claimed(using: str, ids: Sequence[int], token: str, relay: str, partition: int) -> int:
    """Stamp the rows with the claim's token, fenced on the relay's live partition lease."""
    size = statements.padded_size(len(ids))

    def build() -> Statement:
        # number__in, not number=: an exact lookup of a value outside a small integer's range
        # (the placeholder) compiles to nothing.
        leased = OutboxPartition.objects.using(using).filter(
            number__in=[slot_int(size)], owner=slot_str(size + 1), lease_until__gte=DatabaseNow()
        )
        rows = _messages(using, size).filter(partition__in=Subquery(leased.values("number")))
        fields = {"owner": slot_str(size + 2), "attempts": F("attempts") + 1}
        return statements.compile_update(rows, fields, size + 3)

    statement = statements.cached(using, ("outbox-mark", size), build)
    values = [*statements.padded(ids, size), partition, relay, token]
    return statements.execute(using, statement, values)


def delete_sent(using: str, ids: Sequence[int], token: str) -> int | None:
    """Delete the confirmed rows still stamped with ``token``; None where the ORM must run
    (a ``pre_delete`` or ``post_delete`` receiver listens on the outbox's model)."""
    if pre_delete.has_listeners(OutboxMessage) or post_delete.has_listeners(OutboxMessage):
        return None
    size = statements.padded_size(len(ids))

    def build() -> Statement:
        rows = _messages(using, size).filter(owner=slot_str(size))
        sql, params = rows.query.chain(DeleteQuery).get_compiler(using).as_sql()
        return Statement(sql, tuple(params), statements._find_slots(params, size + 1))

    statement = statements.cached(using, ("outbox-delete", size), build)
    return statements.execute(using, statement, [*statements.padded(ids, size), token])


def read_rows(
    using: str, key: Any, build: Callable[[], QuerySet[Any, Any]], values: Sequence[Any]
) -> list[tuple[Any, ...]]:
    """Run a values_list() queryset (a UNION ALL too) compiled once under ``key``; return its
    rows converted as the ORM would (JSON decoded, booleans as bool)."""

    def compile_rows() -> Statement:
        queryset = build()
        compiler = queryset.query.get_compiler(using)
        sql, params = compiler.as_sql()
        columns = [column for column, _, _ in compiler.select[: compiler.col_count]]
        converters = compiler.get_converters(columns)
        names = tuple(alias or str(i) for i, (_, _, alias) in enumerate(compiler.select))
        reader = RowReader(compiler, names, converters)
        return Statement(sql, tuple(params), statements._find_slots(params, len(values)), reader)

    statement = statements.cached(using, key, compile_rows)
    (rows,) = statements.run_together(using, [Run(statement, values, rows=True)])
    assert statement.reader is not None
    return [tuple(row) for row in statement.reader.convert(rows)]


def _partitions(using: str, size: int) -> QuerySet[OutboxPartition]:
    numbers = [slot_int(index) for index in range(size)]
    return OutboxPartition.objects.using(using).filter(number__in=numbers)


def _messages(using: str, size: int) -> QuerySet[OutboxMessage]:
    ids = [slot_int(index) for index in range(size)]
    return OutboxMessage.objects.using(using).filter(pk__in=ids)
