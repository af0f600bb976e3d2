"""Keyed drain throughput (flow control, issue 18): 1, 10 and 1,000 keys at limits 1 and 4.

``python -m benchmarks flow_drain [--jobs N] [--rounds R]`` fills the database
``skq_flow_bench`` (``BENCH_DB_PREFIX`` replaces ``skq``) with no-op jobs of
``benchmarks.tasks.keyed_noop`` spread over K keys with ``concurrency_limit`` L, or of
``benchmarks.tasks.noop`` (unkeyed), then drains them with ``runworkers --processes 4
--threads 4`` and reads the throughput from the jobs' own ``finished_at`` (database clock):
finished jobs minus one over the time from the first to the last. The shapes run
interleaved, round after round, so that a change of the machine's load hits them alike.
Writes ``docs/benchmarks/raw/flow_drain.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.machine import machine

ROOT = Path(__file__).resolve().parents[2]
RAW = ROOT / "docs" / "benchmarks" / "raw" / "flow_drain.json"
#: (label, keys, limit); keys 0 is the unkeyed baseline.
SHAPES = [
    ("unkeyed", 0, 0),
    ("1 key, limit 1", 1, 1),
    ("1 key, limit 4", 1, 4),
    ("10 keys, limit 1", 10, 1),
    ("10 keys, limit 4", 10, 4),
    ("1,000 keys, limit 1", 1000, 1),
    ("1,000 keys, limit 4", 1000, 4),
]

SETUP = """
import django
django.setup()
from django_skipqueue.models import FlowKey, Job
from benchmarks.tasks import keyed_noop, noop
Job.objects.all().delete()
FlowKey.objects.all().delete()
jobs, keys, limit = {jobs}, {keys}, {limit}
if keys:
    task = keyed_noop.using(concurrency_limit=limit)
    calls = [(task, [n % keys], {{}}) for n in range(jobs)]
else:
    calls = [(noop, [], {{}}) for n in range(jobs)]
for start in range(0, jobs, 1000):
    noop.get_backend().enqueue_many(calls[start:start + 1000])
"""

MEASURE = """
import django, json
django.setup()
from django.db.models import Count, Max, Min
from django_skipqueue.models import Job
done = Job.objects.filter(status="succeeded").aggregate(
    n=Count("id"), first=Min("finished_at"), last=Max("finished_at")
)
left = Job.objects.exclude(status="succeeded").count()
span = (done["last"] - done["first"]).total_seconds() if done["n"] > 1 else None
print(json.dumps({"done": done["n"], "left": left, "span": span}))
"""


def env(database: str) -> dict[str, str]:
    values = dict(os.environ)
    values.update(
        DATABASE_URL=f"mysql://root@127.0.0.1:3306/{database}",
        DJANGO_SETTINGS_MODULE="testproject.settings",
        PYTHONPATH=str(ROOT),
    )
    return values


def python(code: str, database: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], env=env(database), cwd=ROOT, capture_output=True,
        text=True, check=True, timeout=600,
    )  # fmt: skip
    return done.stdout


def drain(database: str, jobs: int, keys: int, limit: int, cap: float) -> dict:
    python(SETUP.format(jobs=jobs, keys=keys, limit=limit), database)
    command = [
        sys.executable, "testproject/manage.py", "runworkers", "--processes", "4",
        "--threads", "4", "--queues", "default",
    ]  # fmt: skip
    log = open(Path(tempfile.gettempdir()) / "skipqueue-flow-drain.log", "a")  # noqa: SIM115
    workers = subprocess.Popen(command, env=env(database), cwd=ROOT, stdout=log, stderr=log)
    started = time.monotonic()
    try:
        while True:
            time.sleep(1.0)
            state = json.loads(python(MEASURE, database))
            if state["left"] == 0 or time.monotonic() - started > cap:
                break
    finally:
        workers.terminate()
        workers.wait(60)
        log.close()
    state["jobs_per_s"] = (state["done"] - 1) / state["span"] if state["span"] else None
    return state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cap", type=float, default=60.0, help="seconds per drain at most")
    args = parser.parse_args()
    database = os.environ.get("BENCH_DB_PREFIX", "skq") + "_flow_bench"
    subprocess.run(
        ["mysql", "-h127.0.0.1", "-uroot", "-e", f"CREATE DATABASE IF NOT EXISTS {database}"],
        check=True,
    )
    subprocess.run(
        [sys.executable, "testproject/manage.py", "migrate", "-v0"], env=env(database), cwd=ROOT,
        check=True,
    )  # fmt: skip
    started = {"at": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "loadavg": os.getloadavg()}
    runs: dict[str, list[dict]] = {}
    for rnd in range(args.rounds):
        order = SHAPES if rnd % 2 == 0 else SHAPES[::-1]
        for label, keys, limit in order:
            # One key at limit 1 runs one job at a time: fewer jobs, the same rate.
            jobs = args.jobs // 10 if keys == 1 else args.jobs
            result = drain(database, jobs, keys, limit, args.cap) | {"jobs": jobs}
            runs.setdefault(label, []).append(result)
            print(f"{time.strftime('%H:%M:%S')} round {rnd + 1} {label}: {result}", flush=True)
    medians = {
        label: statistics.median(r["jobs_per_s"] for r in results if r["jobs_per_s"])
        for label, results in runs.items()
    }
    result = {
        "started": started,
        "ended": {"at": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "loadavg": os.getloadavg()},
        "machine": machine(),
        "settings": vars(args),
        "medians": medians,
        "runs": runs,
    }
    RAW.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(json.dumps(medians, indent=1))


if __name__ == "__main__":
    main()
