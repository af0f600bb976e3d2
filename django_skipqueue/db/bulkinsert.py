"""Multi-row INSERTs of jobs on MySQL/MariaDB without the ORM's per-value compile work.

``bulk_create`` compiles every value of every row (22 columns a job), which capped bulk
enqueue near 5,000 jobs a second. A bulk of jobs repeats most values (status, options,
empty errors, one enqueue time), so each distinct value is prepared by its field once
(``get_db_prep_save``, exactly as the ORM would), columns that are the same in every row
are written once as literals quoted by the driver, and only the rest are parameters.
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from operator import attrgetter
from typing import Any

from django.db import IntegrityError, connections, transaction
from django.db.backends.base.operations import BaseDatabaseOperations
from django.db.models import BooleanField, CharField, Expression, Field, IntegerField, JSONField
from django.db.models.signals import post_save, pre_save

from django_skipqueue.db import packets
from django_skipqueue.models import Job

_MISSING = object()


def insert_rows(jobs: Sequence[Job], using: str) -> None:
    """Insert ``jobs`` with one multi-row INSERT and set each job's primary key."""
    if not jobs:
        return
    connection = connections[using]
    returning = connection.features.can_return_rows_from_bulk_insert
    for part, sql, params in insert_statements(jobs, connection):
        with connection.cursor() as cursor:
            cursor.execute(sql + (" RETURNING `id`" if returning else ""), params)
            rows = cursor.fetchall() if returning else None
            ids = [row[0] for row in rows] if rows is not None else _consecutive(cursor, part)
        for job, pk in zip(part, ids, strict=True):
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
    if returning is None:
        returning = connection.features.can_return_rows_from_bulk_insert
    for part, sql, params in insert_statements(jobs, connection):
        sql = sql.replace("INSERT INTO", "INSERT IGNORE INTO", 1)
        with connection.cursor() as cursor:
            if returning:
                cursor.execute(sql + " RETURNING `id`, `idempotency_key`", params)
                inserted = {key: pk for pk, key in cursor.fetchall()}
            else:
                cursor.execute(sql, params)
                inserted = _inserted_without_returning(cursor, part)
        mark_inserted(part, inserted, using)


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


#: One INSERT of a bulk: its jobs, its SQL and its parameters.
Part = tuple[Sequence[Job], str, list[Any]]


def insert_statements(jobs: Sequence[Job], connection: Any) -> list[Part]:
    """The multi-row INSERTs of ``jobs``: the values every row shares written once as
    literals, the others as parameters, and no column that is at its default (NULL, or the
    field's ``db_default``) in every row. One INSERT, or as many as keep each statement
    under the server's ``max_allowed_packet`` (see :mod:`~django_skipqueue.db.packets`).

    Each column a row names costs the server parsing and a value to store: naming 13 columns
    instead of 28 made a 1,000-row INSERT of plain jobs about 1.3x as fast on MariaDB.
    """
    fields, columns = [], []
    for field in insert_fields():
        same, value = _column(field, jobs, connection)
        if same and _is_default(field, value, connection):
            continue  # the same in every row, and what the column's default gives it
        fields.append(field)
        columns.append((same, value))
    quote = connection.ops.quote_name
    literals = [_literal(connection, value) if same else "%s" for same, value in columns]
    row_sql = "(" + ", ".join(literals) + ")"
    names = ", ".join(quote(field.column) for field in fields)
    head = f"INSERT INTO {quote(Job._meta.db_table)} ({names}) VALUES "
    varying = [values for same, values in columns if not same]
    parts = []
    row_bytes = len(row_sql.encode(errors="replace"))  # its literals may be non-ASCII text
    for run in _runs(jobs, row_bytes, varying, connection):
        part = varying if len(run) == len(jobs) else [v[run.start : run.stop] for v in varying]
        params = [value for row in zip(*part, strict=True) for value in row] if part else []
        parts.append((jobs[run.start : run.stop], head + ", ".join([row_sql] * len(run)), params))
    return parts


def _runs(
    jobs: Sequence[Job], row_bytes: int, varying: list[list[Any]], connection: Any
) -> list[range]:
    """The runs of rows that go in one statement each: all of them, unless together they
    could pass the packet limit (an upper bound from the values' lengths)."""
    budget = packets.packet_budget(connection)
    every = range(len(jobs))
    fixed = row_bytes + 2  # the row's text and its separator, parameters aside
    if budget is None or len(jobs) * fixed + sum(map(packets.column_bytes, varying)) <= budget:
        return [every]
    sizes = [fixed + sum(map(packets.quoted_bytes, row)) for row in zip(*varying, strict=True)]
    return packets.cut(sizes or [fixed] * len(jobs), budget)


