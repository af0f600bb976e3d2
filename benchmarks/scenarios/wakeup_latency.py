"""Commit-to-start latency on idle workers, and the claim queries a job costs, by wake-up fan-out.

Starts ``runworkers`` on the database that DATABASE_URL names, lets it go idle, then enqueues
jobs one at a time, each in its own transaction, a little apart. Each job returns the time it
started (``tests.support.worker_tasks.stamp``); the latency is that minus the time the
enqueue's commit returned. Both clocks are this host's. Variants: the wake-up datagram sent to
every live worker (fan-out "all"), to each fan-out given with ``--fanouts``, and polling alone
(``--no-wakeup``).

    DATABASE_URL=mysql://root@127.0.0.1:3306/sq_workers_bench python -m benchmarks wakeup_latency

Prints, per variant: median, p95 and max latency, and the claim queries the workers made per
job while the jobs were being enqueued (idle polling included: about one per second per process;
the report prints that share too). The target: median under 10 ms with the wake-up.
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
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Variant:
    label: str
    fanout: int | None
    worker_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Outcome:
    latencies: list[float]
    claim_queries: int
    seconds: float
    processes: int


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=40, help="jobs per variant (default: 40)")
    parser.add_argument("--gap", type=float, default=0.4, help="mean seconds between jobs")
    parser.add_argument("--processes", type=int, default=4, help="worker processes (default: 4)")
    parser.add_argument("--threads", type=int, default=1, help="threads per process (default: 1)")
    parser.add_argument(
        "--fanouts", default="1,2", help="comma-separated fan-outs besides 'all' (default: 1,2)"
    )
    args = parser.parse_args()
    setup_django()
    variants = [Variant("fan-out all", None)]
    variants += [Variant(f"fan-out {n}", int(n)) for n in args.fanouts.split(",") if n]
    variants.append(Variant("polling only", None, ("--no-wakeup",)))
    print(
        f"{args.processes} process(es) x {args.threads} thread(s), {args.jobs} jobs "
        f"a mean {args.gap} s apart",
        flush=True,
    )
    for variant in variants:
        outcome = run_variant(variant, args)
        print(report(variant.label, outcome), flush=True)


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def run_variant(variant: Variant, args: argparse.Namespace) -> Outcome:
    from django.test import override_settings

    from django_skipqueue import wakeup
    from django_skipqueue.models import Job, WorkerProcess
    from tests.support.worker_tasks import stamp

    Job.objects.filter(task_path=stamp.module_path).delete()
    before = set(WorkerProcess.objects.values_list("pk", flat=True))
    workers = start_workers(args.processes, args.threads, variant.worker_args)
    ours = WorkerProcess.objects.exclude(pk__in=before).filter(role="worker")
    try:
        wait(lambda: ours.count() == args.processes)
        time.sleep(6)  # idle: backed off to the polling cap, counters written once
        wakeup.forget_addresses()
        queries_before = claim_queries(ours)
        began = time.monotonic()
        committed = {}
        with override_settings(SKIPQUEUE_WAKEUP_FANOUT=variant.fanout):
            for _ in range(args.jobs):
                time.sleep(random.uniform(0.5 * args.gap, 1.5 * args.gap))
                result = stamp.enqueue()
                committed[result.id] = time.time()
        done = Job.objects.filter(pk__in=list(committed), status="succeeded")
        wait(lambda: done.count() == args.jobs)
        seconds = time.monotonic() - began
        started = dict(done.values_list("pk", "return_value"))
        latencies = [started[int(pk)] - at for pk, at in committed.items()]
    finally:
        workers.send_signal(signal.SIGTERM)
        workers.wait(60)
    # The workers write their claim counters every heartbeat and when they stop; the idle
    # minutes before the first enqueue are taken off (approximately: whole flushes only).
    return Outcome(latencies, claim_queries(ours) - queries_before, seconds, args.processes)


def claim_queries(workers) -> int:  # type: ignore[no-untyped-def]
    from django.db.models import Sum

    from django_skipqueue.models import QueueMinute

    owners = list(workers.values_list("owner", flat=True))
    total = QueueMinute.objects.filter(owner__in=owners).aggregate(n=Sum("claim_queries"))["n"]
    return int(total or 0)


def start_workers(processes: int, threads: int, extra: tuple[str, ...]) -> subprocess.Popen[bytes]:
    command = [sys.executable, str(ROOT / "testproject" / "manage.py"), "runworkers"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SKIPQUEUE_LOG_LEVEL": "WARNING"}
    return subprocess.Popen(
        [
            *command, "--processes", str(processes), "--threads", str(threads),
            "--queues", "default", *extra,
        ],
        env=env,
    )  # fmt: skip


def wait(condition, timeout: float = 120) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit("timed out waiting for the workers")
        time.sleep(0.05)


def report(label: str, outcome: Outcome) -> str:
    ms = sorted(value * 1000 for value in outcome.latencies)
    p95 = ms[min(len(ms) - 1, round(0.95 * len(ms)) - 1)]
    jobs = len(ms)
    idle_polls = outcome.seconds * outcome.processes  # about one a second per idle process
    return (
        f"{label:>13}: jobs={jobs} median={statistics.median(ms):.1f} ms "
        f"p95={p95:.1f} ms max={ms[-1]:.1f} ms "
        f"claim queries/job={outcome.claim_queries / jobs:.2f} "
        f"(idle polling share about {idle_polls / jobs:.2f})"
    )


if __name__ == "__main__":
    main()
