"""Two commits of the package, interleaved in one invocation: the 4 x 4 drain and the batch sweep.

``python -m benchmarks before_after --before REV [--after REV]`` checks each commit out in a
git worktree of its own (detached, in a temporary directory), gives each its
own database, and runs, round after round, the drain of scenario 1 at 4 processes x 4
threads and the sweep of scenario 6 (one process claiming B jobs at a time, no worker loop)
for both, alternating which goes first (AB, BA, ...), so that a change of the machine's load
hits both alike. Each side's processes run that side's code: its ``django_skipqueue`` and its
``benchmarks`` (the enqueue agent, ``benchmarks.cycle``), from a directory holding neither, so
nothing of this checkout leaks in (the run checks where each side imports them from).

It prints one line per run and, at the end, the medians of each side and after/before
ratios (throughput: above 1 is faster after; CPU per job: below 1 is cheaper after), with the
machine and its load average at the start and the end, as JSON (``--out`` writes it to a file
too). Measurement code (backlog counting, the worker fleet, CPU accounting) is this
checkout's, the same for both sides.
"""

from __future__ import annotations

import json
import os
import sys
import time
from functools import partial
from pathlib import Path

from benchmarks.backlog import Backlog
from benchmarks.harness import interleaved
from benchmarks.procs import Fleet, server_cpu_seconds
from benchmarks.scenarios.drain import watch
from benchmarks.sides import (
    WORK,
    Side,
    ab_parser,
    medians,
    outcome,
    remove_worktrees,
    sides_of,
)

#: Sweep configurations: jobs claimed per transaction / how completions commit.
SWEEP = ("1/each", "4/batch", "16/batch", "64/batch")


def drain(side: Side, backlog: Backlog, count: int, cap: float, log: Path) -> dict:
    """One 4 x 4 drain of the snapshotted backlog (scenario 1's measurement)."""
    backlog.restore()
    commands = side.system.worker_commands(4, 4)
    env = side.env(BENCH_WORKERS="4")
    fleet = Fleet.start(commands, env, log)
    try:
        return watch(backlog, fleet, partial(server_cpu_seconds, "mariadbd"), count, cap)
    finally:
        fleet.stop()


def sweep(side: Side, backlog: Backlog, config: str, count: int) -> dict:
    """One batch-sweep run: fill, then ``benchmarks.cycle`` drains it (scenario 6)."""
    size, mode = config.split("/")
    backlog.empty()
    side.enqueue(count)
    out = side.run("-m", "benchmarks.cycle", "ours", "--claim", size, "--complete", mode)
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = ab_parser(__doc__.splitlines()[0], rounds=3, db_prefix="sq_ba")
    parser.add_argument("--drain-jobs", type=int, default=6000)
    parser.add_argument("--drain-cap", type=float, default=12.0)
    parser.add_argument("--sweep-jobs", type=int, default=2000)
    parser.add_argument("--sweep", default=",".join(SWEEP), help="B/each|batch, comma-separated")
    parser.add_argument("--keep", action="store_true", help="keep the two worktrees")
    args = parser.parse_args()
    sides = sides_of(args, Side)
    started = {"at": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "loadavg": os.getloadavg()}
    runs: dict[str, dict[str, list[dict]]] = {}
    try:
        for side in sides:
            side.prepare()
        backlogs = {side.name: Backlog(side.system) for side in sides}
        for side in sides:
            backlogs[side.name].empty()
            side.enqueue(args.drain_jobs)
            backlogs[side.name].snapshot()
        configs = ["drain 4x4", *(f"sweep {c}" for c in args.sweep.split(","))]
        for rnd, config, side in interleaved(args.rounds, configs, sides):
            backlog = backlogs[side.name]
            if config == "drain 4x4":
                log = WORK / "logs" / f"drain-{side.name}.log"
                result = drain(side, backlog, args.drain_jobs, args.drain_cap, log)
            else:
                result = sweep(side, backlog, config.split()[1], args.sweep_jobs)
            runs.setdefault(config, {}).setdefault(side.name, []).append(result)
            brief = ", ".join(f"{k}={v:.3f}" for k, v in result.items() if isinstance(v, float))
            print(f"{time.strftime('%H:%M:%S')} round {rnd + 1} {config} {side.name}: {brief}")
            sys.stdout.flush()
    finally:
        if not args.keep:
            remove_worktrees(sides)
    result = {**outcome(sides, started, args), "medians": medians(runs), "runs": runs}
    text = json.dumps(result, indent=1, default=str)
    if args.out:
        args.out.write_text(text + "\n")
    print(json.dumps(result["medians"], indent=1))


if __name__ == "__main__":
    main()