def _is_default(field: Field[Any, Any], prepared: Any, connection: Any) -> bool:
    """Whether the column's default in the table is ``prepared``: NULL for a nullable column
    without a database default, else the field's ``db_default`` (a plain job leaves out 15
    of 28 columns)."""
    if not field.has_db_default():
        return prepared is None and field.null
    default = field.db_default
    if isinstance(default, Expression):
        return False
    return type(prepared) is type(default) and prepared == field.get_db_prep_save(
        default, connection
    )


def _literal(connection: Any, value: Any) -> str:
    """Quote ``value`` with the driver's own escaping; '%' doubled for the parameter pass."""
    connection.ensure_connection()
    raw = connection.connection
    text = raw.literal(value)
    # In the connection's character set: latin1, gbk or cp932 bytes are not UTF-8.
    text = text.decode(raw.encoding) if isinstance(text, bytes) else str(text)
    return text.replace("%", "%%")


def _consecutive(cursor: Any, jobs: Sequence[Job]) -> list[int]:
    """MySQL has no INSERT ... RETURNING: read the ids of a simple multi-row INSERT.

    InnoDB reserves a simple insert's AUTO_INCREMENT values in one go in every
    innodb_autoinc_lock_mode, so they are consecutive (stepped by auto_increment_increment)
    from LAST_INSERT_ID().
    """
    cursor.execute("SELECT LAST_INSERT_ID(), @@auto_increment_increment")
    first, step = cursor.fetchone()
    return [first + offset * step for offset in range(len(jobs))]


# One job, one row: the single enqueue's INSERT.

#: Marks a JSONField column in the plan: lists and dicts go as ``json.dumps(value)``.
JSON_TEXT = object()
#: Per insert column: its field, its attribute, whether a NULL value leaves it out (its
#: default is NULL), the type whose values its field sends unchanged (JSON_TEXT; None: every
#: value goes through ``get_db_prep_save``), and whether its values repeat from job to job
#: (their quoted text is kept: see :func:`insert_row`).
_Plan = tuple[tuple["Field[Any, Any]", str, bool, Any, bool], ...]
_plan: _Plan | None = None
#: The head of the one-row INSERT for each set of columns left out (a bit per column).
_heads: dict[int, str] = {}
#: Quoted values kept per driver connection, at most this many (then started afresh).
LITERALS_KEPT = 512


def can_insert_row(using: str) -> bool:
    """Tell whether :func:`insert_row` may stand in for ``Job.save(force_insert=True)``.

    MySQL and MariaDB only (their single-row INSERT reports its id without RETURNING, and
    mysqlclient quotes values), and only while nobody listens to Job's ``pre_save`` or
    ``post_save``: ``save()`` sends them.
    """
    connection = connections[using]
    return (
        connection.vendor == "mysql"
        and type(connection.ops).adapt_json_value is BaseDatabaseOperations.adapt_json_value
        and not pre_save.has_listeners(Job)
        and not post_save.has_listeners(Job)
    )


def insert_row(job: Job, using: str) -> None:
    """Insert the new ``job`` with one INSERT and leave it as ``save(force_insert=True)`` does.

    ``save()`` compiles its INSERT anew on every call (28 columns), which cost more CPU than
    the server spends on the row. Here the column list is written once per set of columns,
    and each value is prepared as its field would (``get_db_prep_save``; plain strings,
    integers and JSON lists and dicts directly, as their fields send them), then quoted by
    the driver (as its own parameter binding does). Columns whose value is NULL are left out
    (their default is NULL): a plain job writes 16 of the 28. Most values repeat from
    one job to the next (queue, task, options, empty lists): their quoted text is kept per
    connection, but only where it cannot depend on the session (see :func:`_state_free`).
    Check :func:`can_insert_row` first.
    """
    connection = connections[using]
    connection.close_if_health_check_failed()  # as connection.cursor() does first
    connection.ensure_connection()
    texts, left_out = _value_texts(job, connection)
    head = _heads.get(left_out)
    if head is None:
        head = _heads[left_out] = _single_head(connection, left_out)
    # As save() does: a failed INSERT inside atomic() marks the transaction for rollback.
    with transaction.mark_for_rollback_on_error(using):
        pk = _execute_insert(connection, f"{head}{', '.join(texts)})")
    saved(job, pk, using)
    # The generated columns, where the row's values decide them (save() reads them back).
    values = job.__dict__
    values["priority_rank"] = -int(job.priority)
    if job.idempotency_key is None:
        values["active_key"] = None
    if job.flow_key is None:
        values["waiting_key"] = None


