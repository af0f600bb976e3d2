"""Retry whole transactions that the database aborted for deadlock or lock-wait timeout."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from django.db import DatabaseError, connections

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
