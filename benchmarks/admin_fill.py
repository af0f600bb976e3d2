"""Fill a jobs table with a realistic million rows in seconds (MariaDB's sequence engine).

The mix is what a busy queue looks like a week after its last purge: mostly finished history,
some failures, a backlog of ready jobs, a few scheduled and running ones, four queues, five
tasks, enqueue times spread over seven days in id order, and per-minute worker figures for
the last hour so that the dashboard has something to draw.
"""

from __future__ import annotations

from django.db import connection

QUEUES = ("default", "high", "emails", "reports")
TASKS = (
    "testproject.demo.tasks.add",
    "testproject.demo.tasks.record",
    "shop.tasks.send_receipt",
    "shop.tasks.render_invoice",
    "search.tasks.reindex",
)
#: Status by ``MOD(seq, 1000)``: 93% succeeded, 2% failed, 1% cancelled, 3% ready, the rest
#: scheduled and claimed (0.5% each).
STATUS_SQL = """CASE
  WHEN MOD(seq, 1000) < 930 THEN 'succeeded' WHEN MOD(seq, 1000) < 950 THEN 'failed'
  WHEN MOD(seq, 1000) < 960 THEN 'cancelled' WHEN MOD(seq, 1000) < 990 THEN 'ready'
  WHEN MOD(seq, 1000) < 995 THEN 'scheduled' ELSE 'claimed' END"""
TRACEBACK = (
    "Traceback (most recent call last):\n"
    + '  File "/srv/app/shop/tasks.py", line 42, in send_receipt\n    client.post(url)\n' * 8
    + "ConnectionError: upstream timed out\n"
)


def fill_jobs(rows: int, span_seconds: int = 7 * 86_400) -> None:
    """Replace the jobs table's content with ``rows`` jobs (one INSERT ... SELECT)."""
    step = span_seconds / rows
    queues = ", ".join(f"'{q}'" for q in QUEUES)
    tasks = ", ".join(f"'{t}'" for t in TASKS)
    age_us = f"ROUND(({rows} - CAST(seq AS SIGNED)) * {step} * 1000000)"
    enqueued = f"(UTC_TIMESTAMP(6) - INTERVAL {age_us} MICROSECOND)"
    sql = f"""
    INSERT INTO skipqueue_job (queue_name, priority, status, run_after, task_path, args, kwargs,
        owner, lease_until, attempts, max_attempts, lease_seconds, cancel_requested,
        enqueued_at, started_at, last_attempted_at, finished_at, errors, return_value,
        worker_ids, idempotency_key)
    SELECT ELT(1 + MOD(seq, 4), {queues}), CAST(MOD(seq, 3) AS SIGNED) * 10 - 10, st,
        IF(st = 'scheduled', UTC_TIMESTAMP(6) + INTERVAL 1 HOUR, NULL),
        ELT(1 + MOD(seq, 5), {tasks}),
        JSON_ARRAY(seq, CONCAT('customer-', MOD(seq, 9973))), JSON_OBJECT('notify', TRUE),
        IF(st = 'claimed', 'web-1:4242:beef', NULL),
        IF(st = 'claimed', UTC_TIMESTAMP(6) + INTERVAL 60 SECOND, NULL),
        IF(st IN ('ready', 'scheduled'), 0, IF(st = 'failed', 5, 1)), 5, 60, FALSE,
        enq, IF(st IN ('ready', 'scheduled'), NULL, enq + INTERVAL 1 SECOND),
        IF(st IN ('ready', 'scheduled'), NULL, enq + INTERVAL 1 SECOND),
        IF(st IN ('succeeded', 'failed', 'cancelled'), enq + INTERVAL 2 SECOND, NULL),
        IF(st = 'failed', JSON_ARRAY(JSON_OBJECT(
            'exception_class_path', 'builtins.ConnectionError', 'traceback', %s)), '[]'),
        IF(st = 'succeeded', JSON_OBJECT('ok', TRUE), NULL),
        IF(st IN ('ready', 'scheduled', 'claimed'), '[]', '["web-1:4242:beef"]'),
        IF(MOD(seq, 10) = 0, CONCAT('order-', seq), NULL)
    FROM (SELECT seq, {STATUS_SQL} AS st, {enqueued} AS enq FROM seq_1_to_{rows}) s
    """
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE TABLE skipqueue_job")
        cursor.execute(sql, [TRACEBACK])
        cursor.execute("ANALYZE TABLE skipqueue_job")
        cursor.fetchall()


def fill_metrics(workers: int = 8) -> None:
    """Write per-minute counters for the last hour and a few live workers."""
    latency = "JSON_ARRAY(0, 40, 30, 20, 6, 3, 1, 0, 0, 0, 0, 0, 0, 0)"
    minute = "(DATE_FORMAT(UTC_TIMESTAMP(), '%Y-%m-%d %H:%i:00') - INTERVAL m.seq MINUTE)"
    queues = ", ".join(f"'{q}'" for q in QUEUES)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM skipqueue_queue_minute")
        cursor.execute("DELETE FROM skipqueue_worker")
        cursor.execute(
            f"""INSERT INTO skipqueue_queue_minute (minute, queue_name, owner, claimed,
                succeeded, failed, retried, reclaimed, lost_leases, claim_queries,
                claim_latency_histogram)
            SELECT {minute}, q.name, CONCAT('web-', w.seq, ':100:cafe'), 300 + m.seq * 3,
                290 + MOD(m.seq * 7, 40), MOD(m.seq, 7), MOD(m.seq, 3),
                IF(MOD(m.seq, 17) = 0, 1, 0), 0, 100, {latency}
            FROM seq_0_to_59 m
            JOIN (SELECT ELT(seq, {queues}) AS name FROM seq_1_to_4) q
            JOIN (SELECT seq FROM seq_1_to_{workers}) w"""
        )
        cursor.execute(
            f"""INSERT INTO skipqueue_worker (owner, role, supervisor, hostname, pid,
                backend_alias, queues, threads, wakeup_address, started_at,
                last_heartbeat_at, stopped_at, claimed, succeeded, failed, retried,
                reclaimed, lost_leases, claim_p50_ms, claim_p95_ms)
            SELECT CONCAT('web-', seq, ':100:cafe'), 'worker', 'web-0:99:cafe', 'web-1',
                1000 + seq, 'default', '["default", "high", "emails", "reports"]', 4, NULL,
                UTC_TIMESTAMP(6) - INTERVAL 2 HOUR,
                UTC_TIMESTAMP(6) - INTERVAL IF(seq = 1, 600, 2) SECOND, NULL,
                50000, 49000, 900, 100, 3, 0, 1.5, 4.0
            FROM seq_1_to_{workers}"""
        )