def _value_texts(job: Job, connection: Any) -> tuple[list[str], int]:
    """Quote ``job``'s values as the INSERT sends them; return them and the bits of the
    columns left out (NULL), which pick the statement's head (its column list)."""
    raw = connection.connection
    kept: dict[tuple[type, Any], str] | None = getattr(raw, "skipqueue_literals", None)
    if kept is None or len(kept) > LITERALS_KEPT:
        kept = raw.skipqueue_literals = {}
    values = job.__dict__
    texts: list[str] = []
    left_out = 0
    for bit, (field, attname, nullable, plain, repeats) in enumerate(_insert_plan()):
        value = values[attname]
        if value is None and nullable:
            left_out |= 1 << bit
            continue
        if type(value) is plain or (plain is str and isinstance(value, str)):
            prepared = value
        elif plain is JSON_TEXT and type(value) in (list, dict):
            prepared = json.dumps(value)
        else:
            prepared = field.get_db_prep_save(value, connection)
        if not repeats:
            texts.append(_quote(raw, prepared))
            continue
        key = (type(prepared), prepared)
        text = kept.get(key)
        if text is None:
            text = _quote(raw, prepared)
            if _state_free(prepared):
                kept[key] = text
        texts.append(text)
    return texts, left_out


def _execute_insert(connection: Any, sql: str) -> int:
    """Run the INSERT (no parameters: nothing to format); return the new row's id.

    Through Django's cursor while anything watches it (execute wrappers, the query log of
    DEBUG or ``CaptureQueriesContext``); otherwise with the checks and the error translation
    that cursor adds, without building it (a tenth of the enqueue's CPU).
    """
    if connection.execute_wrappers or connection.queries_logged:
        with connection.cursor() as cursor:
            cursor.execute(sql)
            return int(cursor.lastrowid)
    connection.validate_thread_sharing()
    connection.validate_no_broken_transaction()
    with connection.wrap_database_errors:
        # The backend's own cursor: it reports constraint errors as IntegrityError.
        cursor = connection.create_cursor()
        try:
            cursor.execute(sql)
            return int(cursor.lastrowid)
        finally:
            cursor.close()


def _quote(raw: Any, value: Any) -> str:
    """``value`` as an SQL literal, quoted by the driver as its parameter binding does."""
    return raw.literal(value).decode(raw.encoding)


#: Characters whose quoting depends on the session: escaped with a backslash, or (under
#: ``NO_BACKSLASH_ESCAPES``) left as they are; ``'`` is doubled or escaped.
_MODE_DEPENDENT = re.compile(r"['\"\\\x00\n\r\x1a]")


def _state_free(value: Any) -> bool:
    """Whether the quoted text of ``value`` is the same in every session, so may be kept.

    The driver quotes by the session's state: ``NO_BACKSLASH_ESCAPES`` doubles a quote
    where the default mode puts a backslash before it, and a multi-byte character set
    (gbk, cp932) encodes characters whose bytes include a backslash. Text kept from one
    state and sent in another could end its string early: the value would become SQL.
    Integers, booleans and ASCII strings without quotes, backslashes or control characters
    read the same in every mode and every character set a client may use.
    """
    kind = type(value)
    if kind is int or kind is bool:
        return True
    return kind is str and value.isascii() and _MODE_DEPENDENT.search(value) is None


def _insert_plan() -> _Plan:
    global _plan
    if _plan is None:
        _plan = tuple(
            (
                field,
                field.attname,
                field.null and not field.has_db_default(),
                _plain_type(field),
                _repeats(field),
            )
            for field in insert_fields()
        )
    return _plan


#: Columns whose values differ from job to job, or come from the caller's arguments (the
#: keys): their quoted text is not kept.
_VARYING = frozenset(
    {
        "run_after",
        "enqueued_at",
        "args",
        "kwargs",
        "batch_id",
        "trace_context",
        "idempotency_key",
        "flow_key",
    }
)


def _repeats(field: Field[Any, Any]) -> bool:
    """Whether a column's values repeat from job to job: all but times, arguments, ids."""
    return field.attname not in _VARYING


