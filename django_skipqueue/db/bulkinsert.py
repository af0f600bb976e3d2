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

from django.db import IntegrityError, connections
from django.db.models import Field

from django_skipqueue.models import Job

_MISSING = object()


def insert_rows(jobs: Sequence[Job], using: str) -> None:
    """Insert ``jobs`` with one multi-row INSERT and set each job's primary key."""
    if not jobs:
        return
    connection = connections[using]
    sql, params = _insert_statement(jobs, connection)
    returning = connection.features.can_return_rows_from_bulk_insert
    with connection.cursor() as cursor:
        cursor.execute(sql + (" RETURNING `id`" if returning else ""), params)
        ids = [row[0] for row in cursor.fetchall()] if returning else _consecutive(cursor, jobs)
    for job, pk in zip(jobs, ids, strict=True):
        saved(job, pk, using)


def insert_rows_keyed(jobs: Sequence[Job], using: str, *, returning: bool | None = None) -> None:
    """Insert the keyed ``jobs`` with one ``INSERT IGNORE`` and set the pk of those inserted.

    A job whose key a live row already holds is skipped by the server and keeps ``pk = None``.
    The keys of ``jobs`` must be distinct. With RETURNING (MariaDB) the server names the rows
    it inserted; MySQL has none, so the inserted rows are told from the holders by their ids:
    the rows a simple INSERT inserts take consecutive AUTO_INCREMENT values from
    ``LAST_INSERT_ID()``, which no holder can have. IGNORE also skips a row for other errors
    (a CHECK): the caller checks that every skipped key has a holder.
    """
    if not jobs:
        return
    connection = connections[using]
    sql, params = _insert_statement(jobs, connection)
    sql = sql.replace("INSERT INTO", "INSERT IGNORE INTO", 1)
    if returning is None:
        returning = connection.features.can_return_rows_from_bulk_insert
    with connection.cursor() as cursor:
        if returning:
            cursor.execute(sql + " RETURNING `id`, `idempotency_key`", params)
            inserted = {key: pk for pk, key in cursor.fetchall()}
        else:
            cursor.execute(sql, params)
            inserted = _inserted_without_returning(cursor, jobs)
    mark_inserted(jobs, inserted, using)


def mark_inserted(jobs: Sequence[Job], inserted: dict[str | None, int], using: str) -> None:
    """Mark the keyed ``jobs`` whose key the server inserted (key -> pk) as saved rows."""
    for job in jobs:
        pk = inserted.get(job.idempotency_key)
        if pk is not None:
            saved(job, pk, using)


def saved(job: Job, pk: int, using: str) -> None:
    """Make ``job`` the saved row ``pk`` of ``using``, as ``Model.save()`` leaves it."""
    job.pk = pk
    job._state.adding = False
    job._state.db = using


def _inserted_without_returning(cursor: Any, jobs: Sequence[Job]) -> dict[str, int]:
    """Tell the inserted rows from the holders by id: ours are the block from LAST_INSERT_ID().

    InnoDB reserves a simple INSERT's AUTO_INCREMENT values in one go and gives them to the
    rows it inserts, in order (a row it skips takes none): the ``ROW_COUNT()`` inserted rows
    have ids ``first``, ``first + step``, ...; a holder, inserted before, has a smaller one.
    """
    cursor.execute("SELECT ROW_COUNT(), LAST_INSERT_ID(), @@auto_increment_increment")
    count, first, step = cursor.fetchone()
    if not count:
        return {}
    keys = [job.idempotency_key or "" for job in jobs]
    rows = Job.objects.using(cursor.db.alias).filter(active_key__in=keys)
    ours = range(first, first + count * step, step)
    inserted = {key: pk for key, pk in rows.values_list("active_key", "pk") if pk in ours}
    if len(inserted) != count:
        raise IntegrityError(
            f"Inserted {count} keyed jobs but found {len(inserted)} from id {first} on: "
            "AUTO_INCREMENT values were not consecutive (innodb_autoinc_lock_mode=2?)."
        )
    return inserted


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


def _insert_statement(jobs: Sequence[Job], connection: Any) -> tuple[str, list[Any]]:
    """The multi-row INSERT of ``jobs``: the values every row shares written once as
    literals, the others as parameters."""
    fields = insert_fields()
    columns = [_column(field, jobs, connection) for field in fields]
    quote = connection.ops.quote_name
    literals = [_literal(connection, value) if same else "%s" for same, value in columns]
    row_sql = "(" + ", ".join(literals) + ")"
    names = ", ".join(quote(field.column) for field in fields)
    sql = f"INSERT INTO {quote(Job._meta.db_table)} ({names}) VALUES " + ", ".join(
        [row_sql] * len(jobs)
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
