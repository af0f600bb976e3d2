"""The drain, the outbox relay and the flow drain of two commits, interleaved in one run.

``python -m benchmarks ab --before REV [--after REV] [--rounds 5] [--jobs 10000]
[--shape 4x4] [--messages 5000] [--flow-jobs 2000] [--flow 10:4]
[--logging quiet,default] [--title TEXT] [--out FILE]``

Each commit is checked out in a git worktree of its own with a database of its own
(``PREFIX_before``/``_after``, ``--db-prefix``; see benchmarks/sides.py), and this checkout's
``benchmarks/peers/`` is copied into both, so both sides run the same settings whatever their
commit holds. Round after round, the sides alternating which goes first (AB, BA, ...), each
side runs every measurement:

- ``drain``: the snapshotted backlog of N no-op jobs drained by the side's ``runworkers``
  (``--shape`` PxT, prefetch adaptive), once per ``--logging`` configuration: ``quiet`` (every
  benchmark's: ``django.tasks`` at WARNING) and ``default`` (no LOGGING setting: Django's
  default, what a user gets). Jobs/s and the workers' CPU per job from the first finished job
  to the last (scenario 1's measurement).
- ``relay``: M messages written with ``publish_many()`` (not timed), then
  ``skipqueue_relay --burst`` drains them to the shared RabbitMQ in a vhost of the run's own
  (``outbox_ab``'s measurement: messages/s and the relay's CPU per message from its start to
  its exit; a run fails unless every message reached the queue).
- ``flow``: F no-op jobs over K keys at concurrency limit L (``--flow K:L``), enqueued once
  by the side's code and restored with their keys' slots before each run, drained by
  ``runworkers`` of the same shape: jobs/s and CPU per job, as the drain.

It prints one line per run, then each side's median, min–max and interquartile range, the
after/before ratio of the medians, and the range of the rounds' own after/before ratios (each
round's pair ran back to back); the raw runs go to ``--out`` (docs/benchmarks/raw/ab.json by
default), which the page's A/B section shows.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.backlog import Backlog, stored_columns
from benchmarks.harness import DOCS_DIR, ROOT, interleaved
from benchmarks.procs import Fleet, server_cpu_seconds
from benchmarks.scenarios.drain import watch
from benchmarks.scenarios.outbox_ab import QUEUE, TOPIC, OutboxSide, relay, reset
from benchmarks.sides import WORK, _git, ab_parser, outcome, remove_worktrees, sides_of
from benchmarks.stats import percentile, ratio
from benchmarks.systems import System
from tests.support.brokers import RabbitQueue, rabbitmq_vhost

PEERS = Path("benchmarks") / "peers"
JOBS_SETTINGS = "benchmarks.peers.ours"
#: Keyed jobs are done once succeeded; waiting ones may be in any other state.
FLOW_REMAINING = "SELECT COUNT(*) FROM skipqueue_job WHERE status <> 'succeeded'"
FLOW_KEYS = "skipqueue_flow_key"
#: Run by each side's interpreter: M messages over K keys, a transaction per 1,000.
PUBLISH = """
import sys
import django
django.setup()
from django.db import transaction
from django_skipqueue.outbox import Message, publish_many
count, keys = (int(arg) for arg in sys.argv[1:3])
for start in range(0, count, 1000):
    with transaction.atomic():
        publish_many([Message("orders", {"order_id": n, "total": "12.50"}, key=f"order-{n % keys}")
                      for n in range(start, min(start + 1000, count))])
"""
#: Run by each side's interpreter: no flow key rows left, then F keyed jobs in bulk.
FLOW_FILL = """
import sys
import django
django.setup()
from django_skipqueue.models import FlowKey
from benchmarks.tasks import keyed_noop
FlowKey.objects.all().delete()
jobs, keys, limit = (int(arg) for arg in sys.argv[1:4])
task = keyed_noop.using(concurrency_limit=limit)
calls = [(task, [n % keys], {}) for n in range(jobs)]
for start in range(0, jobs, 1000):
    task.get_backend().enqueue_many(calls[start:start + 1000])
