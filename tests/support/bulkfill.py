"""Fill the jobs table fast with one INSERT ... SELECT per call (no ORM loop)."""

from __future__ import annotations

from django.db import connection

COLUMNS = (
    "queue_name, priority, status, run_after, task_path, args, kwargs, owner, attempts, "
    "max_attempts, lease_seconds, cancel_requested, enqueued_at, finished_at, errors, "
    "worker_ids"
)


def insert_jobs(
    count: int,
    *,
    status: str = "ready",
    queue_name: str = "default",
    finished_seconds_ago: int | None = None,
    run_after_seconds: int | None = None,
    task_path: str = "tests.support.tasks.noop",
) -> None:
    """Insert ``count`` rows with the given status (finished ones get a finished_at)."""
    now, rows, plus = _dialect(count)
    finished = "NULL" if finished_seconds_ago is None else plus(now, -finished_seconds_ago)
    run_after = "NULL" if run_after_seconds is None else plus(now, run_after_seconds)
    owner, attempts = ("'old-worker'", 1) if finished_seconds_ago is not None else ("NULL", 0)
    sql = (
        f"INSERT INTO skipqueue_job ({COLUMNS}) SELECT %s, 0, %s, {run_after}, %s, '[]', '{{}}', "
        f"{owner}, {attempts}, 5, 60, FALSE, {now}, {finished}, '[]', '[]' FROM {rows}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [queue_name, status, task_path])


def _dialect(count: int):
    vendor = connection.vendor
    if vendor == "mysql":
        return (
            "UTC_TIMESTAMP(6)",
            f"seq_1_to_{count}",
            lambda now, s: f"({now} + INTERVAL {s} SECOND)",
        )
    if vendor == "postgresql":
        return (
            "STATEMENT_TIMESTAMP()",
            f"generate_series(1, {count})",
            lambda now, s: f"({now} + make_interval(secs => {s}))",
        )
    return (
        "STRFTIME('%%Y-%%m-%%d %%H:%%M:%%f', 'NOW')",
        f"(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {count}) "
        "SELECT i FROM n)",
        lambda now, s: f"STRFTIME('%%Y-%%m-%%d %%H:%%M:%%f', 'NOW', '{s:+d} seconds')",
    )
