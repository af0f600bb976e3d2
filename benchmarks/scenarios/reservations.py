"""Scenario 9, reservations: holds per second on one hot item, three designs, and their drift.

``pool`` is django_skipqueue.reservations, ``pool_sql`` its statements written by hand;
``column`` a single quantity column with the hold
and ledger rows in the same transaction; ``redis`` the hold in Redis and the ledger in the
database. Each client (``benchmarks.reservation_load``) reserves one unit and confirms it, in
a loop; the designs run interleaved, for 1, 4 and 16 clients. Then clients that die between
their hold and their ledger write (``--crash``) show what each design leaves behind: the
difference between the ledger's sum and the stock the design itself believes is free.

``python -m benchmarks.scenarios.reservations [--quick]`` runs it alone and rewrites the
report with the other scenarios' recorded figures.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.harness import Context, interleaved, save_raw
from benchmarks.stats import summary

ROOT = Path(__file__).resolve().parents[2]
DATABASE = "skq_bench_resv"
DESIGNS = ("pool", "pool_sql", "column", "redis")
TABLES = """
CREATE TABLE bench_stock (item BIGINT PRIMARY KEY, available INT NOT NULL);
CREATE TABLE bench_hold (id BIGINT AUTO_INCREMENT PRIMARY KEY, item BIGINT NOT NULL,
  state VARCHAR(9) NOT NULL, expires_at DATETIME(6) NOT NULL);
CREATE TABLE bench_ledger (id BIGINT AUTO_INCREMENT PRIMARY KEY, item BIGINT NOT NULL,
  delta INT NOT NULL, reason VARCHAR(7) NOT NULL, hold BIGINT NULL, created_at DATETIME(6))
"""
RESET = {
    "pool": "from django_skipqueue import reservations; reservations.restock(1, 1, 1000)",
    "pool_sql": "from django_skipqueue import reservations; reservations.restock(1, 1, 1000)",
    "column": "",
    "redis": "",
}


def env() -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": f"mysql://root@127.0.0.1:3306/{DATABASE}",
        "DJANGO_SETTINGS_MODULE": "testproject.settings",
        "PYTHONPATH": str(ROOT),
    }


def sql(statements: str) -> str:
    done = subprocess.run(
        ["mysql", "-uroot", "-h127.0.0.1", "-N", DATABASE],
        input=statements,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def redis(*command: str) -> str:
    return subprocess.run(
        ["redis-cli", *command], capture_output=True, text=True, check=True
    ).stdout.strip()


def setup() -> None:
    subprocess.run(
        [
            "mysql",
            "-uroot",
            "-h127.0.0.1",
            "-e",
            f"DROP DATABASE IF EXISTS {DATABASE}; CREATE DATABASE {DATABASE}",
        ],
        check=True,
    )
    manage = [sys.executable, str(ROOT / "testproject" / "manage.py")]
    subprocess.run([*manage, "migrate", "--verbosity", "0"], env=env(), check=True)
    sql(TABLES)


def reset(design: str) -> None:
    sql(
        "DELETE FROM skipqueue_reservations_unit; DELETE FROM skipqueue_reservations_pool;"
        " DELETE FROM skipqueue_reservations_reservation;"
        " DELETE FROM skipqueue_reservations_ledgerentry; DELETE FROM bench_hold;"
        " DELETE FROM bench_ledger; DELETE FROM bench_stock;"
        " INSERT INTO bench_stock VALUES (1, 1000);"
        " INSERT INTO bench_ledger (item, delta, reason) VALUES (1, 1000, 'restock')"
    )
    redis("DEL", "bench:stock:1", "bench:hold_id")
    redis("SET", "bench:stock:1", "1000")
    if RESET[design]:
        manage = [sys.executable, str(ROOT / "testproject" / "manage.py")]
        subprocess.run([*manage, "shell", "-c", RESET[design]], env=env(), check=True)


def start(design: str, crash: float = 0.0) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "benchmarks.reservation_load", design, "--crash", str(crash)]
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env=env(),
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def go(clients: list[subprocess.Popen[str]], seconds: float) -> tuple[float, float]:
    for client in clients:
        assert client.stdout is not None and client.stdout.readline().strip() == "ready"
    begin = time.time() + 0.3
    for client in clients:
        assert client.stdin is not None
        client.stdin.write(f"go {begin} {begin + seconds}\n")
        client.stdin.flush()
    return begin, begin + seconds


def throughput(design: str, clients: int, seconds: float) -> float:
    """Reserve-and-confirm cycles per second of ``clients`` processes."""
    reset(design)
    processes = [start(design) for _ in range(clients)]
    go(processes, seconds)
    done = sum(int(p.communicate(timeout=seconds + 120)[0].split()[-1]) for p in processes)
    return done / seconds


def drift(design: str, clients: int, seconds: float, crash: float) -> dict[str, int]:
    """Run clients that die between hold and ledger, replacing each; count what disagrees."""
    reset(design)
    processes = [start(design, crash) for _ in range(clients)]
    _, end = go(processes, seconds)
    crashes = 0
    while time.time() < end - 1:
        for n, process in enumerate(processes):
            if process.poll() == 9:
                crashes += 1
                processes[n] = start(design, crash)
                go([processes[n]], max(0.5, end - time.time()))
        time.sleep(0.05)
    for process in processes:
        process.communicate(timeout=seconds + 120)
        crashes += process.returncode == 9
    return {"crashes": crashes, "drift": _drift(design)}


def _drift(design: str) -> int:
    if design in ("pool", "pool_sql"):
        ledger = sql("SELECT COALESCE(SUM(delta), 0) FROM skipqueue_reservations_ledgerentry")
        free = sql("SELECT COUNT(*) FROM skipqueue_reservations_unit WHERE reserved_by IS NULL")
        return int(ledger) - int(free)
    ledger = int(sql("SELECT COALESCE(SUM(delta), 0) FROM bench_ledger"))
    if design == "column":
        return ledger - int(sql("SELECT available FROM bench_stock WHERE item = 1"))
    return ledger - int(redis("GET", "bench:stock:1"))


def run(ctx: Context) -> dict[str, object]:
    setup()
    counts = [1, 4] if ctx.quick else [1, 4, 16]
    seconds = 2.0 if ctx.quick else 5.0
    runs: dict[str, dict[str, list[float]]] = {}
    for rep, clients, design in interleaved(ctx.reps, counts, DESIGNS):
        rate = throughput(design, clients, seconds)
        runs.setdefault(str(clients), {}).setdefault(design, []).append(rate)
        ctx.say(f"reservations {clients} clients rep {rep + 1} {design}: {rate:.0f}/s")
    crashes = {design: drift(design, 4, seconds * 2, 0.02) for design in DESIGNS}
    ctx.say(f"reservations with crashes: {crashes}")
    return {
        "seconds": seconds,
        "runs": runs,
        "table": {c: {d: summary(v) for d, v in by.items()} for c, by in runs.items()},
        "crashes": crashes,
    }


def main() -> None:
    quick = "--quick" in sys.argv
    ctx = Context(quick=quick, reps=1 if quick else 2, systems=["ours"])
    result = run(ctx)
    save_raw("reservations", result, quick)
    # The page is rewritten by its own command (the report is not imported by any scenario).
    again = [sys.executable, "-m", "benchmarks", "report", *(["--quick"] if quick else [])]
    subprocess.run(again, cwd=ROOT, check=True)


if __name__ == "__main__":
    main()
