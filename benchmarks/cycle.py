"""One process, no worker loop: claim a batch, run it, record it, again; for the batch sweep.

``python -m benchmarks.cycle ours|raw --claim B --complete each|batch`` drains the queue the
harness filled and prints jobs per second and client CPU per job. ``ours`` goes through the
same calls as a worker (``Job.objects.claim`` and ``outcomes.record``); ``raw`` through the
raw SQL reference's statements. ``each`` commits every completion on its own; ``batch``
records the whole claimed batch at once, as a worker does with what finished together.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable

Cycle = Callable[[], int]


def ours_cycle(claim: int, batch_complete: bool) -> Cycle:
    import django

    django.setup()
    from django_skipqueue.context import resolve_task
    from django_skipqueue.models import Job
    from django_skipqueue.worker import recording as outcomes
    from django_skipqueue.worker.executor import Outcome, Running

    owner = f"cycle:{os.getpid()}"

    def step() -> int:
        jobs = Job.objects.claim(["default"], limit=claim, owner=owner)
        done = []
        for job in jobs:
            task = resolve_task(job.task_path)
            done.append(Outcome(Running(job), "succeeded", task.call(*job.args, **job.kwargs)))
        if batch_complete:
            outcomes.record(done, "default")
        else:
            for outcome in done:
                outcomes.record([outcome], "default")
        return len(jobs)

    return step


def raw_cycle(claim: int, batch_complete: bool) -> Cycle:
    from benchmarks import raw_worker

    owner = f"cycle-raw:{os.getpid()}"
    cursor = raw_worker.connect().cursor()

    def step() -> int:
        ids = raw_worker.claim(cursor, owner, claim)
        if not ids:
            return 0
        raw_worker.run_batch(cursor, ids)
        groups = [ids] if batch_complete else [[pk] for pk in ids]
        for group in groups:
            cursor.execute(raw_worker.DONE.format(",".join(map(str, group))), (owner,))
        return len(ids)

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("system", choices=["ours", "raw"])
    parser.add_argument("--claim", type=int, default=1)
    parser.add_argument("--complete", choices=["each", "batch"], default="batch")
    args = parser.parse_args()
    make = ours_cycle if args.system == "ours" else raw_cycle
    step = make(args.claim, args.complete == "batch")
    began, cpu0, done = time.perf_counter(), time.process_time(), 0
    while got := step():
        done += got
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu0
    print(
        json.dumps({"jobs": done, "jobs_per_s": done / wall, "cpu_ms_per_job": 1000 * cpu / done})
    )


if __name__ == "__main__":
    main()
