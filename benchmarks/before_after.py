"""Two commits of the package, interleaved in one invocation: the 4 x 4 drain and the batch sweep.

``python -m benchmarks.before_after --before REV [--after REV]`` checks each commit out in a
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

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

from benchmarks.backlog import Backlog
from benchmarks.harness import interleaved
from benchmarks.machine import machine
from benchmarks.procs import Fleet, server_cpu_seconds
from benchmarks.scenarios.drain import _watch
from benchmarks.systems import ROOT, SYSTEMS, System

#: Outside the source tree: tests that read every module of it must not find the checkouts.
WORK = Path(tempfile.gettempdir()) / "skipqueue-before-after"
#: Sweep configurations: jobs claimed per transaction / how completions commit.
SWEEP = ("1/each", "4/batch", "16/batch", "64/batch")


class Side:
    """One commit: its checkout, its database, the environment its processes run in."""

    def __init__(self, name: str, rev: str, database: str) -> None:
        self.name = name
        self.sha = _git("rev-parse", rev).strip()
        self.checkout = WORK / f"{name}-{self.sha[:10]}"
        self.system: System = replace(SYSTEMS["ours"], database=database)

    def prepare(self) -> None:
        if not self.checkout.exists():
            _git("worktree", "add", "--detach", str(self.checkout), self.sha)
        self.check_imports()
        self.run("-m", "benchmarks.agent", "ours", "setup")

    def env(self, **extra: str) -> dict[str, str]:
        env = self.system.env(**extra)
        env["PYTHONPATH"] = str(self.checkout)
        return env

    def run(self, *args: str, timeout: float = 900) -> str:
        done = subprocess.run(
            [sys.executable, *args],
            env=self.env(),
            cwd=WORK,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{self.name}: {args} failed:\n{done.stderr[-3000:]}")
        return done.stdout

    def check_imports(self) -> None:
        code = "import benchmarks, django_skipqueue as d; print(d.__file__, benchmarks.__file__)"
        for path in self.run("-c", code).split():
            if not Path(path).is_relative_to(self.checkout):
                raise RuntimeError(f"{self.name} imports {path}, not its checkout's code")

    def enqueue(self, count: int) -> None:
        self.run("-m", "benchmarks.agent", "ours", "enqueue", "bulk", str(count))


def drain(side: Side, backlog: Backlog, count: int, cap: float, log: Path) -> dict:
    """One 4 x 4 drain of the snapshotted backlog (scenario 1's measurement)."""
    backlog.restore()
    commands = side.system.worker_commands(4, 4)
    env = side.env(BENCH_WORKERS="4")
    fleet = Fleet.start(commands, env, log)
    try:
        return _watch(backlog, fleet, partial(server_cpu_seconds, "mariadbd"), count, cap)
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
    result = {**outcome(sides, started, args), "medians": _medians(runs), "runs": runs}
    text = json.dumps(result, indent=1, default=str)
    if args.out:
        args.out.write_text(text + "\n")
    print(json.dumps(result["medians"], indent=1))


def _medians(runs: dict[str, dict[str, list[dict]]]) -> dict[str, dict[str, float | None]]:
    table: dict[str, dict[str, float | None]] = {}
    for config, by_side in runs.items():
        row: dict[str, float | None] = {}
        for key in ("jobs_per_s", "cpu_ms_per_job"):
            for name in ("before", "after"):
                values = [r[key] for r in by_side.get(name, []) if r.get(key) is not None]
                row[f"{key} {name}"] = statistics.median(values) if values else None
            before, after = row[f"{key} before"], row[f"{key} after"]
            row[f"{key} after/before"] = after / before if before and after else None
        table[config] = row
    return table


def ab_parser(description: str, *, rounds: int, db_prefix: str) -> argparse.ArgumentParser:
    """The options of every two-commit A/B: the commits, the rounds, the databases, --out."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--before", required=True, help="the commit before the change")
    parser.add_argument("--after", default="HEAD", help="the commit after it (HEAD)")
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--db-prefix", default=db_prefix, help="databases: PREFIX_before, _after")
    parser.add_argument("--out", type=Path, help="also write the JSON result here")
    return parser


def sides_of[S: Side](args: argparse.Namespace, kind: type[S]) -> list[S]:
    """The two sides of ``args``, from WORK, which this process makes its directory.

    The processes inherit it, and ``python -m django`` puts it first on sys.path: it must
    hold no django_skipqueue of its own.
    """
    WORK.mkdir(parents=True, exist_ok=True)
    os.chdir(WORK)
    return [
        kind("before", args.before, f"{args.db_prefix}_before"),
        kind("after", args.after, f"{args.db_prefix}_after"),
    ]


def remove_worktrees(sides: Sequence[Side]) -> None:
    """Remove the sides' worktrees (also after a failed run: they hold a whole checkout)."""
    for side in sides:
        if side.checkout.exists():
            _git("worktree", "remove", "--force", str(side.checkout))


def outcome(sides: Sequence[Side], started: dict, args: argparse.Namespace) -> dict[str, object]:
    """What an A/B result says besides its figures: the commits, when and on what it ran."""
    return {
        "before": sides[0].sha,
        "after": sides[1].sha,
        "started": started,
        "ended": {"at": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "loadavg": os.getloadavg()},
        "machine": machine(),
        "settings": vars(args) | {"out": str(args.out) if args.out else None},
    }


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


if __name__ == "__main__":
    main()


def section(result: dict) -> str:
    """The section of docs/benchmarks.md for the last run (its JSON in raw/before_after.json)."""
    from benchmarks.report import table

    def figure(value: float | None, digits: int) -> str:
        return "–" if value is None else f"{value:,.{digits}f}"

    rows = []
    for config, row in result["medians"].items():
        rows.append(
            [
                config,
                figure(row["jobs_per_s before"], 0),
                figure(row["jobs_per_s after"], 0),
                figure(row["jobs_per_s after/before"], 2) + "×",
                figure(row["cpu_ms_per_job before"], 3),
                figure(row["cpu_ms_per_job after"], 3),
                figure(row["cpu_ms_per_job after/before"], 2) + "×",
            ]
        )
    header = [
        "run",
        "jobs/s before",
        "jobs/s after",
        "after ÷ before",
        "CPU ms/job before",
        "CPU ms/job after",
        "after ÷ before",
    ]
    settings = result["settings"]
    machine_ = result["machine"]
    start, end = result["started"], result["ended"]
    load = ", ".join(f"{x:.1f}" for x in start["loadavg"])
    load_end = ", ".join(f"{x:.1f}" for x in end["loadavg"])
    order = ", ".join("BA" if r % 2 else "AB" for r in range(settings["rounds"]))
    return f"""
## Before and after the layout by process role (issue 13)

`python -m benchmarks.before_after --before {result["before"][:7]} --after
{result["after"][:7]} --rounds {settings["rounds"]}`: the commit before the layout moves
({result["before"][:10]}) and the code after them ({result["after"][:10]}), each checked out
in a git worktree of its own with a database of its own, run interleaved in one invocation
({order}): the 4 × 4 drain of scenario 1 ({settings["drain_jobs"]:,} jobs, measured over
at most {settings["drain_cap"]:g} s after the first finished job) and the batch sweep of
scenario 6 ({settings["sweep_jobs"]:,} jobs per run, B jobs per claim). Medians of
{settings["rounds"]} rounds; throughput above 1× is faster after, CPU (the worker processes'
or the sweep process's, per job) below 1× is cheaper after.

{table(header, rows)}

Measured {start["at"]} to {end["at"]} on {machine_["cpu"]}, {machine_["cores"]} cores,
{machine_["ram_gib"]} GiB, Python {machine_["python"]}, the shared MariaDB on 127.0.0.1. Load
average at the start {load}, at the end {load_end} (the raw runs are in
`docs/benchmarks/raw/before_after.json`); the rounds' interleaving makes a change of the load
hit both sides alike, not evenly within a round.

{result.get("notes", "")}
"""
