"""Short transactions for the hot path, without Django's autocommit round trips on MySQL.

On MySQL, ``transaction.atomic()`` turns autocommit off before the transaction and on again
after it: two more statements for the server and two more round trips per claim, more than
the claim's own locking read costs. Outside any atomic block, START TRANSACTION ... COMMIT
is the same transaction without them. Django is told that the connection is in a transaction
it does not manage, so ``atomic()`` inside the block is a savepoint, as it would be inside
``atomic()``, and nothing commits before the block ends.

A transaction the database aborted for a deadlock or a lock-wait timeout is run again whole
(``retry_whole_transaction``).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.db import DatabaseError, connections, transaction

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
