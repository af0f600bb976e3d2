"""Multi-row INSERTs of jobs on MySQL/MariaDB without the ORM's per-value compile work.

``bulk_create`` compiles every value of every row (22 columns a job), which capped bulk
enqueue near 5,000 jobs a second. A bulk of jobs repeats most values (status, options,
empty errors, one enqueue time), so each distinct value is prepared by its field once
(``get_db_prep_save``, exactly as the ORM would), columns that are the same in every row
are written once as literals quoted by the driver, and only the rest are parameters.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from operator import attrgetter
from typing import Any

from django.db import connections
from django.db.models import Field

from django_skipqueue.models import Job

_MISSING = object()


def insert_rows(jobs: Sequence[Job], using: str) -> None:
    """Insert ``jobs`` with one multi-row INSERT and set each job's primary key."""
    if not jobs:
        return
    connection = connections[using]
    fields = insert_fields()
    columns = [_column(field, jobs, connection) for field in fields]
    sql, params = _statement(fields, columns, len(jobs), connection)
    returning = connection.features.can_return_rows_from_bulk_insert
    with connection.cursor() as cursor:
        cursor.execute(sql + (" RETURNING `id`" if returning else ""), params)
        ids = [row[0] for row in cursor.fetchall()] if returning else _consecutive(cursor, jobs)
    for job, pk in zip(jobs, ids, strict=True):
        job.pk = pk
        job._state.adding = False
        job._state.db = using


def insert_fields() -> list[Field[Any, Any]]:
    """The columns an INSERT writes: every stored field but the key and generated columns."""
    return [
        field
        for field in Job._meta.concrete_fields
        if not field.primary_key and not getattr(field, "generated", False)
    ]


#: A column's values: one prepared value shared by every row, or one per row.
Column = tuple[bool, Any]


def _column(field: Field[Any, Any], jobs: Sequence[Job], connection: Any) -> Column:
    """Prepare one column, column-wise: once if every job has the same value."""
    values = list(map(attrgetter(field.attname), jobs))
    first = values[0]
    if _all_same(values, first):
        return True, field.get_db_prep_save(first, connection)
    memo: dict[tuple[type, Hashable], Any] = {}
    prepared = []
    for value in values:
        try:
            key = (type(value), value)
            found = memo.get(key, _MISSING)
        except TypeError:  # a JSON list or dict: prepared every time
            prepared.append(field.get_db_prep_save(value, connection))
            continue
        if found is _MISSING:
            found = memo[key] = field.get_db_prep_save(value, connection)
        prepared.append(found)
    return False, prepared


def _all_same(values: list[Any], first: Any) -> bool:
    """Equal values of the same type; non-empty containers never count (``[1] == [True]``).

    Written with builtins that loop in C: this runs for every column of every bulk.
    """
    if set(map(type, values)) != {type(first)}:
        return False
    if isinstance(first, list | dict):
        return not first and not any(values)
    return values.count(first) == len(values)


def _statement(
    fields: list[Field[Any, Any]], columns: list[Column], count: int, connection: Any
) -> tuple[str, list[Any]]:
    quote = connection.ops.quote_name
    literals = [_literal(connection, value) if same else "%s" for same, value in columns]
    row_sql = "(" + ", ".join(literals) + ")"
    names = ", ".join(quote(field.column) for field in fields)
    sql = f"INSERT INTO {quote(Job._meta.db_table)} ({names}) VALUES " + ", ".join(
        [row_sql] * count
    )
    varying = [values for same, values in columns if not same]
    params = [value for row in zip(*varying, strict=True) for value in row] if varying else []
    return sql, params


def _literal(connection: Any, value: Any) -> str:
    """Quote ``value`` with the driver's own escaping; '%' doubled for the parameter pass."""
    connection.ensure_connection()
    text = connection.connection.literal(value)
    return (text.decode() if isinstance(text, bytes) else str(text)).replace("%", "%%")


def _consecutive(cursor: Any, jobs: Sequence[Job]) -> list[int]:
    """MySQL has no INSERT ... RETURNING: read the ids of a simple multi-row INSERT.

    InnoDB reserves a simple insert's AUTO_INCREMENT values in one go in every
    innodb_autoinc_lock_mode, so they are consecutive (stepped by auto_increment_increment)
    from LAST_INSERT_ID().
    """
    cursor.execute("SELECT LAST_INSERT_ID(), @@auto_increment_increment")
    first, step = cursor.fetchone()
    return [first + offset * step for offset in range(len(jobs))]
