"""How the package's statements reach the server: in short transactions, retried whole, and
on the hot path compiled once.

Transactions. On MySQL, ``transaction.atomic()`` turns autocommit off before the transaction and
on again after it: two more statements for the server and two more round trips per claim, more
than the claim's own locking read costs. Outside any atomic block, START TRANSACTION ... COMMIT
is the same transaction without them (:func:`short_transaction`). Django is told that the
connection is in a transaction it does not manage, so ``atomic()`` inside the block is a
savepoint, as it would be inside ``atomic()``, and nothing commits before the block ends. A
transaction the database aborted for a deadlock or a lock-wait timeout is run again whole
(:func:`retry_whole_transaction`).

Statements, written with the ORM, compiled once, then run with fresh parameters. A claim or a
batched completion is the same SQL every time; only its parameters change. Building and
compiling the querysets cost far more CPU than the database spent running them (about 2 ms
per claimed no-op job, ten times the raw SQL). Each statement is still built by the ORM, so it
stays correct on every backend, but only once per thread, database alias and shape.
Placeholder values mark the parameters to fill in at run time.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, connections, transaction
from django.db.models import JSONField, Model, QuerySet
from django.db.models.expressions import Col
from django.db.models.sql import UpdateQuery
from django.db.models.sql.compiler import SQLCompiler

logger = logging.getLogger("django_skipqueue.shorttxn")

# Short transactions, retried whole.


@contextmanager
def short_transaction(using: str, *, savepoint: bool = True) -> Iterator[None]:
    """Run the block in one transaction; ``transaction.atomic()`` wherever it is not MySQL.

    Also falls back to ``atomic(savepoint=savepoint)`` inside the caller's transaction and
    when autocommit is off, so nesting behaves exactly as Django documents.
    """
    connection = connections[using]
    if connection.vendor != "mysql" or connection.in_atomic_block:
        with transaction.atomic(using=using, savepoint=savepoint):
            yield
        return
    connection.ensure_connection()
    if not connection.get_autocommit():
        with transaction.atomic(using=using, savepoint=savepoint):
            yield
        return
    with connection.cursor() as cursor:
        cursor.execute("START TRANSACTION")
        # Django now sees a transaction it does not manage: atomic() inside the block makes a
        # savepoint and never commits, and FOR UPDATE compiles. Only the flag changes here.
        connection.autocommit = False
        try:
            yield
        except BaseException:
            connection.autocommit = True
            _rollback(cursor)
            raise
        connection.autocommit = True
        cursor.execute("COMMIT")


def _rollback(cursor: object) -> None:
    """Roll back after an error; a broken connection has nothing left to roll back."""
    try:
        cursor.execute("ROLLBACK")  # type: ignore[attr-defined]
    except DatabaseError:
        logger.debug("rollback after an error failed; the connection is gone", exc_info=True)


#: MySQL/MariaDB: 1213 deadlock (whole transaction rolled back), 1205 lock wait timeout.
MYSQL_RETRYABLE = frozenset({1205, 1213})
#: PostgreSQL: serialization failure and deadlock detected.
POSTGRES_RETRYABLE = frozenset({"40001", "40P01"})


def is_retryable(error: BaseException) -> bool:
    """Tell whether ``error`` means "run the whole transaction again"."""
    cause = error.__cause__ or error
    args = getattr(cause, "args", ())
    if args and args[0] in MYSQL_RETRYABLE:
        return True
    return getattr(cause, "sqlstate", None) in POSTGRES_RETRYABLE


def retry_whole_transaction[T](using: str, work: Callable[[], T], *, attempts: int = 5) -> T:
    """Run ``work`` (one complete transaction) again after a deadlock or lock-wait timeout.

    Inside a caller's atomic block only part of a transaction would be retried, and 1205
    rolls back just the statement, so there the error is raised for the caller to handle.
    """
    if connections[using].in_atomic_block:
        return work()
    for attempt in range(1, attempts + 1):
        try:
            return work()
        except DatabaseError as error:
            if attempt == attempts or not is_retryable(error):
                raise
            time.sleep(random.uniform(0, 0.01 * 2**attempt))
    raise AssertionError("unreachable")


# Statements compiled once.

_local = threading.local()
#: Integer placeholders are positive and fit a 32-bit signed column: Django drops a lookup
#: whose value lies outside the field's range (EmptyResultSet) before it reaches SQL.
_INT_BASE = 2_000_000_000
_FLOAT_BASE = -(10.0**15)


def slot_int(index: int) -> int:
    """A placeholder for an integer parameter (a primary key, an attempt number)."""
    return _INT_BASE + index


def slot_str(index: int) -> str:
    """A placeholder for a string parameter (an owner, a queue name)."""
    return f"\x00skipqueue-slot-{index}"


def slot_float(index: int) -> float:
    """A placeholder for a float parameter (a lease length)."""
    return _FLOAT_BASE - index - 0.5


def slot_json(index: int) -> str:
    """A placeholder for a value sent as JSON text (wrap it in ``Cast(..., JSONField())``)."""
    return f"\x00skipqueue-json-{index}"


@dataclass(frozen=True, slots=True)
class Slot:
    """Where a run-time value goes: its index, whether it is sent as JSON, its wrapper type."""

    index: int
    as_json: bool = False
    wrap: Callable[[Any], Any] | None = None

    def value(self, values: Sequence[Any]) -> Any:
        value = values[self.index]
        if self.as_json:
            return _as_json(value)
        return value if self.wrap is None or value is None else self.wrap(value)


@dataclass(frozen=True, slots=True)
class RowReader:
    """How a model SELECT's rows become instances: its columns and their converters.

    Worked out once with the statement: ``results_iter()`` asks every selected field for its
    converters on each call, which cost as much CPU as converting a claimed batch's rows.
    """

    compiler: SQLCompiler
    #: The attribute name of each selected column, in order (what ``Model.from_db`` takes).
    names: tuple[str, ...]
    #: Column position -> (converters, expression), as ``SQLCompiler.get_converters`` returns.
    converters: dict[int, tuple[list[Any], Any]]

    @classmethod
    def of(cls, compiler: SQLCompiler) -> RowReader:
        columns = [column for column, _, _ in compiler.select[: compiler.col_count]]
        names = tuple(column.target.attname for column in columns)
        converters = {
            position: ([_plain_json(convert, expression) for convert in converts], expression)
            for position, (converts, expression) in compiler.get_converters(columns).items()
        }
        return cls(compiler, names, converters)

    def convert(self, rows: Iterable[Sequence[Any]]) -> Iterable[Sequence[Any]]:
        """Convert database values to Python values the way the ORM would."""
        return self.compiler.apply_converters(rows, self.converters) if self.converters else rows


#: JSON texts decoded without the parser: a claimed job's errors, worker ids and kwargs are
#: mostly empty. Each read makes a fresh list or dict, as ``json.loads`` does.
_EMPTY_JSON: dict[str, Callable[[], Any]] = {"[]": list, "{}": dict}


def _plain_json(convert: Callable[..., Any], expression: Any) -> Callable[..., Any]:
    """Return ``convert``, or a quicker equal of it for a JSON column with the default decoder.

    ``JSONField.from_db_value`` parses ``[]`` and ``{}`` like any other text, about 2 us a
    column; a claimed job has four JSON columns that are mostly empty.
    """
    field = getattr(convert, "__self__", None)
    plain = getattr(convert, "__func__", None) is JSONField.from_db_value
    if plain and isinstance(expression, Col) and getattr(field, "decoder", None) is None:
        return _json_from_db
    return convert


def _json_from_db(value: Any, expression: Any, connection: Any) -> Any:
    """``JSONField.from_db_value`` for a column (not a key transform) and no custom decoder."""
    if value is None:
        return None
    if type(value) is str:
        empty = _EMPTY_JSON.get(value)
        if empty is not None:
            return empty()
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


@dataclass(frozen=True, slots=True)
class Statement:
    """Compiled SQL and, for each of its parameters, a constant or a slot to fill."""

    sql: str
    params: tuple[Any, ...]
    #: Per parameter: None (keep the compiled constant) or the slot it stands for.
    slots: tuple[Slot | None, ...]
    #: For a model SELECT: how to turn its rows into instances.
    reader: RowReader | None = None

    def bind(self, values: Sequence[Any]) -> list[Any]:
        """Return the parameters with every slot replaced by its value."""
        return [
            constant if slot is None else slot.value(values)
            for constant, slot in zip(self.params, self.slots, strict=True)
        ]


def cached(using: str, key: Hashable, build: Callable[[], Statement]) -> Statement:
    """Return this thread's compiled statement for ``(using, key)``, building it once."""
    store: dict[Hashable, Statement] = _local.__dict__.setdefault("statements", {})
    statement = store.get((using, key))
    if statement is None:
        statement = store[(using, key)] = build()
    return statement