"""
FIGURES = {"drain": ("jobs_per_s", "cpu_ms_per_job"), "flow": ("jobs_per_s", "cpu_ms_per_job"),
           "relay": ("msgs_per_s", "cpu_us_per_msg")}  # fmt: skip


class AbSide(OutboxSide):
    """A side whose database serves the jobs and the outbox; settings from this checkout."""

    def __init__(self, name: str, rev: str, database: str) -> None:
        super().__init__(name, rev, database)
        self.checkout = WORK / f"ab-{name}-{self.sha[:10]}"
        self.jobs = replace(self.system, settings=JOBS_SETTINGS)

    def prepare(self) -> None:
        if not self.checkout.exists():
            _git("worktree", "add", "--detach", str(self.checkout), self.sha)
        for source in (ROOT / PEERS).glob("*.py"):
            shutil.copyfile(source, self.checkout / PEERS / source.name)
        super().prepare()

    def jobs_env(self, **extra: str) -> dict[str, str]:
        """The environment of this side's workers: the jobs' settings, its checkout's code."""
        env = self.jobs.env(**extra)
        env["PYTHONPATH"] = str(self.checkout)
        return env


class FlowBacklog(Backlog):
    """The keyed backlog and its flow keys' slots, both put back from snapshots before a drain.

    Filling it takes a slot per admitted job in ``FLOW_KEYS`` (seconds per thousand jobs on a
    loaded machine), so it is filled once per side and restored, as the drain's backlog is.
    """

    def __init__(self, system: System) -> None:
        super().__init__(replace(system, remaining_sql=FLOW_REMAINING))
        self._snap = "bench_snapshot_flow"

    def snapshot(self) -> None:
        super().snapshot()
        columns = stored_columns(self.db, FLOW_KEYS)
        self.execute(
            f"DROP TABLE IF EXISTS {self._snap}_key",
            f"CREATE TABLE {self._snap}_key LIKE {FLOW_KEYS}",
            f"INSERT INTO {self._snap}_key ({columns}) SELECT {columns} FROM {FLOW_KEYS}",
        )

    def restore(self) -> None:
        super().restore()
        columns = stored_columns(self.db, FLOW_KEYS)
        self.execute(
            "SET FOREIGN_KEY_CHECKS = 0",
            f"DELETE FROM {FLOW_KEYS}",
            f"INSERT INTO {FLOW_KEYS} ({columns}) SELECT {columns} FROM {self._snap}_key",
            "SET FOREIGN_KEY_CHECKS = 1",
        )


def drain(
    side: AbSide, backlog: Backlog, shape: str, count: int, cap: float, logging: str
) -> dict:
    """Drain ``backlog`` (restored from its snapshot unless it was just filled) once."""
    processes, threads = shape.split("x")
    command = side.jobs.django("runworkers", "--processes", processes, "--threads", threads)
    env = side.jobs_env(BENCH_WORKERS=processes, BENCH_LOGGING=logging)
    fleet = Fleet.start([command], env, WORK / "logs" / f"ab-{side.name}.log")
    try:
        return watch(backlog, fleet, partial(server_cpu_seconds, "mariadbd"), count, cap)
    finally:
        fleet.stop()


def flow_fill(side: AbSide, backlog: FlowBacklog, jobs: int, flow: str) -> None:
    """Enqueue the keyed jobs with the side's own code, then keep them and their keys' slots."""
    keys, limit = flow.split(":")
    backlog.empty()
    side.run("-c", FLOW_FILL, str(jobs), keys, limit)
    backlog.snapshot()


def measure(
    side: AbSide, config: str, args: Any, backlogs: dict, queue: RabbitQueue, url: str
) -> dict:
    """One run of ``config`` ("drain LOGGING", "relay" or "flow") on ``side``."""
    kind, _, logging = config.partition(" ")
    if kind == "drain":
        backlogs[side.name, "drain"].restore()
        return drain(side, backlogs[side.name, "drain"], args.shape, args.jobs, args.cap, logging)
    if kind == "flow":
        backlog = backlogs[side.name, "flow"]
        backlog.restore()
        return drain(side, backlog, args.shape, args.flow_jobs, args.flow_cap, "quiet")
    reset(side)
    side.run("-c", PUBLISH, str(args.messages), str(args.keys), timeout=600)
    return relay(side, queue, url, args.messages)


