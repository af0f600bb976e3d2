"""See a system's backlog from outside: rows left in its table, or messages left in Redis."""

from __future__ import annotations

import os

import MySQLdb
import redis

from benchmarks.systems import REDIS_URL, System

CELERY_QUEUE = "bench"
#: kombu's Redis transport keeps delivered, unacknowledged messages (acks_late) here.
CELERY_UNACKED = "unacked"


def connect(database: str | None = None) -> MySQLdb.Connection:
    """An autocommit connection to the benchmark server (READ COMMITTED)."""
    conn = MySQLdb.connect(
        host=os.environ.get("BENCH_DB_HOST", "127.0.0.1"),
        port=int(os.environ.get("BENCH_DB_PORT", "3306")),
        user="root",
        autocommit=True,
        charset="utf8mb4",
        **({"database": database} if database else {}),
    )
    conn.cursor().execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
    return conn


def stored_columns(db: MySQLdb.Connection, table: str, *, with_id: bool = True) -> str:
    """The columns of ``table`` an INSERT may write (generated ones cannot be), quoted."""
    cursor = db.cursor()
    cursor.execute(
        "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
        "AND TABLE_NAME = %s AND EXTRA NOT LIKE '%%GENERATED%%' ORDER BY ORDINAL_POSITION",
        (table,),
    )
    names = [name for (name,) in cursor.fetchall() if with_id or name != "id"]
    return ", ".join(f"`{name}`" for name in names)


class Backlog:
    """Counts what a system has still to run, and empties or refills its queue."""

    def __init__(self, system: System) -> None:
        self.system = system
        self.db = connect(system.database) if system.database else None
        self.redis = redis.Redis.from_url(REDIS_URL) if system.name == "celery" else None
        self._snap = f"bench_snapshot_{system.name}"
        self._messages: list = []

    def remaining(self) -> int:
        if self.redis is not None:
            return int(self.redis.llen(CELERY_QUEUE)) + int(self.redis.hlen(CELERY_UNACKED))
        return self.scalar(self.system.remaining_sql or "")

    def scalar(self, sql: str) -> int:
        assert self.db is not None
        cursor = self.db.cursor()
        cursor.execute(sql)
        return int(cursor.fetchone()[0])

    def execute(self, *statements: str) -> None:
        assert self.db is not None
        cursor = self.db.cursor()
        for sql in statements:
            cursor.execute(sql)

    def empty(self) -> None:
        """Remove every job (and result row) of this system."""
        if self.redis is not None:
            self.redis.flushdb()
            return
        truncate = [f"TRUNCATE TABLE {table}" for table in self.system.tables]
        self.execute("SET FOREIGN_KEY_CHECKS = 0", *truncate, "SET FOREIGN_KEY_CHECKS = 1")

    def snapshot(self) -> None:
        """Keep a copy of the current queue, to refill it quickly before each run."""
        if self.redis is not None:
            self._messages = self.redis.lrange(CELERY_QUEUE, 0, -1)
            return
        table = self.system.tables[0]
        self.execute(
            f"DROP TABLE IF EXISTS {self._snap}",
            f"CREATE TABLE {self._snap} LIKE {table}",
            f"INSERT INTO {self._snap} ({self._columns(table)}) "
            f"SELECT {self._columns(table)} FROM {table}",
        )

    def restore(self) -> None:
        """Empty the queue, then put the snapshot back."""
        self.empty()
        if self.redis is not None:
            pipe = self.redis.pipeline(transaction=False)
            for start in range(0, len(self._messages), 1000):
                pipe.rpush(CELERY_QUEUE, *self._messages[start : start + 1000])
            pipe.execute()
            return
        table = self.system.tables[0]
        columns = self._columns(table)
        self.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {self._snap}")

    def _columns(self, table: str) -> str:
        """The stored columns of ``table`` (generated columns cannot be inserted into)."""
        assert self.db is not None
        return stored_columns(self.db, table)
