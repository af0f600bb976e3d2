"""Scenario 5, purge during a drain: the drain's throughput and claim latency, with and without.

Each run starts from the same table: 500,000 finished rows (a day old) plus 20,000 ready
jobs, drained by 2 processes of 4 threads.
``with purge`` starts ``skipqueue_purge --older-than 1h`` (default chunk and pause) together
with the workers, so it deletes history throughout the drain. Claim latency is what the
worker processes record themselves (the workers table: the median of their p50 and the
worst p95 over each process's last 500 claims).
"""

from __future__ import annotations

from benchmarks.backlog import Backlog
from benchmarks.harness import Context, agent
from benchmarks.procs import Fleet
from benchmarks.scenarios.drain import Shape, measure
from benchmarks.stats import ratio, summary
from benchmarks.systems import SYSTEMS

SHAPE = Shape(2, 4)
VARIANTS = ("without", "with")


def run(ctx: Context) -> dict[str, object]:
    if "ours" not in ctx.systems:
        return {}
    system = SYSTEMS["ours"]
    backlog = Backlog(system)
    count, history = ctx.scale(20_000, 2_000), ctx.scale(500_000, 20_000)
    cap = ctx.scale(60, 20)
    runs: dict[str, list[dict]] = {}
    for rep in range(ctx.reps):
        order = VARIANTS if rep % 2 == 0 else tuple(reversed(VARIANTS))
        for variant in order:
            _prepare(backlog, count, history)
            purge = _start_purge(ctx) if variant == "with" else None
            try:
                result = measure(ctx, system, backlog, SHAPE, count, cap, refill=False)
            finally:
                purged = _stop_purge(purge, backlog, history)
            result |= agent(system, "workers") | {"history_deleted": purged}
            runs.setdefault(variant, []).append(result)
            ctx.say(
                f"purge {variant} rep {rep + 1}: {result.get('jobs_per_s', 0):.0f} jobs/s, "
                f"claim p50 {result.get('claim_p50_ms')} ms, purged {purged}"
            )
    backlog.empty()
    keys = ("jobs_per_s", "claim_p50_ms", "claim_p95_ms", "history_deleted")
    table = {v: {k: summary([r.get(k) for r in rs]) for k in keys} for v, rs in runs.items()}
    return {
        "count": count,
        "history": history,
        "shape": SHAPE.label,
        "runs": runs,
        "table": table,
        "ratio_throughput": ratio(
            table["with"]["jobs_per_s"]["median"], table["without"]["jobs_per_s"]["median"]
        ),
    }


def _prepare(backlog: Backlog, count: int, history: int) -> None:
    system = backlog.system
    backlog.empty()
    agent(system, "history", str(history))
    agent(system, "enqueue", "bulk", str(count))


def _start_purge(ctx: Context) -> Fleet:
    system = SYSTEMS["ours"]
    command = system.django("skipqueue_purge", "--older-than", "1h")
    return Fleet.start([command], system.env(), ctx.work / "logs" / "purge.log")


def _stop_purge(purge: Fleet | None, backlog: Backlog, history: int) -> int:
    if purge is not None:
        purge.stop()
    left = backlog.scalar(
        "SELECT COUNT(*) FROM skipqueue_job WHERE status = 'succeeded' "
        "AND finished_at < UTC_TIMESTAMP(6) - INTERVAL 1 HOUR"
    )
    return history - left
