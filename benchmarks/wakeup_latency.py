"""Commit-to-start latency of a job on idle workers, with and without the wake-up datagram.

Starts ``runworkers`` (one process) on the database that DATABASE_URL names, lets it go idle,
then enqueues jobs one at a time, each in its own transaction, a little apart. Each job returns
the time it started (``tests.worker_tasks.stamp``); the latency is that minus the time the
enqueue's commit returned. Both clocks are this host's.

    DATABASE_URL=mysql://root@127.0.0.1:3306/sq_workers_bench python -m benchmarks.wakeup_latency

Prints median, p95 and max per variant. The target: median under 20 ms with the wake-up.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=40, help="jobs per variant (default: 40)")
    parser.add_argument("--gap", type=float, default=0.4, help="mean seconds between jobs")
    args = parser.parse_args()
    setup_django()
    for label, extra in (("wake-up", []), ("polling only", ["--no-wakeup"])):
        latencies = run_variant(args.jobs, args.gap, extra)
        print(report(label, latencies), flush=True)


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def run_variant(jobs: int, gap: float, extra: list[str]) -> list[float]:
    from django_skipqueue.models import Job, WorkerProcess
    from tests.worker_tasks import stamp

    Job.objects.filter(task_path=stamp.module_path).delete()
    before = set(WorkerProcess.objects.values_list("pk", flat=True))
    workers = start_workers(extra)
    try:
        wait(lambda: WorkerProcess.objects.exclude(pk__in=before).filter(role="worker").exists())
        time.sleep(3)  # idle: backed off to the polling cap
        committed = {}
        for _ in range(jobs):
            time.sleep(random.uniform(0.5 * gap, 1.5 * gap))
            result = stamp.enqueue()
            committed[result.id] = time.time()
        done = Job.objects.filter(pk__in=list(committed), status="succeeded")
        wait(lambda: done.count() == jobs)
        started = dict(done.values_list("pk", "return_value"))
        return [started[int(pk)] - at for pk, at in committed.items()]
    finally:
        workers.send_signal(signal.SIGTERM)
        workers.wait(60)


def start_workers(extra: list[str]) -> subprocess.Popen[bytes]:
    command = [sys.executable, str(ROOT / "testproject" / "manage.py"), "runworkers"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SKIPQUEUE_LOG_LEVEL": "WARNING"}
    return subprocess.Popen(
        [*command, "--processes", "1", "--threads", "4", "--queues", "default", *extra],
        env=env,
    )


def wait(condition, timeout: float = 120) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit("timed out waiting for the workers")
        time.sleep(0.05)


def report(label: str, latencies: list[float]) -> str:
    ms = sorted(value * 1000 for value in latencies)
    p95 = ms[min(len(ms) - 1, round(0.95 * len(ms)) - 1)]
    return (
        f"{label:>13}: jobs={len(ms)} median={statistics.median(ms):.1f} ms "
        f"p95={p95:.1f} ms max={ms[-1]:.1f} ms"
    )


if __name__ == "__main__":
    main()
