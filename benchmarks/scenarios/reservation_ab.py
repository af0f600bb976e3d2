"""Reservation cycles on one hot item before and after a change, two commits interleaved.

``python -m benchmarks reservation_ab --before REV [--after REV] [--clients 1,4,16]
[--seconds 8] [--rounds 3]``

Each commit is checked out in a git worktree of its own with a database of its own (as
:mod:`benchmarks.sides` sets them up; every client runs its side's ``django_skipqueue``). For
each count of clients, round after round, the sides alternating which goes first (AB, BA), N
client processes start, set Django up, and then run cycles for the same wall-clock window:
``reserve(1)`` of the hot item, then ``confirm`` (even cycles) or ``release`` (odd ones), each
its own transaction. A client that is refused restocks the pool (``InsufficientStock``): the
pool starts with 200 units and sales drain it. Cycles per second of all clients together,
the clients' CPU time per cycle and the refusals, per side; then JSON with the medians, the
after/before ratios, the machine and its load average (``--out`` also writes every run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from benchmarks.harness import interleaved
from benchmarks.sides import Side, _git, ab_parser, outcome, remove_worktrees, sides_of
from benchmarks.stats import ratio, summary

#: testproject.settings: the test project installs the reservations app.
SETTINGS = "testproject.settings"
#: Run by each side's interpreter: set up, say ready, run cycles from START to END, say counts.
CHILD = """
import sys, time
import django
django.setup()
from django.db import connection
from django_skipqueue import reservations
from django_skipqueue.exceptions import InsufficientStock, PoolFull
connection.ensure_connection()
print("ready", flush=True)
start, end = (float(word) for word in sys.stdin.readline().split())
time.sleep(max(0.0, start - time.time()))
cycles = refused = 0
cpu = time.process_time()
while time.time() < end:
    try:
        hold = reservations.reserve(1, 1, 1, holder="bench", ttl=600)
    except InsufficientStock:
        refused += 1
        try:
            reservations.restock(1, 1, 200)
        except PoolFull:
            pass
        continue
    if cycles % 2:
        reservations.release(hold)
    else:
        reservations.confirm(hold)
    cycles += 1
print(cycles, refused, time.process_time() - cpu, flush=True)
"""


class ReservationSide(Side):
    """A side on the test project's settings (it installs the reservations app)."""

    def prepare(self) -> None:
        """Check out the commit, create its database, migrate."""
        if not self.checkout.exists():
            _git("worktree", "add", "--detach", str(self.checkout), self.sha)
        database = self.system.database
        subprocess.run(
            ["mysql", "-uroot", "-h127.0.0.1", "-e", f"CREATE DATABASE IF NOT EXISTS {database}"],
            check=True,
        )
        self.check_imports()
        self.run("-m", "django", "migrate", "--verbosity", "0", timeout=900)

    def env(self, **extra: str) -> dict[str, str]:
        url = f"mysql://root@127.0.0.1:3306/{self.system.database}"
        return {**super().env(**extra), "DJANGO_SETTINGS_MODULE": SETTINGS, "DATABASE_URL": url}

    def reset(self) -> None:
        self.run("-c", RESET)


RESET = """
import django
django.setup()
from django_skipqueue import reservations
from django_skipqueue.reservations.models import LedgerEntry, Pool, Reservation, Unit
for model in (Unit, Pool, Reservation, LedgerEntry):
    model.objects.all().delete()
reservations.restock(1, 1, 200)
"""


def cycles(side: ReservationSide, clients: int, seconds: float) -> dict[str, float]:
    """Run ``clients`` processes for ``seconds``; return cycles/s and refusals of them all."""
    side.reset()
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD],
            env=side.env(),
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        for _ in range(clients)
    ]
    for process in processes:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    start = time.time() + 0.3
    for process in processes:
        assert process.stdin is not None
        process.stdin.write(f"{start} {start + seconds}\n")
        process.stdin.flush()
    done = refused = 0
    cpu = 0.0
    for process in processes:
        out, _ = process.communicate(timeout=seconds + 120)
        counts = out.split()
        done, refused, cpu = (
            done + int(counts[-3]),
            refused + int(counts[-2]),
            cpu + float(counts[-1]),
        )
    return {
        "cycles_per_s": done / seconds,
        "client_cpu_ms_per_cycle": cpu / max(done, 1) * 1000,
        "refused": refused,
    }


def main() -> None:
    parser = ab_parser(__doc__.splitlines()[0], rounds=3, db_prefix="sq_resab")
    parser.add_argument("--clients", default="1,4,16")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--keep", action="store_true", help="keep the two worktrees")
    args = parser.parse_args()
    sides = sides_of(args, ReservationSide)
    started = {"at": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "loadavg": os.getloadavg()}
    runs: dict[str, dict[str, list[dict[str, float]]]] = {}
    try:
        for side in sides:
            side.prepare()
        counts = [int(n) for n in args.clients.split(",")]
        for rnd, clients, side in interleaved(args.rounds, counts, sides):
            result = cycles(side, clients, args.seconds)
            runs.setdefault(str(clients), {}).setdefault(side.name, []).append(result)
            print(
                f"{time.strftime('%H:%M:%S')} round {rnd + 1} clients={clients} {side.name}: "
                f"{result['cycles_per_s']:.1f} cycles/s, "
                f"{result['client_cpu_ms_per_cycle']:.2f} client CPU ms/cycle, "
                f"{result['refused']} refused "
                f"(load {os.getloadavg()[0]:.1f})",
                flush=True,
            )
    finally:
        if not args.keep:
            remove_worktrees(sides)
    table = medians(runs)
    whole = {**outcome(sides, started, args), "medians": table, "runs": runs}
    if args.out:
        args.out.write_text(json.dumps(whole, indent=1, default=str) + "\n")
    print(json.dumps(table, indent=1))


def medians(runs: dict[str, dict[str, list[dict[str, float]]]]) -> dict[str, dict]:
    """Median cycles/s and client CPU per cycle of each side per count of clients, after/before."""
    table: dict[str, dict] = {}
    for clients, by_side in runs.items():
        row: dict[str, float | None] = {}
        for key in ("cycles_per_s", "client_cpu_ms_per_cycle"):
            for name in ("before", "after"):
                values = [run[key] for run in by_side.get(name, [])]
                row[f"{key} {name}"] = summary(values)["median"]
            row[f"{key} after/before"] = ratio(row[f"{key} after"], row[f"{key} before"])
        table[clients] = row
    return table


if __name__ == "__main__":
    main()
