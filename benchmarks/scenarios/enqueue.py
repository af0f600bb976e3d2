"""Scenario 2, enqueue: jobs per second one by one, many in one transaction, and in bulk.

``single``: one enqueue per transaction (autocommit), so each pays a commit (with
``innodb_flush_log_at_trx_commit=1``, a log flush to disk). ``txn``: N enqueues in one
transaction, one INSERT each. ``bulk``: the system's own bulk API (multi-row INSERTs) where
it has one. No workers run; the queue is emptied before each run.
"""

from __future__ import annotations

from benchmarks.backlog import Backlog
from benchmarks.harness import Context, agent, interleaved
from benchmarks.stats import summary
from benchmarks.systems import System

MODES = ("single", "txn", "bulk")


def mode_counts(ctx: Context) -> dict[str, int]:
    """Jobs per run of each mode (the binlog scenario uses the same counts)."""
    return {
        "single": ctx.scale(2_000, 200),
        "txn": ctx.scale(5_000, 500),
        "bulk": ctx.scale(20_000, 2_000),
    }


def rate(system: System, mode: str, count: int) -> float | None:
    """Empty the system's queue, enqueue ``count`` jobs in ``mode``; return jobs per second."""
    Backlog(system).empty()
    seconds = agent(system, "enqueue", mode, str(count))["seconds"]
    return count / seconds if seconds else None


def run(ctx: Context) -> dict[str, object]:
    counts = mode_counts(ctx)
    systems = ctx.chosen(("ours", "raw", "tasksdb", "ox", "q2", "celery"))
    runs: dict[str, dict[str, list[float | None]]] = {}
    for rep, mode, system in interleaved(ctx.reps, MODES, systems):
        per_s = rate(system, mode, counts[mode])
        runs.setdefault(mode, {}).setdefault(system.name, []).append(per_s)
        if per_s is not None:
            ctx.say(f"enqueue {mode} rep {rep + 1} {system.label}: {per_s:.0f} jobs/s")
    for system in systems:
        Backlog(system).empty()
    table = {
        mode: {name: summary(rates) for name, rates in by_system.items()}
        for mode, by_system in runs.items()
    }
    return {"counts": counts, "runs": runs, "table": table}
