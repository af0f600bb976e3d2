"""What ``runworkers --metrics-port`` costs a drain: metrics on against off, interleaved.

Each run enqueues N no-op jobs (20,000: a drain of a few seconds), then drains them with
``runworkers --burst --processes 2 --threads 4``, with ``--metrics-port`` or without, the order
alternating from one repetition to the next. With metrics on, a scraper reads the port every
second throughout (a harsher rate than any Prometheus would use). Throughput is N over the time
from the first claim to the last completion, both read from the jobs' own timestamps (database
clock), so process start-up and the burst's exit are left out. On a shared machine throughput
swings with the load; the CPU the worker processes spent per job (getrusage of the runworkers
tree, less a run with nothing to do) is the steadier figure of what the metrics cost.

    DATABASE_URL=mysql://root@127.0.0.1:3306/skq_bench_metrics python -m benchmarks metrics_cost

Writes docs/benchmarks/raw/metrics.json and prints the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RAW = ROOT / "docs" / "benchmarks" / "raw" / "metrics.json"
MODES = ("off", "on")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000, help="per drain")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    setup_django()
    from benchmarks import machine

    runs: dict[str, list[float]] = {mode: [] for mode in MODES}
    cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
    # The CPU of a run with nothing to do: start-up and exit, taken off each run's CPU.
    idle = {mode: drain(0, metrics=mode == "on")[2] for mode in MODES}
    scrapes: list[int] = []
    for rep in range(args.reps):
        order = MODES if rep % 2 == 0 else MODES[::-1]
        for mode in order:
            rate, scraped, seconds = drain(args.jobs, metrics=mode == "on")
            runs[mode].append(rate)
            cpu[mode].append((seconds - idle[mode]) * 1000 / args.jobs)
            if mode == "on":
                scrapes.append(scraped)
            print(
                f"rep {rep + 1} metrics {mode}: {rate:,.0f} jobs/s, "
                f"{cpu[mode][-1]:.3f} CPU ms per job",
                flush=True,
            )
    result = {
        "jobs": args.jobs,
        "reps": args.reps,
        "processes": 2,
        "threads": 4,
        "jobs_per_s": runs,
        "cpu_ms_per_job": cpu,
        "idle_cpu_s": idle,
        "scrapes": scrapes,
        "ratio": statistics.median(runs["on"]) / statistics.median(runs["off"]),
        "cpu_ratio": statistics.median(cpu["off"]) / statistics.median(cpu["on"]),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {
            **{k: v for k, v in machine.machine().items() if k != "load_average"},
            **stack(),
        },
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "busy": machine.busy_processes(),
        "earlier": earlier(),
    }
    RAW.write_text(json.dumps(result, indent=2) + "\n")
    shown = ("jobs_per_s", "cpu_ms_per_job", "ratio", "cpu_ratio", "load_average")
    print(json.dumps({k: result[k] for k in shown}, indent=2))


def stack() -> dict[str, str]:
    """The Django version and the database server the drains ran on."""
    import django
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT VERSION()")
        version = cursor.fetchone()[0]
    host = connection.settings_dict.get("HOST") or "localhost"
    return {
        "django": django.get_version(),
        "database": f"{connection.display_name} {version} on {host}",
    }


def earlier() -> list[dict[str, Any]]:
    """The runs before this one: the previous file's earlier runs and its own figures."""
    if not RAW.exists():
        return []
    previous = json.loads(RAW.read_text())
    kept = ("measured_at", "reps", "jobs", "ratio", "cpu_ratio", "load_average")
    last = {key: previous[key] for key in kept if key in previous}
    return [*previous.get("earlier", []), last]


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def drain(count: int, *, metrics: bool) -> tuple[float, int, float]:
    """Drain ``count`` no-op jobs; return jobs per second, the scrapes made meanwhile and the
    CPU seconds (user + system) of runworkers and its worker processes."""
    from django.db.models import Max, Min

    from django_skipqueue.compat import task_backends
    from django_skipqueue.models import Job, QueueMinute, WorkerProcess
    from tests.support.tasks import noop

    Job.objects.all().delete()
    QueueMinute.objects.all().delete()
    WorkerProcess.objects.all().delete()
    backend = task_backends["default"]
    for start in range(0, count, 1000):
        backend.enqueue_many([(noop, [], {})] * min(1000, count - start))
    command = [sys.executable, str(ROOT / "testproject" / "manage.py"), "runworkers", "--burst",
               "--processes", "2", "--threads", "4", "--queues", "default"]  # fmt: skip
    port = free_port()
    if metrics:
        command += ["--metrics-port", str(port)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SKIPQUEUE_LOG_LEVEL": "WARNING"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    scraper = Scraper(port) if metrics else None
    if process.wait() != 0:
        raise SystemExit(f"runworkers exited {process.returncode}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    scraped = scraper.stop() if scraper else 0
    assert Job.objects.filter(status="succeeded").count() == count
    if not count:
        return 0.0, scraped, seconds
    span = Job.objects.aggregate(first=Min("started_at"), last=Max("finished_at"))
    return count / (span["last"] - span["first"]).total_seconds(), scraped, seconds


class Scraper:
    """Read the metrics port every second until stopped; count the answers."""

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/metrics"
        self.done = threading.Event()
        self.answers = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.wait(1.0):
            try:
                with urllib.request.urlopen(self.url, timeout=2) as response:
                    response.read()
                    self.answers += 1
            except OSError:
                pass  # not listening yet, or gone

    def stop(self) -> int:
        self.done.set()
        self.thread.join()
        return self.answers


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def summary(result: dict[str, Any]) -> dict[str, Any]:
    return {mode: statistics.median(result["jobs_per_s"][mode]) for mode in MODES}


if __name__ == "__main__":
    main()