def compile_select(queryset: QuerySet[Any, Any], slot_count: int) -> Statement:
    """Compile a SELECT; its rows can then be converted with :func:`fetch_models`."""
    compiler = queryset.query.get_compiler(queryset.db)
    sql, params = compiler.as_sql()
    return Statement(sql, tuple(params), _find_slots(params, slot_count), RowReader.of(compiler))


def compile_update(
    queryset: QuerySet[Any, Any],
    fields: dict[str, Any],
    slot_count: int,
    *,
    unused: Iterable[int] = (),
) -> Statement:
    """Compile ``queryset.update(**fields)`` without running it (``unused``: slots it skips)."""
    query: UpdateQuery = queryset.query.chain(UpdateQuery)  # type: ignore[assignment]
    query.add_update_values(fields)
    query.annotations = {}
    sql, params = query.get_compiler(queryset.db).as_sql()
    return Statement(sql, tuple(params), _find_slots(params, slot_count, set(unused)))


def execute(using: str, statement: Statement, values: Sequence[Any]) -> int:
    """Run a compiled UPDATE; return the rows it matched (MySQL: CLIENT.FOUND_ROWS)."""
    with connections[using].cursor() as cursor:
        cursor.execute(statement.sql, statement.bind(values))
        return cursor.rowcount


