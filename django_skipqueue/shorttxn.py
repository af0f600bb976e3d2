"""Short transactions for the hot path, without Django's autocommit round trips on MySQL.

On MySQL, ``transaction.atomic()`` turns autocommit off before the transaction and on again
after it: two more statements for the server and two more round trips per claim, more than
the claim's own locking read costs. Outside any atomic block, START TRANSACTION ... COMMIT
is the same transaction without them. Django is told that the connection is in a transaction
it does not manage, so ``atomic()`` inside the block is a savepoint, as it would be inside
``atomic()``, and nothing commits before the block ends.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import DatabaseError, connections, transaction

logger = logging.getLogger(__name__)


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
