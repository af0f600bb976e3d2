"""Two commits of the package side by side: a worktree, a database and a process environment each.

What every two-commit A/B shares (``before_after``, ``hotpath_ab``, ``outbox_ab``, ``ab``):
each side's processes run that side's ``django_skipqueue`` and ``benchmarks`` from a detached
git worktree outside the source tree, on a database of its own; the options, the sides, the
worktrees' removal and the header of a result.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from benchmarks.machine import machine
from benchmarks.systems import ROOT, SYSTEMS, System

#: Outside the source tree: tests that read every module of it must not find the checkouts.
WORK = Path(tempfile.gettempdir()) / "skipqueue-before-after"


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


def medians(runs: dict[str, dict[str, list[dict]]]) -> dict[str, dict[str, float | None]]:
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
