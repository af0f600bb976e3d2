"""Scenario 6, batch sizes: one process claiming B jobs at a time, completing each or all.

No worker loop, no threads: ``benchmarks.cycle`` claims a batch, runs its no-op jobs and
records them, for django-skipqueue (the worker's own calls) and the raw SQL reference
(the same statements by hand). ``each`` commits every completion on its own; ``batch``
records the whole claimed batch in one transaction, as a worker does.
"""

from __future__ import annotations

import json
import subprocess

from benchmarks.backlog import Backlog
from benchmarks.harness import Context, agent, interleaved
from benchmarks.stats import ratio, summary
from benchmarks.systems import SYSTEMS

COMPLETIONS = ("each", "batch")


def run(ctx: Context) -> dict[str, object]:
    systems = ctx.chosen(("ours", "raw"))
    if not systems:
        return {}
    sizes = [1, 16] if ctx.quick else [1, 4, 16, 64, 256]
    count = ctx.scale(4_000, 400)
    configs = [(size, mode) for size in sizes for mode in COMPLETIONS]
    runs: dict[str, dict[str, list[dict]]] = {}
    for rep, (size, mode), system in interleaved(ctx.reps, configs, systems):
        Backlog(system).empty()
        agent(system, "enqueue", "bulk", str(count))
        result = _cycle(system.name, size, mode)
        runs.setdefault(f"{size}/{mode}", {}).setdefault(system.name, []).append(result)
        if result.get("error"):
            ctx.say(f"sweep B={size} {mode} rep {rep + 1} {system.label}: failed")
            continue
        ctx.say(
            f"sweep B={size} {mode} rep {rep + 1} {system.label}: "
            f"{result['jobs_per_s']:.0f} jobs/s, {result['cpu_ms_per_job']:.3f} ms CPU/job"
        )
    Backlog(SYSTEMS["ours"]).empty()
    table: dict[str, dict[str, dict]] = {
        config: {
            name: {
                key: summary([r.get(key) for r in results])
                for key in ("jobs_per_s", "cpu_ms_per_job")
            }
            for name, results in by_system.items()
        }
        for config, by_system in runs.items()
    }
    for by_system in table.values():
        if "ours" in by_system and "raw" in by_system:
            by_system["ours"]["vs_raw"] = ratio(
                by_system["ours"]["jobs_per_s"]["median"], by_system["raw"]["jobs_per_s"]["median"]
            )
    return {"sizes": sizes, "count": count, "runs": runs, "table": table}


def _cycle(name: str, size: int, mode: str) -> dict:
    system = SYSTEMS[name]
    command = [
        system.python,
        "-m",
        "benchmarks.cycle",
        name,
        "--claim",
        str(size),
        "--complete",
        mode,
    ]
    done = subprocess.run(
        command, env=system.env(), capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0:
        return {"error": done.stderr[-2000:], "jobs_per_s": None, "cpu_ms_per_job": None}
    return json.loads(done.stdout.strip().splitlines()[-1])
