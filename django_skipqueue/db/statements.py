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

Round trips. Each statement waits for the server's answer: over a link with a 20 ms round trip,
a claim of six statements costs 120 ms whatever the server does. Two ways to send fewer waits,
where the client library can (mysqlclient on MariaDB Connector/C or libmysqlclient, which send
a statement before the answer to the previous one is read):

- START TRANSACTION is not sent when the block begins but with the block's first statement, in
  one round trip (the transaction is the same: InnoDB takes its first snapshot at the first
  read either way). A statement Django sends itself (the ORM, a savepoint) sends it first.
- :func:`run_together` sends statements that do not depend on each other's answers (the
  claim's UPDATE and the read of the rows it marked) in one round trip, then reads every
  answer in order. If one fails, the others' answers are still read (the connection stays in
  step) and the first error is raised; the caller's transaction then rolls back as before.
  Statements after a failed one still ran, so only statements whose effects the rollback
  undoes are sent together, never a COMMIT.

Elsewhere (PostgreSQL, SQLite, another MySQL driver) the same statements run one by one.

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
import select
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, connections, transaction
from django.db.models import JSONField, Model, QuerySet
from django.db.models.base import ModelState
from django.db.models.expressions import Col
from django.db.models.fields.related_descriptors import ForeignKeyDeferredAttribute
from django.db.models.query_utils import DeferredAttribute
from django.db.models.signals import post_init, pre_init
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
    if not _can_pipeline(connection):
        with connection.cursor() as cursor:
            cursor.execute("START TRANSACTION")
            with _managed_by_us(connection, cursor):
                yield
        return
    # START TRANSACTION goes out with the block's first statement (see the module docstring).
    pending = _Pending(connection)
    with connection.execute_wrapper(pending.before_django_statement):
        connection.skipqueue_pending = pending  # type: ignore[attr-defined]
        try:
            with connection.cursor() as cursor, _managed_by_us(connection, cursor, pending):
                yield
        finally:
            connection.skipqueue_pending = None  # type: ignore[attr-defined]


@contextmanager
def _managed_by_us(
    connection: Any, cursor: Any, pending: _Pending | None = None
) -> Iterator[None]:
    """Run the block as a transaction Django does not manage; COMMIT, or ROLLBACK on error.

    Django then sees a transaction it does not manage: atomic() inside the block makes a
    savepoint and never commits, and FOR UPDATE compiles. Only the flag changes here. A
    block that sent no statement (its START TRANSACTION still pending) has nothing to end;
    statements deferred to the next round trip go out, and are answered, before the COMMIT.
    """
    connection.autocommit = False
    try:
        yield
        if pending is not None:
            pending.flush()
    except BaseException:
        connection.autocommit = True
        _forget_unclosed_atomic(connection)
        # An atomic block inside that failed (a claim's) marked the transaction for a
        # rollback: this one. Left set, the retry's first query would be refused.
        connection.needs_rollback = False
        if pending is None or pending.begun:
            _rollback(cursor)
        raise
    connection.autocommit = True
    if pending is None or pending.begun:
        cursor.execute("COMMIT")


def _forget_unclosed_atomic(connection: Any) -> None:
    """Drop the state of an ``atomic()`` that the failed block entered and never left.

    The block began outside any atomic block (short_transaction checks), so one still open
    here was left by ``Atomic.__enter__`` itself: its SAVEPOINT failed on a connection the
    server had dropped, after Django had marked the block begun, and ``__exit__`` never ran.
    Left so, every later query of the thread would fail with TransactionManagementError (a
    worker would stop instead of reconnecting). The transaction is rolled back or gone.
    """
    if connection.in_atomic_block:
        connection.in_atomic_block = False
        connection.savepoint_ids = []
        connection.needs_rollback = False
        connection.commit_on_exit = True
        connection.closed_in_transaction = False


