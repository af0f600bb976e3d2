"""How long the admin's pages take with a million jobs in the table.

Usage::

    python -m benchmarks admin_render [--rows 1000000] [--repeat 15] [--refill]
        [--database-url mysql://root@127.0.0.1:3306/sq_admin_bench] [--output PATH]

Fills its own database (created if missing, refilled only when the row count differs or
``--refill``), then renders each page with Django's test client as a logged-in superuser:
two warm-up requests, then ``--repeat`` timed ones. Prints a table (median, p95, max, query
count) and writes it with the machine and server settings as JSON. Not a test: timings
depend on the machine; the figures and where they were taken go into the docs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_URL = "mysql://root@127.0.0.1:3306/sq_admin_bench"
DEFAULT_OUTPUT = ROOT / "docs" / "benchmarks" / "raw" / "admin_render.json"
SERVER_VARIABLES = ("version", "innodb_buffer_pool_size", "transaction_isolation", "tx_isolation")


def pages(sample: dict[str, Any]) -> list[tuple[str, str]]:
    """Return (label, path) of every page timed; ``sample`` holds ids and keys to look up."""
    jobs = "/admin/django_skipqueue/job/"
    return [
        ("dashboard", "/admin/django_skipqueue/job/dashboard/?refresh=0"),
        ("job list", jobs),
        ("job list, page 50", f"{jobs}?p=50"),
        ("status = failed", f"{jobs}?status__exact=failed"),
        ("status = ready, queue = emails", f"{jobs}?status__exact=ready&queue=emails"),
        ("queue = emails", f"{jobs}?queue=emails"),
        ("task filter", f"{jobs}?task=shop.tasks.send_receipt"),
        ("enqueued in the last hour", f"{jobs}?enqueued=1h"),
        ("enqueued more than 7 days ago", f"{jobs}?enqueued=older-7d"),
        ("search: id", f"{jobs}?q={sample['id']}"),
        ("search: idempotency key", f"{jobs}?q={sample['key']}"),
        ("search: task path prefix", f"{jobs}?q=task:search.tasks"),
        # The known slow path: no index on task_path, and nothing matches, so it reads all.
        ("search: task path, no match", f"{jobs}?q=task:no.such.task"),
        ("job page (failed, with traceback)", f"{jobs}{sample['failed']}/change/"),
    ]


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    setup_django(options.database_url)
    from benchmarks import admin_fill
    from django_skipqueue.models import Job

    if options.refill or _rows() != options.rows:
        started = time.perf_counter()
        admin_fill.fill_jobs(options.rows)
        print(f"filled {options.rows:,} jobs in {time.perf_counter() - started:.1f} s")
    admin_fill.fill_metrics()
    from django_skipqueue import queues

    queues.pause("reports", reason="benchmark", by="benchmark")
    sample = {
        "id": Job.objects.order_by("pk").values_list("pk", flat=True)[options.rows // 2],
        "key": Job.objects.filter(active_key__isnull=False).values_list("active_key", flat=True)[
            0
        ],
        "failed": Job.objects.filter(status="failed").values_list("pk", flat=True)[0],
    }
    chosen = [(label, path) for label, path in pages(sample) if options.only in label]
    results = [measure(label, path, options.repeat) for label, path in chosen]
    report(results, options)
    queues.resume("reports")
    return 0


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="(default: %(default)r)")
    parser.add_argument("--repeat", type=int, default=15, help="(default: %(default)r)")
    parser.add_argument("--refill", action="store_true", help="refill even if the count fits")
    parser.add_argument("--database-url", default=DEFAULT_URL, help="(default: %(default)r)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="JSON output")
    parser.add_argument("--only", default="", help="time only pages whose label contains this")
    return parser.parse_args(argv)


def setup_django(url: str) -> None:
    """Point the test project at the benchmark database, create it, migrate it."""
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")
    os.environ.setdefault("DEBUG", "0")
    os.environ.setdefault("SKIPQUEUE_LOG_LEVEL", "WARNING")
    sys.path.insert(0, str(ROOT))
    _create_database(url)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def _create_database(url: str) -> None:
    import MySQLdb

    host_port, name = url.split("@", 1)[1].split("/", 1)
    host, _, port = host_port.partition(":")
    server = MySQLdb.connect(host=host, port=int(port or 3306), user="root")
    server.cursor().execute(f"CREATE DATABASE IF NOT EXISTS `{name}` CHARACTER SET utf8mb4")
    server.close()


def _rows() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM skipqueue_job")
        return int(cursor.fetchone()[0])


def measure(label: str, path: str, repeat: int) -> dict[str, Any]:
    """Render ``path`` twice to warm up, then ``repeat`` times; return the timings in ms."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = _client()
    for _ in range(2):
        assert client.get(path).status_code == 200, path
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.get(path)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, path
    with CaptureQueriesContext(connection) as queries:
        client.get(path)
    sql_ms = sum(float(q["time"]) for q in queries.captured_queries) * 1000
    return {
        "page": label,
        "path": path,
        "median_ms": round(statistics.median(timings), 1),
        "p95_ms": round(sorted(timings)[max(0, round(0.95 * len(timings)) - 1)], 1),
        "max_ms": round(max(timings), 1),
        "queries": len(queries.captured_queries),
        "sql_ms": round(sql_ms, 1),
    }


_CLIENT: Any = None


def _client() -> Any:
    global _CLIENT
    if _CLIENT is None:
        from django.contrib.auth.models import User
        from django.test import Client

        user, _ = User.objects.get_or_create(
            username="bench-admin", defaults={"is_staff": True, "is_superuser": True}
        )
        _CLIENT = Client()
        _CLIENT.force_login(user)
    return _CLIENT


def report(results: list[dict[str, Any]], options: argparse.Namespace) -> None:
    print(f"\n{'page':42} {'median':>8} {'p95':>8} {'max':>8} {'queries':>8} {'sql':>8}")
    for r in results:
        print(
            f"{r['page']:42} {r['median_ms']:>6} ms {r['p95_ms']:>5} ms {r['max_ms']:>5} ms "
            f"{r['queries']:>8} {r['sql_ms']:>5} ms"
        )
    payload = {"rows": options.rows, "repeat": options.repeat, "results": results, **context()}
    options.output.parent.mkdir(parents=True, exist_ok=True)
    options.output.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"\nwritten to {options.output}")


def context() -> dict[str, Any]:
    """The machine and the server settings the figures were taken on."""
    from django.db import connection

    with connection.cursor() as cursor:
        names = ", ".join(f"'{name}'" for name in SERVER_VARIABLES)
        cursor.execute(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({names})")
        server = dict(cursor.fetchall())
        cursor.execute(
            "SELECT data_length, index_length FROM information_schema.tables "
            "WHERE table_schema = DATABASE() AND table_name = 'skipqueue_job'"
        )
        data, index = cursor.fetchone()
    server["jobs_table_mib"] = {"data": round(data / 2**20), "indexes": round(index / 2**20)}
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    models = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    cpu = models[0] if models else platform.processor()
    return {
        "machine": {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version()},
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "server": server,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


if __name__ == "__main__":
    raise SystemExit(main())
