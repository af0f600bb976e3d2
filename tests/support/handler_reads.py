"""The index entries and rows the server reads for some work, from MariaDB's session counters."""

from __future__ import annotations

from collections.abc import Callable

from django.db import connection


def handler_reads(work: Callable[[], object]) -> int:
    """The rows (index entries) the server read for ``work``, from the session's counters."""

    def total() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SHOW SESSION STATUS LIKE 'Handler_read%%'")
            return sum(int(value) for _, value in cursor.fetchall())

    before = total()
    work()
    return total() - before - 10  # the SHOW itself
