"""Replica lag as the replica itself reports it (SHOW REPLICA STATUS / SHOW SLAVE STATUS).

A lag that cannot be read is *unknown*, never zero: with the SQL thread stopped,
``Seconds_Behind_Master`` is NULL while events pile up, and an unreachable replica says
nothing at all. Whoever waits for replicas treats unknown as "too far behind".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import DatabaseError, connections

#: The lag column, by server: MariaDB and MySQL < 8.0.22, then MySQL 8.0.22+.
LAG_COLUMNS = ("Seconds_Behind_Master", "Seconds_Behind_Source")
STATUS_QUERIES = ("SHOW REPLICA STATUS", "SHOW SLAVE STATUS")


class NotAReplica(Exception):
    """The database alias names a server that is not replicating from anyone."""


@dataclass(frozen=True)
class LagReading:
    alias: str
    #: Seconds behind the primary; None when unknown.
    seconds: float | None
    #: Why the lag is unknown (SQL thread stopped, connection error, ...).
    reason: str = ""

    def describe(self) -> str:
        if self.seconds is not None:
            return f"replica {self.alias} is {self.seconds:.0f}s behind"
        return f"replica {self.alias} lag is unknown ({self.reason})"


def read_lag(alias: str) -> LagReading:
    """Read the lag of the replica behind database alias ``alias``."""
    try:
        status = _replica_status(alias)
    except DatabaseError as error:
        connections[alias].close()
        return LagReading(alias, None, f"cannot read its status: {error}")
    if status is None:
        raise NotAReplica(
            f"Database {alias!r} is not a replica: SHOW REPLICA STATUS returns no row."
        )
    lag = next((status[c] for c in LAG_COLUMNS if c in status), None)
    if lag is None:
        return LagReading(alias, None, _why_unknown(status))
    return LagReading(alias, float(str(lag)))


def lagging(aliases: Iterable[str], max_lag: float) -> list[LagReading]:
    """Return the readings of the replicas over ``max_lag`` seconds or of unknown lag."""
    readings = [read_lag(alias) for alias in aliases]
    return [r for r in readings if r.seconds is None or r.seconds > max_lag]


def check_replicas(aliases: Iterable[str]) -> None:
    """Fail early, with a clear message, on an alias that is not a MySQL/MariaDB replica."""
    for alias in aliases:
        if alias not in connections.settings:
            raise NotAReplica(f"Database alias {alias!r} is not in DATABASES.")
        if connections[alias].vendor != "mysql":
            raise NotAReplica(f"Database {alias!r}: replica lag is read on MySQL/MariaDB only.")
        read_lag(alias)


def _replica_status(alias: str) -> dict[str, object] | None:
    connection = connections[alias]
    last_error: DatabaseError | None = None
    for query in STATUS_QUERIES:
        try:
            with connection.cursor() as cursor:
                cursor.execute(query)
                columns = [column[0] for column in cursor.description or ()]
                row = cursor.fetchone()
        except DatabaseError as error:
            # Older servers know only SHOW SLAVE STATUS; a syntax error means "try that".
            last_error = error
            continue
        return None if row is None else dict(zip(columns, row, strict=True))
    assert last_error is not None
    raise last_error


def _why_unknown(status: dict[str, object]) -> str:
    io_running = status.get("Slave_IO_Running", status.get("Replica_IO_Running"))
    sql_running = status.get("Slave_SQL_Running", status.get("Replica_SQL_Running"))
    if sql_running != "Yes":
        return "its SQL thread is not running"
    if io_running != "Yes":
        return "its IO thread is not running"
    return "Seconds_Behind_Master is NULL"
