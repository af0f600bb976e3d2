"""Scenario 1, drain: N no-op jobs enqueued first, then W worker processes until all are done.

Throughput is measured from the first finished job to the last (worker start-up is left
out), by polling the system's backlog every 50 ms. CPU per job is the CPU the worker
processes (and their children) used in that window, divided by the jobs done in it; the
database server's (or Redis's) CPU per job is reported beside it. A peer too slow to drain
N jobs within the time cap is measured over the jobs it finished by then (steady state).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from benchmarks.backlog import Backlog
from benchmarks.harness import Context, agent, interleaved
from benchmarks.procs import Fleet, server_cpu_seconds
from benchmarks.stats import summary
from benchmarks.systems import System

POLL = 0.05
START_TIMEOUT = 60.0


@dataclass(frozen=True)
class Shape:
    processes: int
    threads: int

    @property
    def label(self) -> str:
        return f"{self.processes}x{self.threads}"


def fill(ctx: Context, system: System, count: int) -> Backlog:
    """Enqueue ``count`` no-op jobs the fastest way the system offers; keep a snapshot."""
    backlog = Backlog(system)
    backlog.empty()
    mode = "bulk" if system.bulk else ("txn" if system.name != "celery" else "single")
    agent(system, "enqueue", mode, str(count))
    backlog.snapshot()
    ctx.say(f"drain: {system.label}: {count} jobs enqueued ({mode}) and snapshotted")
    return backlog


def measure(
    ctx: Context,
    system: System,
    backlog: Backlog,
    shape: Shape,
    count: int,
    cap: float,
    env: dict[str, str] | None = None,
    refill: bool = True,
    server_pid: int | None = None,
) -> dict[str, object]:
    """Refill the queue, start the workers, time the drain; return one run's figures.

    ``server_pid`` names the database server whose CPU is counted when it is not the shared
    one (a private server that a scenario started).
    """
    if refill:
        backlog.restore()
    name = "redis-server" if system.name == "celery" else "mariadbd"
    server = partial(server_cpu_seconds, name, server_pid)
    log = ctx.work / "logs" / f"drain-{system.name}-{shape.label}.log"
    extra = {"BENCH_WORKERS": str(shape.processes), **(env or {})}
    fleet = Fleet.start(
        system.worker_commands(shape.processes, shape.threads), system.env(**extra), log
    )
    try:
        return watch(backlog, fleet, server, count, cap)
    finally:
        fleet.stop()


def watch(
    backlog: Backlog, fleet: Fleet, server: Callable[[], float], count: int, cap: float
) -> dict:
    """Time a started fleet's drain: from the first finished job to an empty queue or ``cap``.

    Every drain of the package measures this way (the A/B scenarios included), so their
    figures compare.
    """
    launched = time.monotonic()
    first: tuple[float, int, float, float] | None = None
    while True:
        left = backlog.remaining()
        now = time.monotonic()
        if first is None and left < count:
            first = (now, left, fleet.cpu_seconds(), server())
        if first is None and now - launched > START_TIMEOUT:
            return {"error": "no job finished within the start timeout"}
        if first is not None and (left == 0 or now - first[0] > cap):
            break
        if not fleet.alive():
            return {"error": "the workers exited early"}
        time.sleep(POLL)
    cpu, server_cpu = fleet.cpu_seconds(), server()
    rss = fleet.rss_mib()
    t0, left0, cpu0, server0 = first
    done = left0 - left
    elapsed = now - t0
    return {
        "jobs": done,
        "seconds": elapsed,
        "jobs_per_s": done / elapsed if elapsed > 0 else None,
        "cpu_ms_per_job": 1000 * (cpu - cpu0) / done if done else None,
        "server_cpu_ms_per_job": 1000 * (server_cpu - server0) / done if done else None,
        "capped": left > 0,
        "startup_s": t0 - launched,
        "rss_mib": rss,
    }


def shapes(ctx: Context) -> list[Shape]:
    """W = 1, 2, 4 processes of one thread, and the threaded shape runworkers defaults to."""
    if ctx.quick:
        return [Shape(1, 1), Shape(2, 4)]
    return [Shape(1, 1), Shape(2, 1), Shape(4, 1), Shape(2, 4), Shape(4, 4)]


def run(ctx: Context) -> dict[str, object]:
    count = ctx.scale(20_000, 2_000)
    cap = ctx.scale(12, 5)
    systems = ctx.chosen(("ours", "raw", "tasksdb", "ox", "q2", "celery"))
    backlogs = {system.name: fill(ctx, system, count) for system in systems}
    runs: dict[str, dict[str, list[dict]]] = {}
    configs = shapes(ctx)
    for rep, shape, system in interleaved(ctx.reps, configs, systems):
        if shape.threads > 1 and not system.threaded:
            continue
        result = measure(ctx, system, backlogs[system.name], shape, count, cap)
        runs.setdefault(shape.label, {}).setdefault(system.name, []).append(result)
        ctx.say(f"drain {shape.label} rep {rep + 1} {system.label}: {_brief(result)}")
    return {"count": count, "cap_s": cap, "runs": runs, "table": _table(runs)}


def _brief(result: dict) -> str:
    if "error" in result:
        return result["error"]
    capped = " (capped)" if result["capped"] else ""
    return f"{result['jobs_per_s']:.0f} jobs/s, {result['cpu_ms_per_job']:.3f} ms CPU/job{capped}"


def _table(runs: dict[str, dict[str, list[dict]]]) -> dict[str, dict[str, dict]]:
    table: dict[str, dict[str, dict]] = {}
    for shape, by_system in runs.items():
        for name, results in by_system.items():
            table.setdefault(shape, {})[name] = {
                key: summary([r.get(key) for r in results])
                for key in ("jobs_per_s", "cpu_ms_per_job", "server_cpu_ms_per_job")
            } | {"capped": any(r.get("capped") for r in results)}
    return table
