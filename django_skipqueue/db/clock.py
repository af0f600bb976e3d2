"""The database clock: every lease and due time is computed by the server, never the worker."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import connections
from django.db.models import DateTimeField, Expression, F, FloatField, Func, Value
from django.db.models.functions import Now
from django.utils import timezone


class DatabaseNow(Now):
    """NOW() in UTC with microseconds on every backend.

    Django's ``Now()`` is CURRENT_TIMESTAMP(6) on MySQL, in the *session* time zone, while
    Django stores UTC (USE_TZ is required, check E003): UTC_TIMESTAMP(6) is the value to compare.
    """

    def as_mysql(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        return self.as_sql(compiler, connection, template="UTC_TIMESTAMP(6)", **extra_context)


class DatabaseNowPlus(Func):
    """The database's now plus a number of seconds: a value or a column (a job's lease)."""

    output_field = DateTimeField()
    template = "(STATEMENT_TIMESTAMP() + make_interval(secs => %(expressions)s))"

    def __init__(self, seconds: float | Expression | F) -> None:
        if not hasattr(seconds, "resolve_expression"):
            seconds = Value(float(seconds), output_field=FloatField())
        super().__init__(seconds)

    def as_mysql(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        template = "(UTC_TIMESTAMP(6) + INTERVAL ROUND(%(expressions)s * 1000000) MICROSECOND)"
        return self.as_sql(compiler, connection, template=template, **extra_context)

    def as_sqlite(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        template = (
            "STRFTIME('%%%%Y-%%%%m-%%%%d %%%%H:%%%%M:%%%%f', 'NOW', "
            "(%(expressions)s) || ' seconds')"
        )
        return self.as_sql(compiler, connection, template=template, **extra_context)


def read_db_now(using: str) -> datetime:
    """Read the database clock (for stats, reports and tests; fencing uses SQL expressions)."""
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute(_NOW_SELECT.get(connection.vendor, "SELECT STATEMENT_TIMESTAMP()"))
        (raw,) = cursor.fetchone()
    value = datetime.fromisoformat(raw) if isinstance(raw, str) else raw
    if settings.USE_TZ and timezone.is_naive(value):
        return timezone.make_aware(value, UTC)
    return value


_NOW_SELECT = {
    "mysql": "SELECT UTC_TIMESTAMP(6)",
    "sqlite": "SELECT STRFTIME('%Y-%m-%d %H:%M:%f', 'NOW')",
}