class _Pending:
    """What a short transaction has not sent yet: its START TRANSACTION, deferred statements."""

    __slots__ = ("begun", "connection", "deferred")

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.begun = False
        self.deferred: list[Deferred] = []

    def take(self) -> list[str | Deferred]:
        """What goes out ahead of the next statement (START TRANSACTION the first time)."""
        ahead: list[str | Deferred] = [] if self.begun else ["START TRANSACTION"]
        ahead += self.deferred
        self.begun, self.deferred = True, []
        return ahead

    def flush(self, *, begin: bool = False) -> None:
        """Send the deferred statements now (and START TRANSACTION, if ``begin``): a round
        trip, if anything is to be sent."""
        if self.deferred or (begin and not self.begun):
            _pipelined(self.connection, self.take())

    def before_django_statement(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        """Django's execute wrapper: a statement of the ORM's sends what is pending first."""
        self.flush(begin=True)
        return execute(sql, params, many, context)


@dataclass(slots=True)
class Deferred:
    """A compiled statement that goes out with the transaction's next round trip.

    ``result()`` returns its answer (its rows, or the rows an UPDATE matched); asked before
    the statement went out, it sends it at once.
    """

    run: Run
    connection: Any
    answer: Any = None
    error: BaseException | None = None
    sent: bool = False

    def result(self) -> Any:
        if not self.sent:
            pending: _Pending | None = getattr(self.connection, "skipqueue_pending", None)
            assert pending is not None, "a deferred statement outlived its transaction"
            pending.flush()
        if self.error is not None:
            with self.connection.wrap_database_errors:
                raise self.error
        return self.answer


def _can_pipeline(connection: Any) -> bool:
    """Tell whether ``connection`` (connected) can send statements before reading answers."""
    if connection.vendor != "mysql":
        return False
    raw = connection.connection
    return hasattr(raw, "send_query") and hasattr(raw, "read_query_result")


def _rollback(cursor: object) -> None:
    """Roll back after an error; a broken connection has nothing left to roll back."""
    try:
        cursor.execute("ROLLBACK")  # type: ignore[attr-defined]
    except DatabaseError:
        logger.debug("rollback after an error failed; the connection is gone", exc_info=True)


def dropped_by_server(connection: Any) -> bool:
    """Tell whether the server has dropped an idle, open connection, without a round trip.

    Between statements the server sends nothing unasked: if the socket has something to read
    (the error packet of a ``KILL``, the end of a connection that ``wait_timeout`` or a
    restart closed), the connection is dead. One ``poll()`` of the socket instead of a ping
    that waits a round trip (20 ms on a slow link, per job). Drivers without a socket to
    look at (other databases) are asked with Django's ``is_usable()``, a query.
    """
    raw = connection.connection
    fileno = getattr(raw, "fileno", None) if connection.vendor == "mysql" else None
    if fileno is None:
        return not connection.is_usable()
    try:
        poller = select.poll()
        poller.register(fileno(), select.POLLIN | select.POLLPRI)
        return bool(poller.poll(0))
    except (OSError, ValueError, raw.Error):
        return True


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

    Inside a caller's transaction only part of it would be retried, so there the error is
    raised for the caller's own retry. That is an atomic block, or a :func:`short_transaction`,
    which Django sees as autocommit turned off. A deadlock has rolled back the whole of it:
    run again alone, ``work`` would commit statement by statement (the server left the
    transaction) and the caller's block would go on as if its earlier writes had held. A
    1205 rolls back just the statement.
    """
    connection = connections[using]
    if connection.in_atomic_block or not connection.get_autocommit():
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


@dataclass(frozen=True, slots=True)
class Run:
    """One compiled statement to run with ``values``: its rows if ``rows``, else its count."""

    statement: Statement
    values: Sequence[Any]
    rows: bool = False


def run_together(using: str, runs: Sequence[Run]) -> list[Any]:
    """Run compiled statements in order, in one round trip where the driver allows.

    Returns, per statement, its rows (a list of tuples) or the rows an UPDATE matched. Send
    together only statements whose parameters do not depend on each other's answers; what
    the transaction has pending (its START TRANSACTION, deferred statements: see
    :func:`short_transaction` and :func:`defer`) goes out ahead of them.
    """
    connection = connections[using]
    connection.ensure_connection()
    pending: _Pending | None = getattr(connection, "skipqueue_pending", None)
    if not _can_pipeline(connection) or (pending is None and len(runs) == 1):
        return [_run_one(connection, run) for run in runs]
    ahead = pending.take() if pending is not None else []
    answers = _pipelined(connection, [*ahead, *runs])
    return answers[len(ahead) :]


def defer(using: str, run: Run) -> Deferred:
    """Queue ``run`` to go out with the transaction's next round trip; see :class:`Deferred`.

    Inside a :func:`short_transaction` on a driver that pipelines: an UPDATE whose answer the
    caller can wait for (a batch of completions, sent with the claim's locking read). Elsewhere
    the statement runs at once.
    """
    connection = connections[using]
    pending: _Pending | None = getattr(connection, "skipqueue_pending", None)
    deferred = Deferred(run, connection)
    if pending is None:
        deferred.answer, deferred.sent = _run_one(connection, run), True
    else:
        pending.deferred.append(deferred)
    return deferred


def _run_one(connection: Any, run: Run) -> Any:
    with connection.cursor() as cursor:
        cursor.execute(run.statement.sql, run.statement.bind(run.values))
        return list(cursor.fetchall()) if run.rows else cursor.rowcount


def _pipelined(connection: Any, items: Sequence[str | Run | Deferred]) -> list[Any]:
    """Send ``items`` without waiting, then read every answer in order; return the answers.

    A plain string is a statement without parameters whose answer nobody needs (None in the
    answers); a deferred statement gets its answer (or its error) as well.
    """
    raw = connection.connection
    with connection.wrap_database_errors:
        cursor = raw.cursor()
        try:
            texts = [_text(cursor, item) for item in items]
        finally:
            cursor.close()
        payloads = [text.encode(raw.encoding) for text in texts]
        _refuse_too_large(connection, raw, payloads)
        began = time.monotonic()
        for payload in payloads:
            raw.send_query(payload)
        answered = False
        for item in items:
            if isinstance(item, Deferred):
                item.sent = True
        answers: list[Any] = []
        error: BaseException | None = None
        for item in items:
            answer: Any = None
            try:
                raw.read_query_result()
                if not answered:
                    answered = True
                    _note_round_trip(connection.alias, time.monotonic() - began)
                result = raw.store_result()
                run = item.run if isinstance(item, Deferred) else item
                if isinstance(run, Run):
                    rows = run.rows
                    answer = (list(result.fetch_row(0)) if result else []) if rows else None
                    answer = raw.affected_rows() if not rows else answer
            except raw.Error as failed:
                if not _answered(failed):
                    if error is not None:  # an answer (1153: too large) ended the connection
                        raise error from failed
                    raise  # the connection is broken: nothing more to read
                error = error or failed
                if isinstance(item, Deferred):
                    item.error = failed
            if isinstance(item, Deferred):
                item.answer = answer
            answers.append(answer)
        _log_queries(connection, texts, began)
        if error is not None:
            raise error
    return answers


#: The client library's error of a packet larger than max_allowed_packet (CR_NET_PACKET_TOO_LARGE).
PACKET_TOO_LARGE = 2020


def _refuse_too_large(connection: Any, raw: Any, payloads: Sequence[bytes]) -> None:
    """Refuse, before sending anything, a statement larger than the server's packet limit.

    The server would answer it by closing the connection, and the client would see a server
    that went away (2006) for what is a statement too large: the worker took that for an
    outage and sent the same batch again forever. ``skipqueue_max_packet`` is the session's
    max_allowed_packet, set where it was read (worker/heartbeat.py, through db/packets.py);
    not set, nothing is checked.
    """
    limit = getattr(connection, "skipqueue_max_packet", None)
    if limit is None:
        return
    for payload in payloads:
        if len(payload) >= limit:  # the packet is the statement and one byte more
            raise raw.OperationalError(
                PACKET_TOO_LARGE,
                f"A statement of {len(payload):,} bytes is larger than the server's "
                f"max_allowed_packet ({limit:,}); nothing was sent.",
            )


#: Round trips kept per thread and database alias to estimate the link's round-trip time.
ROUND_TRIPS_KEPT = 32


def round_trip(using: str) -> float | None:
    """The round-trip time to ``using``'s server, in seconds, as this thread measured it.

    The shortest of the last ROUND_TRIPS_KEPT pipelined sends until their first answer: the
    shortest is the one the server and the machine's load delayed least, so it is the link's
    share. None before any (or where statements are not pipelined).
    """
    kept = _local.__dict__.get("round_trips", {}).get(using)
    return min(kept) if kept else None


def _note_round_trip(using: str, seconds: float) -> None:
    trips: dict[str, deque[float]] = _local.__dict__.setdefault("round_trips", {})
    kept = trips.get(using)
    if kept is None:
        kept = trips[using] = deque(maxlen=ROUND_TRIPS_KEPT)
    kept.append(seconds)


def _text(cursor: Any, item: str | Run | Deferred) -> str:
    if isinstance(item, str):
        return item
    run = item.run if isinstance(item, Deferred) else item
    return str(cursor.mogrify(run.statement.sql, run.statement.bind(run.values)))


def _log_queries(connection: Any, texts: Sequence[str], began: float) -> None:
    """Add statements sent outside Django's cursor to its query log, when it keeps one."""
    if connection.queries_logged:
        seconds = f"{(time.monotonic() - began) / max(len(texts), 1):.3f}"
        for text in texts:
            connection.queries_log.append({"sql": text, "time": seconds})


def _answered(error: BaseException) -> bool:
    """Tell whether the server answered with this error (the next answers can still be read).

    Client errors (2000 to 2999: lost connection, timeouts, out of sync) leave nothing to read.
    """
    code = error.args[0] if error.args else 0
    return not (isinstance(code, int) and 2000 <= code < 3000)


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
