"""Worker CPU per no-op job before and after a change of the hot path, interleaved (issue 23).

``python -m benchmarks hotpath_ab --before REV [--after REV] [--rounds 3]`` checks both commits
out (as :mod:`benchmarks.sides` has it: a worktree and a database each, every process
running its side's code) and drains the same snapshotted backlog of no-op jobs with
``runworkers`` in several shapes (processes x threads, prefetch), round after round, the sides
alternating which goes first. Prints one line per run, then the medians and after/before
ratios as JSON (``--out`` writes the whole result too): throughput above 1 is faster after,
worker CPU per job below 1 is cheaper after.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from functools import partial

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


@dataclass(frozen=True)
class Shape:
    """A worker shape: processes x threads, and ``--prefetch`` (auto, 0 or a number)."""

    processes: int
    threads: int
    prefetch: str = "auto"

    @property
    def label(self) -> str:
        return f"{self.processes}x{self.threads} prefetch {self.prefetch}"

    @classmethod
    def parse(cls, text: str) -> Shape:
        shape, _, prefetch = text.partition(":")
        processes, threads = shape.split("x")
        return cls(int(processes), int(threads), prefetch or "auto")


def drain(side: Side, backlog: Backlog, shape: Shape, count: int, cap: float) -> dict:
    """Drain the snapshotted backlog once with this side's ``runworkers`` in ``shape``."""
    backlog.restore()
    command = side.system.django(
        "runworkers",
        "--processes", str(shape.processes),
        "--threads", str(shape.threads),
        "--prefetch", shape.prefetch,
    )  # fmt: skip
    env = side.env(BENCH_WORKERS=str(shape.processes))
    log = WORK / "logs" / f"hotpath-{side.name}.log"
    fleet = Fleet.start([command], env, log)
    try:
        return watch(backlog, fleet, partial(server_cpu_seconds, "mariadbd"), count, cap)
    finally:
        fleet.stop()


def main() -> None:
    parser = ab_parser(__doc__.splitlines()[0], rounds=3, db_prefix="sq_hp")
    parser.add_argument("--jobs", type=int, default=6000)
    parser.add_argument("--cap", type=float, default=12.0, help="longest measured seconds")
    parser.add_argument(
        "--shapes", default="1x1,4x4,4x1:50", help="PxT[:prefetch], comma-separated"
    )
    args = parser.parse_args()
    sides = sides_of(args, Side)
    shapes = [Shape.parse(text) for text in args.shapes.split(",")]
    started = {"at": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "loadavg": os.getloadavg()}
    runs: dict[str, dict[str, list[dict]]] = {}
    try:
        for side in sides:
            side.prepare()
        backlogs = {side.name: Backlog(side.system) for side in sides}
        for side in sides:
            backlogs[side.name].empty()
            side.enqueue(args.jobs)
            backlogs[side.name].snapshot()
        for rnd, shape, side in interleaved(args.rounds, shapes, sides):
            result = drain(side, backlogs[side.name], shape, args.jobs, args.cap)
            runs.setdefault(shape.label, {}).setdefault(side.name, []).append(result)
            brief = ", ".join(f"{k}={v:.3f}" for k, v in result.items() if isinstance(v, float))
            at = time.strftime("%H:%M:%S")
            print(f"{at} round {rnd + 1} {shape.label} {side.name}: {brief}")
            sys.stdout.flush()
    finally:
        remove_worktrees(sides)
    result = {**outcome(sides, started, args), "medians": medians(runs), "runs": runs}
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(json.dumps(result["medians"], indent=1))


if __name__ == "__main__":
    main()
