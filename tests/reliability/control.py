"""A raw connection to the test database, outside Django: locks, PROCESSLIST and KILL."""

from __future__ import annotations

import MySQLdb
from django.db import connection

from tests.support.mariadb_server import kill_connection


class Control:
    """A raw connection to the test database, outside Django, for locks and KILL."""

    def __init__(self) -> None:
        settings = connection.settings_dict
        self.database = settings["NAME"]
        self.conn = MySQLdb.connect(
            host=settings["HOST"] or "127.0.0.1", port=int(settings["PORT"] or 3306),
            user=settings["USER"] or "root", database=self.database,
        )  # fmt: skip
        self.conn.autocommit(True)
        with connection.cursor() as cursor:
            cursor.execute("SELECT CONNECTION_ID()")
            self.spared = {cursor.fetchone()[0], self.conn.thread_id()}

    def execute(self, sql: str, params: list | None = None) -> list[tuple]:
        cursor = self.conn.cursor()
        cursor.execute(sql, params or [])
        return list(cursor.fetchall())

    def sessions(self, like: str = "%") -> list[int]:
        """Ids of the other sessions on the test database whose statement matches ``like``."""
        rows = self.execute(
            "SELECT ID, INFO FROM information_schema.PROCESSLIST WHERE DB = %s "
            "AND COALESCE(INFO, '') LIKE %s",
            [self.database, like],
        )
        return [pk for pk, _ in rows if pk not in self.spared]

    def kill(self, ids: list[int]) -> int:
        """Kill the sessions ``ids``; return how many were still there to be killed."""
        return sum(kill_connection(self.execute, pk) for pk in ids)

    def close(self) -> None:
        self.conn.close()
