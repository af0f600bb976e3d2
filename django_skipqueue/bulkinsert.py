"""Multi-row INSERTs of jobs on MySQL/MariaDB without the ORM's per-value compile work.

``bulk_create`` compiles every value of every row (22 columns a job), which capped bulk
enqueue near 5,000 jobs a second. A bulk of jobs repeats most values (status, options,
empty errors, one enqueue time), so each distinct value is prepared by its field once
(``get_db_prep_save``, exactly as the ORM would), columns that are the same in every row
are written once as literals quoted by the driver, and only the rest are parameters.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from django.db import connections
from django.db.models import Field

from .models import Job

_MISSING = object()


def insert_rows(jobs: Sequence[Job], using: str) -> None:
    """Insert ``jobs`` with one multi-row INSERT and set each job's primary key."""
    if not jobs:
        return
    connection = connections[using]
    fields = insert_fields()
    rows = _prepared_rows(jobs, fields, connection)
    constant = [all(row[i] == rows[0][i] for row in rows) for i in range(len(fields))]
    sql, params = _statement(fields, rows, constant, connection)
    returning = connection.features.can_return_rows_from_bulk_insert
    with connection.cursor() as cursor:
        cursor.execute(sql + (" RETURNING `id`" if returning else ""), params)
        ids = [row[0] for row in cursor.fetchall()] if returning else _consecutive(cursor, jobs)
    for job, pk in zip(jobs, ids, strict=True):
        job.pk = pk
        job._state.adding, job._state.db = False, using


def insert_fields() -> list[Field[Any, Any]]:
    """The columns an INSERT writes: every stored field but the key and generated columns."""
    return [
        field
        for field in Job._meta.concrete_fields
        if not field.primary_key and not getattr(field, "generated", False)
    ]


def _prepared_rows(
    jobs: Sequence[Job], fields: list[Field[Any, Any]], connection: Any
) -> list[list[Any]]:
    memo: dict[tuple[int, type, Hashable], Any] = {}
    rows = []
    for job in jobs:
        row = []
        for index, field in enumerate(fields):
            value = getattr(job, field.attname)
            # Empty JSON lists and dicts (no errors yet, no kwargs) are the common case.
            key = (index, type(value), () if value == [] or value == {} else value)
            try:
                prepared = memo.get(key, _MISSING)
            except TypeError:  # unhashable: a JSON list or dict with content
                row.append(field.get_db_prep_save(value, connection))
                continue
            if prepared is _MISSING:
                prepared = memo[key] = field.get_db_prep_save(value, connection)
            row.append(prepared)
        rows.append(row)
    return rows


def _statement(
    fields: list[Field[Any, Any]], rows: list[list[Any]], constant: list[bool], connection: Any
) -> tuple[str, list[Any]]:
    quote = connection.ops.quote_name
    literals = [
        _literal(connection, rows[0][i]) if same else "%s" for i, same in enumerate(constant)
    ]
    row_sql = "(" + ", ".join(literals) + ")"
    columns = ", ".join(quote(field.column) for field in fields)
    sql = f"INSERT INTO {quote(Job._meta.db_table)} ({columns}) VALUES " + ", ".join(
        [row_sql] * len(rows)
    )
    params = [value for row in rows for value, same in zip(row, constant, strict=True) if not same]
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
