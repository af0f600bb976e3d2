"""Scenario 7, an idle worker: its CPU (share of one core) and memory, with an empty queue.

One worker process per system with its default threads or pool, started on an empty
queue; after a settling time its CPU is measured over a window, together with the
resident memory (RSS) of all its processes (a supervisor and its children count
together). The server's CPU over the window is in the raw results only: the shared server
also served other work while idle workers were measured. The memory after a 20,000-job
drain is in the drain results.
"""

from __future__ import annotations

import time

from benchmarks.backlog import Backlog
from benchmarks.harness import Context, interleaved
from benchmarks.procs import Fleet, server_cpu_seconds
from benchmarks.stats import summary

SETTLE = 6.0


def run(ctx: Context) -> dict[str, object]:
    window = ctx.scale(15, 5)
    systems = ctx.chosen(("ours", "raw", "tasksdb", "ox", "q2", "celery"))
    runs: dict[str, list[dict]] = {}
    for rep, _, system in interleaved(ctx.reps, [None], systems):
        result = _measure(ctx, system, window)
        runs.setdefault(system.name, []).append(result)
        ctx.say(
            f"idle rep {rep + 1} {system.label}: {result['cpu_percent']:.2f}% of a core, "
            f"{result['rss_mib_total']:.0f} MiB in {result['processes']} processes"
        )
    keys = ("cpu_percent", "server_cpu_percent", "rss_mib_total", "processes")
    table = {name: {k: summary([r[k] for r in rs]) for k in keys} for name, rs in runs.items()}
    return {"window_s": window, "runs": runs, "table": table}


def _measure(ctx: Context, system, window: float) -> dict[str, float]:
    Backlog(system).empty()
    threads = 4 if system.name in ("ours", "ox") else 1
    commands = system.worker_commands(1, threads)
    env = system.env(BENCH_WORKERS="1")
    fleet = Fleet.start(commands, env, ctx.work / "logs" / f"idle-{system.name}.log")
    server = "redis-server" if system.name == "celery" else "mariadbd"
    try:
        time.sleep(SETTLE)
        cpu0, server0, began = fleet.cpu_seconds(), server_cpu_seconds(server), time.monotonic()
        time.sleep(window)
        elapsed = time.monotonic() - began
        cpu, server_cpu = fleet.cpu_seconds() - cpu0, server_cpu_seconds(server) - server0
        rss = fleet.rss_mib()
    finally:
        fleet.stop()
    return {
        "cpu_percent": 100 * cpu / elapsed,
        "server_cpu_percent": 100 * server_cpu / elapsed,
        "rss_mib_total": sum(rss),
        "processes": len(rss),
    }
