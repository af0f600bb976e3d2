"""The size of a long multi-process scenario on each database: full on MariaDB, smaller elsewhere.

A scenario of many processes (sixteen clients for a minute, a thousand ordered jobs) finds its
races by running long. MariaDB, the database the project is built for, runs it in full; on
PostgreSQL (and SQLite, where a scenario does not need SKIP LOCKED) the same test runs the same
vendor-specific statements under the same contention and checks the same invariants, for a
fraction of the minutes; only the counts it asserts (kills, endings) shrink with its length
(notes/TEAM.md, "Which databases a test runs on").
"""

from __future__ import annotations

from django.db import connection


def full_scale() -> bool:
    """True on MySQL/MariaDB, where the scenarios run at their full size."""
    return connection.vendor == "mysql"


def scaled[N: (int, float)](full: N, elsewhere: N) -> N:
    """``full`` on MySQL/MariaDB, ``elsewhere`` on PostgreSQL and SQLite."""
    return full if full_scale() else elsewhere
