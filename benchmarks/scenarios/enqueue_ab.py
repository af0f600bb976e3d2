"""Single or bulk enqueue (issue 23): this code against the code before, Celery's ``.delay()``
and raw INSERTs, interleaved in one invocation.

``python -m benchmarks enqueue_ab [--base REV] [--rounds 7] [--calls 2000] [--mode bulk]``

Each measurement is one child process that makes ``--calls`` single enqueues of a no-op task
after a warm-up, one job per transaction (autocommit: each pays a commit), timed inside the
process (wall and CPU):

- ``after``: ``noop.enqueue()`` with this checkout's code;
- ``before``: the same call with the code of ``--base`` (default: the commit before the
  single-enqueue work), a ``git archive`` of that revision unpacked in a temporary folder;
- ``raw``: one INSERT of a job row through Django's cursor (the floor the database sets);
- ``celery``: Celery's ``.delay()`` to Redis (``benchmarks/.venv-peers``, made on first use;
  ``--no-celery`` leaves it out).

``--mode bulk`` times one ``enqueue_many()`` of ``--calls`` jobs instead (after a warm-up bulk
of 200) against the before code's, and ``raw`` is then the multi-row INSERTs of literal rows
of ``enqueuers.py``; Celery has no bulk enqueue and is left out.

The systems' order rotates every round (ABCD, BCDA, ...); the job table (or the Redis
database) is emptied before each measurement. Database ``BENCH_DB_PREFIX`` (default
``sq_bench``), Redis ``BENCH_REDIS_URL``. Prints each measurement, then the medians and the
ratios, and writes them with the machine to ``benchmarks/.work/enqueue_ab.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

from benchmarks import venv
from benchmarks.backlog import Backlog
from benchmarks.harness import ROOT, WORK_DIR, agent
from benchmarks.machine import database, machine
from benchmarks.systems import OUR_PYTHON, PEERS_PYTHON, SYSTEMS

#: The code before the single-enqueue work of issue 23: the parent of its first commit.
DEFAULT_BASE = "a348b3d~1"
#: Enqueues made before the timed ones: imports, the connection, compiled statements.
WARMUP = 200
#: Run in each child: the enqueuer of ``benchmarks/enqueuers.py`` (the same module the other
#: scenarios use, from the tree the child imports), warmed up, then timed.
CHILD = """
import json, sys, time
system, calls, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if system != "celery":
    import django
    django.setup()
from benchmarks import enqueuers
run = enqueuers.for_system(system, mode)
run(WARMUP)
cpu, wall = time.process_time(), time.perf_counter()
run(calls)
print(json.dumps({"seconds": time.perf_counter() - wall, "cpu": time.process_time() - cpu}))
""".replace("WARMUP", str(WARMUP))


@dataclass(frozen=True)
class Contender:
    """One column of the A/B: which interpreter, which tree, which enqueuer."""

    name: str
    python: str
    tree: Path
    system: str


def unpack(revision: str, into: Path) -> Path:
    """Unpack ``revision`` of this repository into ``into`` (no worktree left behind)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", revision],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def measure(contender: Contender, calls: int, mode: str = "single") -> dict[str, float]:
    """Empty the queue, run one child; return its rate and CPU per call."""
    system = SYSTEMS["celery" if contender.system == "celery" else "ours"]
    Backlog(system).empty()
    env = system.env(PYTHONPATH=str(contender.tree))
    done = subprocess.run(
        [contender.python, "-c", CHILD, contender.system, str(calls), mode],
        cwd=contender.tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{contender.name} failed:\n{done.stderr[-3000:]}")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "per_s": calls / answer["seconds"],
        "wall_us": answer["seconds"] / calls * 1e6,
        "cpu_us": answer["cpu"] / calls * 1e6,
        "loadavg": os.getloadavg()[0],
    }


def ratio(runs: dict[str, list[dict[str, float]]], a: str, b: str) -> float | None:
    """Median rate of ``a`` over median rate of ``b`` (None if either is missing)."""
    if a not in runs or b not in runs:
        return None
    return median(runs[a], "per_s") / median(runs[b], "per_s")


def median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=DEFAULT_BASE, help="revision of the 'before' code")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--no-celery", action="store_true")
    parser.add_argument("--mode", choices=("single", "bulk"), default="single")
    parser.add_argument("--out", type=Path, default=WORK_DIR / "enqueue_ab.json")
    args = parser.parse_args()
    started = {"at": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "loadavg": os.getloadavg()}
    agent(SYSTEMS["ours"], "setup")
    with tempfile.TemporaryDirectory(prefix="enqueue-ab-") as folder:
        before = unpack(args.base, Path(folder))
        contenders = [
            Contender("after", OUR_PYTHON, ROOT, "ours"),
            Contender("before", OUR_PYTHON, before, "ours"),
            Contender("raw", OUR_PYTHON, ROOT, "raw"),
        ]
        if not args.no_celery and args.mode == "single":
            venv.ensure()
            contenders.append(Contender("celery", PEERS_PYTHON, ROOT, "celery"))
        runs: dict[str, list[dict[str, float]]] = {}
        for rnd in range(args.rounds):
            shift = rnd % len(contenders)
            for contender in contenders[shift:] + contenders[:shift]:
                result = measure(contender, args.calls, args.mode)
                runs.setdefault(contender.name, []).append(result)
                print(f"{time.strftime('%H:%M:%S')} round {rnd + 1} {contender.name}: "
                      f"{result['per_s']:.0f}/s, {result['cpu_us']:.0f} us CPU/call, "
                      f"load {result['loadavg']:.2f}", flush=True)  # fmt: skip
    medians = {
        name: {key: median(found, key) for key in ("per_s", "wall_us", "cpu_us")}
        for name, found in runs.items()
    }
    ratios = {
        "after/before": ratio(runs, "after", "before"),
        "after/celery": ratio(runs, "after", "celery"),
        "before/celery": ratio(runs, "before", "celery"),
        "after/raw": ratio(runs, "after", "raw"),
    }
    result = {
        "started": started,
        "ended": {"at": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "loadavg": os.getloadavg()},
        "machine": machine(),
        "database": database(),
        "settings": {k: str(v) for k, v in vars(args).items()},
        "medians": medians,
        "ratios": ratios,
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    for name, found in medians.items():
        print(f"{name:>7}: {found['per_s']:7.0f}/s  {found['wall_us']:6.0f} us wall  "
              f"{found['cpu_us']:5.0f} us CPU per enqueue")  # fmt: skip
    for name, value in ratios.items():
        print(f"{name:>13}: {'-' if value is None else f'{value:.2f}x'}")


if __name__ == "__main__":
    main()