def _plain_type(field: Field[Any, Any]) -> Any:
    """The type of the values a field sends as they are (JSON_TEXT: as JSON text), or None.

    A CharField's ``get_db_prep_save`` returns any str unchanged, an IntegerField's an int
    (``int(value)``) and a BooleanField's a bool, where the backend adapts nothing (MySQL);
    a JSONField without an encoder sends ``json.dumps(value)`` (the base ``adapt_json_value``,
    which :func:`can_insert_row` checks). So long as the field's class keeps those methods.
    """
    methods = ("get_db_prep_save", "get_db_prep_value", "get_prep_value", "to_python")
    if isinstance(field, JSONField):
        same = all(getattr(type(field), name) is getattr(JSONField, name) for name in methods)
        return JSON_TEXT if same and field.encoder is None else None
    for base, kind in ((CharField, str), (IntegerField, int), (BooleanField, bool)):
        if isinstance(field, base):
            same = all(getattr(type(field), name) is getattr(base, name) for name in methods)
            return kind if same else None
    return None


def _single_head(connection: Any, left_out: int) -> str:
    """``INSERT INTO ... (columns) VALUES (`` for every column but those of ``left_out``."""
    quote = connection.ops.quote_name
    columns = [
        quote(field.column)
        for bit, (field, *_) in enumerate(_insert_plan())
        if not left_out & (1 << bit)
    ]
    return f"INSERT INTO {quote(Job._meta.db_table)} ({', '.join(columns)}) VALUES ("


# Many rows, while the next are built: the pipelined bulk INSERT.


def can_send_ahead(using: str) -> bool:
    """Tell whether :class:`SentInsert` may stand in for :func:`insert_rows` on ``using``.

    MySQL and MariaDB only (mysqlclient can send a statement and read its answer later), and
    only while nothing watches Django's cursor (execute wrappers, the query log of DEBUG or
    ``CaptureQueriesContext``), which this goes around.
    """
    connection = connections[using]
    return (
        connection.vendor == "mysql"
        and not connection.execute_wrappers
        and not connection.queries_logged
    )


class SentInsert:
    """One multi-row INSERT of ``jobs`` sent to the server and not yet answered.

    A bulk enqueue spends about as long building a thousand jobs in Python as the server
    spends inserting them: sent this way, the server inserts one chunk while the client
    builds the next (mysqlclient's ``send_query``, then ``read_query_result``). One statement
    at a time is in flight on the connection: call :meth:`finish` (or :meth:`discard`, on an
    error) before anything else uses it. Errors are translated as Django's cursor does.
    """

    def __init__(self, jobs: Sequence[Job], using: str) -> None:
        connection = connections[using]
        self.jobs, self.using, self.connection = jobs, using, connection
        self.returning = connection.features.can_return_rows_from_bulk_insert
        self.step = 1 if self.returning else _auto_increment_increment(connection)
        # More than one only past max_allowed_packet: the later parts go out in finish().
        self.parts = insert_statements(jobs, connection)
        connection.validate_thread_sharing()
        connection.validate_no_broken_transaction()
        with _database_errors(connection):
            connection.connection.send_query(self._query(self.parts[0]))

    def _query(self, part: Part) -> bytes:
        _, sql, params = part
        raw = self.connection.connection
        query = (sql + (" RETURNING `id`" if self.returning else "")).encode(raw.encoding)
        return query % tuple(raw.literal(value) for value in params)

    def finish(self) -> Sequence[Job]:
        """Wait for the server's answer; give each job its primary key and return them."""
        raw = self.connection.connection
        ids: list[int] = []
        with _database_errors(self.connection):
            for index, part in enumerate(self.parts):
                if index:  # one statement in flight at a time
                    raw.send_query(self._query(part))
                raw.read_query_result()
                if self.returning:
                    ids += [row[0] for row in raw.store_result().fetch_row(0)]
                else:
                    first = raw.insert_id()
                    ids += [first + offset * self.step for offset in range(len(part[0]))]
        for job, pk in zip(self.jobs, ids, strict=True):
            saved(job, pk, self.using)
        return self.jobs

    def discard(self) -> None:
        """Read the answer and drop it (after an error elsewhere: the transaction rolls back)."""
        try:
            raw = self.connection.connection
            raw.read_query_result()
            if self.returning:
                raw.store_result()
        except Exception:  # the error that made us discard is the one to raise
            pass


@contextmanager
def _database_errors(connection: Any) -> Iterator[None]:
    """Django's errors for the driver's, as the MySQL backend's cursor reports them."""
    import MySQLdb
    from django.db.backends.mysql.base import CursorWrapper

    with connection.wrap_database_errors:
        try:
            yield
        except MySQLdb.OperationalError as error:
            if error.args and error.args[0] in CursorWrapper.codes_for_integrityerror:
                raise MySQLdb.IntegrityError(*error.args) from error
            raise


def _auto_increment_increment(connection: Any) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@auto_increment_increment")
        return int(cursor.fetchone()[0])
