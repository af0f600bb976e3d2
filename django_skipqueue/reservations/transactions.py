"""The one way pool transactions run: READ COMMITTED, short, retried whole on deadlock.

Lock order, on every path: pools, then reservations, then units, then the ledger. A path may
write again a row it already locked (reserve fills in its new reservation's unit numbers after
the claim) but never waits for a lock on an earlier table while it holds a later one.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import connections

from django_skipqueue.apps import require_installed
from django_skipqueue.conf import get_settings
from django_skipqueue.db.statements import retry_whole_transaction, short_transaction


def pool_database() -> str:
    """Return the database alias of the pools (``SKIPQUEUE_RESERVATION_DATABASE``).

    Every call of the API asks it first, before any statement: it refuses the call when the
    app is not installed (AppNotInstalled, which says what to add).
    """
    require_installed("django_skipqueue.reservations", "The reservation API")
    return get_settings().RESERVATION_DATABASE


def in_pool_transaction[T](work: Callable[[], T], using: str | None = None) -> T:
    """Run ``work`` in one READ COMMITTED transaction, again as a whole after a deadlock.

    At REPEATABLE READ a claim that finds the pool empty takes gap locks up to the supremum,
    and the restock's inserts then wait on it or deadlock; READ COMMITTED takes none. Inside a
    caller's transaction the level is already set, so the work joins it (and its retries are
    the caller's: see :func:`~django_skipqueue.db.statements.retry_whole_transaction`).
    """
    alias = using or pool_database()

    def attempt() -> T:
        connection = connections[alias]
        nested = connection.in_atomic_block
        if not nested and connection.vendor == "mysql":
            # Applies to the next transaction only, and must precede it.
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
        with short_transaction(alias):
            if not nested and connection.vendor == "postgresql":
                # PostgreSQL takes it as the transaction's first statement.
                with connection.cursor() as cursor:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
            return work()

    return retry_whole_transaction(alias, attempt)
