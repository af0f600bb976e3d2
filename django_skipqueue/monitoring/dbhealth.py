"""The database server's own health beside the queue's: the purge backlog and old transactions.

One long transaction anywhere on the server (a backup, a report at REPEATABLE READ, a session
left open in a console) keeps InnoDB from purging the row versions every later UPDATE and
DELETE leaves behind. The history list grows, claims walk more versions and slow down by the
hour, and EXPLAIN still shows the right plan. Two figures tell it early: the history list
length (versions waiting for purge) and the age of the oldest open transaction.

And the connections: a fleet of worker hosts can ask for more than ``max_connections``. The
server counts the connections it refused for that reason (``Connection_errors_max_connections``,
since it started); the connections open and the most ever open beside the limit say how close
the fleet runs to it.

Both come from ``information_schema`` (``INNODB_METRICS`` and ``INNODB_TRX``), which need the
PROCESS privilege: where the server hides them, the figure is None and ``unavailable`` says
why. PostgreSQL has no history list; its oldest transaction is read from ``pg_stat_activity``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import DatabaseError, connections

#: The InnoDB counter of undo logs waiting for purge (enabled by default on MySQL and MariaDB).
HISTORY_SQL = (
    "SELECT `count` FROM information_schema.INNODB_METRICS WHERE name = 'trx_rseg_history_len'"
)
#: The oldest transaction of any other session: its age in seconds and its connection id.
OLDEST_TRX_SQL = (
    "SELECT TIMESTAMPDIFF(MICROSECOND, trx_started, NOW(6)) / 1000000, trx_mysql_thread_id "
    "FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id <> CONNECTION_ID() "
    "ORDER BY trx_started LIMIT 1"
)
#: Connections: the limit, open now, most ever open, refused at the limit (since start-up).
CONNECTIONS_SQL = (
    "SELECT @@max_connections, "
    "(SELECT variable_value FROM information_schema.GLOBAL_STATUS "
    "WHERE variable_name = 'THREADS_CONNECTED'), "
    "(SELECT variable_value FROM information_schema.GLOBAL_STATUS "
    "WHERE variable_name = 'MAX_USED_CONNECTIONS'), "
    "(SELECT variable_value FROM information_schema.GLOBAL_STATUS "
    "WHERE variable_name = 'CONNECTION_ERRORS_MAX_CONNECTIONS')"
)
OLDEST_XACT_SQL_PG = (
    "SELECT EXTRACT(EPOCH FROM clock_timestamp() - xact_start), pid FROM pg_stat_activity "
    "WHERE xact_start IS NOT NULL AND pid <> pg_backend_pid() ORDER BY xact_start LIMIT 1"
)


@dataclass
class DatabaseHealth:
    """The server's purge backlog and oldest transaction (None: not available, see why)."""

    vendor: str
    #: Undo logs of committed transactions not purged yet (InnoDB's history list length).
    history_length: int | None = None
    #: Seconds the oldest open transaction of another session has been open (0.0: none open).
    oldest_transaction_age: float | None = None
    #: The connection (MySQL thread id, PostgreSQL pid) of that transaction.
    oldest_transaction_connection: int | None = None
    #: The server's ``max_connections``, the connections open now and the most ever open.
    max_connections: int | None = None
    connections_open: int | None = None
    max_used_connections: int | None = None
    #: Connections the server refused at ``max_connections`` since it started (MySQL/MariaDB).
    refused_connections: int | None = None
    #: Figure name -> why it is not available on this server.
    unavailable: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """One line for ``skipqueue_status``."""
        history = (
            f"{self.history_length:,}"
            if self.history_length is not None
            else self._missing("history_length")
        )
        if self.oldest_transaction_age is None:
            oldest = self._missing("oldest_transaction_age")
        elif self.oldest_transaction_connection is None:
            oldest = "none open"
        else:
            oldest = (
                f"{self.oldest_transaction_age:.1f} s "
                f"(connection {self.oldest_transaction_connection})"
            )
        line = f"database: history list length {history}; oldest open transaction {oldest}"
        if self.max_connections is not None:
            line += (
                f"; connections {self.connections_open} of {self.max_connections} "
                f"(most ever {self.max_used_connections}, refused at the limit "
                f"{self.refused_connections:,} since the server started)"
            )
        return line

    def _missing(self, name: str) -> str:
        return f"not available ({self.unavailable.get(name, 'unknown')})"


def database_health(using: str = "default") -> DatabaseHealth:
    """Read the purge backlog and the oldest open transaction of ``using``'s server."""
    vendor = connections[using].vendor
    health = DatabaseHealth(vendor)
    if vendor == "mysql":
        _read(health, using, "history_length", HISTORY_SQL, _history)
        _read(health, using, "oldest_transaction_age", OLDEST_TRX_SQL, _oldest)
        _read(health, using, "refused_connections", CONNECTIONS_SQL, _connections)
    elif vendor == "postgresql":
        health.unavailable["history_length"] = "PostgreSQL has no InnoDB history list"
        _read(health, using, "oldest_transaction_age", OLDEST_XACT_SQL_PG, _oldest)
    else:
        reason = f"{vendor} does not report it"
        health.unavailable = {"history_length": reason, "oldest_transaction_age": reason}
    return health


def _read(health: DatabaseHealth, using: str, name: str, sql: str, apply: Any) -> None:
    try:
        with connections[using].cursor() as cursor:
            cursor.execute(sql)
            rows = cursor.fetchall()
    except DatabaseError as error:  # usually: the PROCESS privilege is missing
        health.unavailable[name] = _reason(error)
        return
    apply(health, rows)


def _history(health: DatabaseHealth, rows: list[tuple[Any, ...]]) -> None:
    if rows:
        health.history_length = int(rows[0][0])
    else:
        health.unavailable["history_length"] = "the server has no trx_rseg_history_len counter"


def _oldest(health: DatabaseHealth, rows: list[tuple[Any, ...]]) -> None:
    if rows:
        health.oldest_transaction_age = max(0.0, float(rows[0][0]))
        health.oldest_transaction_connection = int(rows[0][1])
    else:
        health.oldest_transaction_age = 0.0


def _connections(health: DatabaseHealth, rows: list[tuple[Any, ...]]) -> None:
    limit, open_now, most, refused = rows[0]
    if refused is None:  # MySQL before 5.6 or a server without the counter
        health.unavailable["refused_connections"] = "the server does not count them"
        return
    health.max_connections, health.connections_open = int(limit), int(open_now)
    health.max_used_connections, health.refused_connections = int(most), int(refused)


def _reason(error: DatabaseError) -> str:
    text = str(error.args[-1] if error.args else error)
    if "PROCESS" in text.upper() or "denied" in text.lower():
        return "needs the PROCESS privilege"
    return text[:200]