def fetch_values(using: str, statement: Statement, values: Sequence[Any]) -> list[Any]:
    """Run a compiled one-column SELECT; return the column's raw values."""
    with connections[using].cursor() as cursor:
        cursor.execute(statement.sql, statement.bind(values))
        return [row[0] for row in cursor.fetchall()]


def fetch_models[M: Model](
    model: type[M], using: str, statement: Statement, values: Sequence[Any]
) -> list[M]:
    """Run a compiled model SELECT; return model instances as the ORM would build them."""
    reader = statement.reader
    assert reader is not None
    with connections[using].cursor() as cursor:
        cursor.execute(statement.sql, statement.bind(values))
        rows = cursor.fetchall()
    return [model.from_db(using, reader.names, row) for row in reader.convert(rows)]


def _find_slots(
    params: Sequence[Any], slot_count: int, unused: set[int] | None = None
) -> tuple[Slot | None, ...]:
    markers: dict[tuple[type, Any], Slot] = {}
    for index in range(slot_count):
        for marker in (slot_int(index), slot_str(index), slot_float(index)):
            markers[(type(marker), marker)] = Slot(index)
        markers[(str, slot_json(index))] = Slot(index, as_json=True)
    found = tuple(_match(markers, param) for param in params)
    missing = set(range(slot_count)) - {slot.index for slot in found if slot is not None}
    missing -= unused or set()
    if missing:
        raise AssertionError(f"Slots {sorted(missing)} not found in the compiled parameters.")
    return found


def _match(markers: dict[tuple[type, Any], Slot], param: Any) -> Slot | None:
    """Find the slot a compiled parameter stands for, seeing through int wrappers.

    psycopg 3 parameters of integer columns come wrapped (``Int4(7)``): the slot keeps the
    wrapper so the bound value is sent with the same type.
    """
    for base in (str, float, int):
        if isinstance(param, base) and not isinstance(param, bool):
            slot = markers.get((base, base(param)))
            if slot is not None and type(param) is not base:
                return Slot(slot.index, slot.as_json, type(param))
            return slot
    return None


def _as_json(value: Any) -> str | None:
    """Encode a JSONField value as the field itself would (None stays SQL NULL)."""
    return None if value is None else json.dumps(value)
