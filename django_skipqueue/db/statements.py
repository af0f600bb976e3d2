"""Statements written with the ORM, compiled once, then run with fresh parameters.

A claim or a batched completion is the same SQL every time; only its parameters change.
Building and compiling the querysets cost far more CPU than the database spent running them
(about 2 ms per claimed no-op job, ten times the raw SQL). Each statement is still built by the
ORM, so it stays correct on every backend, but only once per thread, database alias and shape.
Placeholder values mark the parameters to fill in at run time. They run through
``roundtrips.py`` (in one round trip where the driver allows), inside the short transactions of
``transactions.py``; both are importable from here too, as they were.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import JSONField, Model, QuerySet
from django.db.models.base import ModelState
from django.db.models.expressions import Col
from django.db.models.fields.related_descriptors import ForeignKeyDeferredAttribute
from django.db.models.query_utils import DeferredAttribute
from django.db.models.signals import post_init, pre_init
from django.db.models.sql import UpdateQuery
from django.db.models.sql.compiler import SQLCompiler

from django_skipqueue.db.roundtrips import Deferred, Run, _local, defer, round_trip, run_together
from django_skipqueue.db.transactions import (
    MYSQL_RETRYABLE,
    POSTGRES_RETRYABLE,
    dropped_by_server,
    is_retryable,
    retry_whole_transaction,
    short_transaction,
)

__all__ = [
    "MYSQL_RETRYABLE",
    "POSTGRES_RETRYABLE",
    "Deferred",
    "Run",
    "defer",
    "dropped_by_server",
    "is_retryable",
    "retry_whole_transaction",
    "round_trip",
    "run_together",
    "short_transaction",
]

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
    #: Instances can be built without ``Model.__init__`` (see :func:`as_models`).
    plain: bool = False

    @classmethod
    def of(cls, compiler: SQLCompiler) -> RowReader:
        columns = [column for column, _, _ in compiler.select[: compiler.col_count]]
        names = tuple(column.target.attname for column in columns)
        converters = {
            position: ([_plain_json(convert, expression) for convert in converts], expression)
            for position, (converts, expression) in compiler.get_converters(columns).items()
        }
        return cls(compiler, names, converters, _plain_model(compiler.query.model, names))

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


#: Sizes of the id lists a statement is compiled for: each batch is padded up to the next.
#: Compiling one costs a few milliseconds, more than a hundred claimed no-op jobs' share of
#: the claim; with a prefetch of up to 64 jobs, a statement per batch size was compiled some
#: 70 times per process and statement.
SMALL_SIZES = (1, 2, 4, 8)
#: Beyond the small sizes, lists grow by this many entries.
SIZE_STEP = 8


def padded_size(count: int) -> int:
    """The list size a statement for ``count`` entries is compiled for (``count`` or more)."""
    if count < 1:
        raise ValueError("A statement is compiled for one entry or more.")
    for size in SMALL_SIZES:
        if count <= size:
            return size
    return -(-count // SIZE_STEP) * SIZE_STEP


def padded[T](values: Sequence[T], size: int) -> list[T]:
    """``values`` padded to ``size`` with repeats of its last entry.

    A repeated key changes nothing in ``id IN (...)`` nor in an OR of per-row fences: the
    row matches once, and an UPDATE counts it once.
    """
    return [*values, *[values[-1]] * (size - len(values))]


#: The LIMIT a statement is compiled with where its limit becomes a parameter.
LIMIT_MARKER = 1_999_999_937


def limit_as_parameter(statement: Statement, index: int) -> Statement:
    """Turn a statement compiled with ``LIMIT LIMIT_MARKER`` into one whose limit is a slot.

    Django writes the LIMIT into the SQL text; one statement for every limit saves compiling
    one per limit. The LIMIT comes after every other parameter (only FOR UPDATE follows it).
    """
    literal = f"LIMIT {LIMIT_MARKER}"
    head, found, tail = statement.sql.partition(literal)
    if not found or literal in tail or "%s" in tail:
        raise AssertionError(f"No single trailing {literal} in {statement.sql!r}.")
    return Statement(
        f"{head}LIMIT %s{tail}",
        (*statement.params, LIMIT_MARKER),
        (*statement.slots, Slot(index)),
        statement.reader,
    )


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
    (count,) = run_together(using, [Run(statement, values)])
    return int(count)


def fetch_values(using: str, statement: Statement, values: Sequence[Any]) -> list[Any]:
    """Run a compiled one-column SELECT; return the column's raw values."""
    (rows,) = run_together(using, [Run(statement, values, rows=True)])
    return [row[0] for row in rows]


def fetch_models[M: Model](
    model: type[M], using: str, statement: Statement, values: Sequence[Any]
) -> list[M]:
    """Run a compiled model SELECT; return model instances as the ORM would build them."""
    (rows,) = run_together(using, [Run(statement, values, rows=True)])
    return as_models(model, using, statement, rows)


def as_models[M: Model](
    model: type[M], using: str, statement: Statement, rows: Sequence[Sequence[Any]]
) -> list[M]:
    """Turn the rows of a compiled model SELECT into instances, as the ORM would.

    ``Model.__init__`` sets each field through ``setattr`` and sends ``pre_init`` and
    ``post_init``: about a fifth of a claim's CPU for a claimed no-op job. Where nobody
    listens to those signals and every column is a plain field (no descriptor that does
    more than store the value), an instance gets the very same attributes and state
    directly, as ``Model.from_db`` leaves them.
    """
    reader = statement.reader
    assert reader is not None
    converted = reader.convert(rows)
    if not reader.plain or pre_init.has_listeners(model) or post_init.has_listeners(model):
        return [model.from_db(using, reader.names, row) for row in converted]
    names = reader.names
    built = []
    for row in converted:
        instance = model.__new__(model)
        state = ModelState()
        state.adding = False
        state.db = using
        values = dict(zip(names, row, strict=True))
        instance.__dict__ = {"_state": state, **values}
        built.append(instance)
    return built


#: Descriptors of concrete fields that only store the value set in the instance's __dict__
#: (a foreign key's also forgets a cached related object, which a new instance has none of).
_PLAIN_DESCRIPTORS = (DeferredAttribute, ForeignKeyDeferredAttribute)


def _plain_model(model: type[Model] | None, names: Sequence[str]) -> bool:
    """Tell whether instances of ``model`` with the columns ``names`` can skip __init__.

    Only for a model that keeps Django's ``from_db`` and ``__init__``, whose selected
    columns are distinct concrete fields, each behind one of Django's plain descriptors.
    """
    if model is None or model._meta.abstract:
        return False
    if model.from_db.__func__ is not Model.from_db.__func__:  # type: ignore[attr-defined]
        return False
    if model.__init__ is not Model.__init__ or model.__new__ is not Model.__new__:
        return False
    fields = {field.attname for field in model._meta.concrete_fields}
    if len(set(names)) != len(names) or not set(names) <= fields:
        return False
    return all(type(getattr(model, name, None)) in _PLAIN_DESCRIPTORS for name in names)


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
