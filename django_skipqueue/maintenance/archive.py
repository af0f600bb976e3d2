"""Move finished jobs out of the queue table: delete by key, or copy into the history first.

Both run inside a purge chunk's transaction, on keys that transaction already locked.
"""

from __future__ import annotations

from django.db import transaction

from django_skipqueue.db.clock import DatabaseNow
from django_skipqueue.models import Job, JobArchive


def delete_rows(using: str, ids: list[int]) -> int:
    """Delete jobs ``ids`` (already locked by this transaction); return the count.

    A DELETE waits for every row its access path scans, and when the keys are a large share
    of a small table MySQL prefers a full scan, which would wait behind any row someone
    holds. ``ORDER BY id LIMIT n`` makes MySQL and MariaDB walk the primary key instead
    (FORCE INDEX is ignored by a DELETE), so it touches only the rows already locked here.
    """
    connection = transaction.get_connection(using)
    if connection.vendor != "mysql":
        return Job.objects.using(using).filter(pk__in=ids).delete()[0]
    table = connection.ops.quote_name(Job._meta.db_table)
    placeholders = ", ".join(["%s"] * len(ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {table} WHERE id IN ({placeholders}) ORDER BY id LIMIT %s",
            [*ids, len(ids)],
        )
        return cursor.rowcount


def archive(using: str, ids: list[int]) -> int:
    """Copy jobs ``ids`` into the history table with one INSERT ... SELECT; return the count.

    Called in the delete's transaction: a row is archived exactly when it is deleted. The
    history keeps each job's own id as its primary key, so archiving one twice fails loudly.
    """
    columns = [f.column for f in JobArchive._meta.concrete_fields if f.name != "archived_at"]
    source = (
        Job.objects.using(using)
        .filter(pk__in=ids)
        .order_by("pk")
        .values(*[f.name for f in JobArchive._meta.concrete_fields if f.name != "archived_at"])
        .annotate(archived_now=DatabaseNow())
    )
    select_sql, params = source.query.get_compiler(using=using).as_sql()
    connection = transaction.get_connection(using)
    target = ", ".join(connection.ops.quote_name(c) for c in [*columns, "archived_at"])
    table = connection.ops.quote_name(JobArchive._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} ({target}) {select_sql}", params)
        return cursor.rowcount
