"""Scenario 4, claim cost against history: claims with 0, 100,000 and 1,000,000 finished rows.

The finished rows (succeeded a day ago) sit in the same table and queue as the ready jobs.
The claim index leads with the status, so a claim should neither read nor lock them: its
time and the index records it reads (MariaDB Handler_read_* deltas) should not grow.
The history is added in steps (0, then to 100k, then to 1M); at each size, each repetition
refills the ready jobs and times 300 claims of 10 jobs, in one process. The history cannot
be interleaved (it only grows), so the sizes run one after the other.
"""

from __future__ import annotations

from benchmarks.backlog import Backlog
from benchmarks.harness import Context, agent
from benchmarks.stats import ratio, summary
from benchmarks.systems import SYSTEMS

LIMIT = 10


def run(ctx: Context) -> dict[str, object]:
    if "ours" not in ctx.systems:
        return {}
    system = SYSTEMS["ours"]
    backlog = Backlog(system)
    backlog.empty()
    sizes = [0, ctx.scale(100_000, 10_000), ctx.scale(1_000_000, 50_000)]
    claims = ctx.scale(300, 50)
    runs: dict[int, list[dict]] = {}
    have = 0
    for size in sizes:
        fill = agent(system, "history", str(size - have)) if size > have else {"seconds": 0}
        have = size
        ctx.say(f"history: {size} finished rows ({fill['seconds']:.1f} s to add)")
        for rep in range(ctx.reps):
            backlog.execute("DELETE FROM skipqueue_job WHERE status IN ('ready', 'claimed')")
            agent(system, "ready", str(claims * LIMIT + 2 * LIMIT))
            result = agent(system, "claimcost", str(claims), str(LIMIT))
            runs.setdefault(size, []).append(result)
            ctx.say(f"history {size} rep {rep + 1}: {result}")
    backlog.empty()
    table = {
        size: {
            key: summary([r.get(key) for r in results])
            for key in ("claim_ms_median", "claim_ms_p95", "records_per_claim")
        }
        for size, results in runs.items()
    }
    empty, biggest = table[sizes[0]], table[sizes[-1]]
    return {
        "limit": LIMIT,
        "claims": claims,
        "sizes": sizes,
        "runs": runs,
        "table": table,
        "ratio_time": ratio(
            biggest["claim_ms_median"]["median"], empty["claim_ms_median"]["median"]
        ),
        "ratio_records": ratio(
            biggest["records_per_claim"]["median"], empty["records_per_claim"]["median"]
        ),
    }