def spread(values: list[float]) -> dict[str, float | int | None]:
    """Median, min, max and the quartiles of one side's runs."""
    return {
        "median": percentile(values, 50),
        "min": min(values, default=None),
        "max": max(values, default=None),
        "q1": percentile(values, 25),
        "q3": percentile(values, 75),
        "runs": len(values),
    }


def summarise(runs: dict[str, dict[str, list[dict]]]) -> dict[str, dict[str, dict]]:
    """Per run and figure: each side's spread, after/before of the medians, the rounds' ratios."""
    table: dict[str, dict[str, dict]] = {}
    for config, by_side in runs.items():
        for key in FIGURES[config.split()[0]]:
            values = {n: [r.get(key) for r in by_side.get(n, [])] for n in ("before", "after")}
            sides = {n: spread([v for v in vs if v is not None]) for n, vs in values.items()}
            pairs = [
                a / b
                for b, a in zip(values["before"], values["after"], strict=False)
                if a is not None and b
            ]
            table.setdefault(config, {})[key] = {
                **sides,
                "after/before": ratio(sides["after"]["median"], sides["before"]["median"]),
                "rounds": spread(pairs),
            }
    return table


def main() -> None:
    parser = ab_parser(__doc__.splitlines()[0], rounds=5, db_prefix="h_bench_ab")
    parser.add_argument("--jobs", type=int, default=10_000, help="no-op jobs per drain")
    parser.add_argument("--shape", default="4x4", help="runworkers processes x threads")
    parser.add_argument("--cap", type=float, default=12.0, help="longest measured drain, s")
    parser.add_argument("--messages", type=int, default=5000, help="messages per relay run")
    parser.add_argument("--keys", type=int, default=20, help="message keys (as outbox_relay)")
    parser.add_argument("--flow-jobs", type=int, default=2000, help="keyed jobs per flow drain")
    parser.add_argument("--flow", default="10:4", help="flow keys:concurrency limit")
    parser.add_argument("--flow-cap", type=float, default=12.0, help="longest flow drain, s")
    parser.add_argument("--logging", default="quiet,default", help="drain LOGGING configs")
    parser.add_argument("--title", default="Before and after", help="the page section's title")
    parser.add_argument("--notes", default="", help="what the run shows, for the page")
    args = parser.parse_args()
    out = args.out or DOCS_DIR / "benchmarks" / "raw" / "ab.json"
    sides = sides_of(args, AbSide)
    configs = [*(f"drain {name}" for name in args.logging.split(",")), "relay", "flow"]
    started = {"at": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "loadavg": os.getloadavg()}
    runs: dict[str, dict[str, list[dict]]] = {}
    try:
        backlogs: dict[tuple[str, str], Backlog] = {}
        for side in sides:
            side.prepare()
            backlogs[side.name, "drain"] = Backlog(side.jobs)
            backlogs[side.name, "drain"].empty()
            side.enqueue(args.jobs)
            backlogs[side.name, "drain"].snapshot()
            backlogs[side.name, "flow"] = FlowBacklog(side.jobs)
            flow_fill(side, backlogs[side.name, "flow"], args.flow_jobs, args.flow)
        with rabbitmq_vhost() as url:
            queue = RabbitQueue(url, TOPIC, QUEUE)
            try:
                for rnd, config, side in interleaved(args.rounds, configs, sides):
                    result = measure(side, config, args, backlogs, queue, url)
                    runs.setdefault(config, {}).setdefault(side.name, []).append(result)
                    brief = ", ".join(
                        f"{k}={v:.3f}" for k, v in result.items() if isinstance(v, float)
                    )
                    at, load = time.strftime("%H:%M:%S"), os.getloadavg()[0]
                    print(f"{at} round {rnd + 1} {config} {side.name}: {brief}; load {load:.1f}")
                    sys.stdout.flush()
            finally:
                queue.close()
    finally:
        remove_worktrees(sides)
    result = {
        **outcome(sides, started, args),
        "title": args.title,
        "notes": args.notes,
        "configs": configs,
        "summary": summarise(runs),
        "runs": runs,
    }
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(json.dumps(result["summary"], indent=1))


if __name__ == "__main__":
    main()
