"""Short transactions, retried whole.

On MySQL, ``transaction.atomic()`` turns autocommit off before the transaction and on again
after it: two more statements for the server and two more round trips per claim, more than the
claim's own locking read costs. Outside any atomic block, START TRANSACTION ... COMMIT is the
same transaction without them (:func:`short_transaction`), its START TRANSACTION sent with its
first statement where the driver pipelines (``roundtrips.py``). Django is told that the
connection is in a transaction it does not manage, so ``atomic()`` inside the block is a
savepoint, as it would be inside ``atomic()``, and nothing commits before the block ends. A
transaction the database aborted for a deadlock or a lock-wait timeout is run again whole
(:func:`retry_whole_transaction`).
"""

from __future__ import annotations

import logging
import random
import select
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import DatabaseError, connections, transaction

from django_skipqueue.db.roundtrips import Deferred, can_pipeline, send_pipelined

logger = logging.getLogger("django_skipqueue.shorttxn")


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
    if not can_pipeline(connection):
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
            send_pipelined(self.connection, self.take())

    def before_django_statement(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        """Django's execute wrapper: a statement of the ORM's sends what is pending first."""
        self.flush(begin=True)
        return execute(sql, params, many, context)


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
