"""Soak test: mixed load for a long time with kills and server restarts, then an audit.

    python scripts/soak.py --minutes 60 [--rate 150] [--processes 3] [--threads 4]
                           [--kill-every 20] [--restart-every 300] [--out soak.json]

It starts a private MariaDB (never the shared server), ``runworkers`` with the maintenance
loop (reaper, promotion, purge with archive), and three producers that enqueue plain,
flaky (fail once, then retry) and transactional jobs at ``--rate`` jobs a second in all.
Every ``--kill-every`` seconds a random worker process gets SIGKILL; every
``--restart-every`` seconds the server restarts (alternately a clean shutdown and a crash).
Then the load stops, the backlog drains, and the tables are audited (tests/reliability/
audit.py): jobs enqueued (acknowledged to a producer), completed, failed, duplicated (and
why), lost (must be 0), plus claim latency per minute from the workers' histograms.
Exit status 1 if anything was lost or a duplicate is unexplained.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from django_skipqueue.monitoring.metrics import histogram_percentile, merge_histograms  # noqa: E402
from tests.reliability.audit import audit, job_rows  # noqa: E402
from tests.reliability.procs import Supervisor, child_env, kill_quietly  # noqa: E402
from tests.reliability.server import PrivateMariaDB  # noqa: E402

DATABASE = "soak"
#: Producer task paths and their share of the rate.
MIX = {
    "tests.reliability.tasks.record": 0.8,
    "tests.reliability.tasks.flaky": 0.1,
    "tests.support.worker_tasks.slow_record_tx": 0.1,
}
TRANSACTIONAL = "tests.support.worker_tasks.slow_record_tx"


def main() -> int:
    args = parse()
    work = Path(args.workdir or f"/tmp/skipqueue-soak-{int(time.time())}")
    work.mkdir(parents=True, exist_ok=True)
    server = PrivateMariaDB(work / "mariadb").start()
    log(f"private MariaDB on port {server.port}, files in {work}")
    try:
        return Soak(args, server, work).run()
    finally:
        server.destroy()


class Soak:
    def __init__(self, args: argparse.Namespace, server: PrivateMariaDB, work: Path) -> None:
        self.args, self.server, self.work = args, server, work
        self.env = child_env(
            server.url(DATABASE), RESTART_BACKOFF_MAX=5.0, RETRY_BACKOFF=0.5,
            REAP_INTERVAL=2.0, PURGE_INTERVAL=10.0, PURGE_ARCHIVE=True,
            PURGE_RETENTION={"succeeded": 60, "failed": 60, "cancelled": 60},
        )  # fmt: skip
        self.events: list[dict[str, Any]] = []
        self.samples: list[dict[str, Any]] = []
        self.began = 0.0

    def run(self) -> int:
        self.server.create_database(DATABASE, self.env)
        before = self.counters()
        supervisor = Supervisor(
            self.env, self.work / "runworkers.log", "--processes", str(self.args.processes),
            "--threads", str(self.args.threads),
        )  # fmt: skip
        self.began = time.monotonic()
        producers = self.start_producers()
        try:
            self.chaos(supervisor, producers)
            self.event("load stopped; draining")
            self.drain()
        finally:
            for producer in producers:
                kill_quietly(producer.pid, signal.SIGKILL)
                producer.wait()
            supervisor.stop(signum=signal.SIGTERM, timeout=60)
        report = self.report(before)
        Path(self.args.out).write_text(json.dumps(report, indent=2, default=str))
        self.print_summary(report)
        ok = report["audit"]["lost"] == 0 and not report["audit"]["problems"]
        return 0 if ok else 1

    # Load and faults.

    def start_producers(self) -> list[subprocess.Popen]:
        seconds = str(self.args.minutes * 60)
        producers = []
        for task, share in MIX.items():
            name = task.rpartition(".")[2]
            with (self.work / f"producer-{name}.log").open("w") as out:
                producers.append(subprocess.Popen(
                    [sys.executable, "-m", "tests.reliability.producer", "stream",
                     "--task", task, "--rate", str(self.args.rate * share),
                     "--seconds", seconds, "--label", name,
                     "--acked", str(self.work / "acked")],
                    env=self.env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                ))  # fmt: skip
        return producers

    def chaos(self, supervisor: Supervisor, producers: list[subprocess.Popen]) -> None:
        end = self.began + self.args.minutes * 60
        next_kill = self.began + self.jitter(self.args.kill_every)
        next_restart = self.began + self.args.restart_every
        next_sample, hard = self.began, False
        while time.monotonic() < end and any(p.poll() is None for p in producers):
            now = time.monotonic()
            if now >= next_kill:
                self.kill_a_worker(supervisor)
                next_kill = now + self.jitter(self.args.kill_every)
            if now >= next_restart:
                outage = self.server.restart(hard=hard, down_for=self.args.down_for)
                self.event("server crashed and restarted" if hard else "server restarted",
                           outage_s=round(outage, 2))  # fmt: skip
                hard, next_restart = not hard, now + self.args.restart_every
            if now >= next_sample:
                self.sample()
                next_sample = now + 10
            time.sleep(0.2)

    def kill_a_worker(self, supervisor: Supervisor) -> None:
        workers = supervisor.workers()
        if workers:
            victim = random.choice(workers)
            kill_quietly(victim, signal.SIGKILL)
            self.event("worker killed", pid=victim)

    def drain(self) -> None:
        deadline = time.monotonic() + self.args.drain_timeout
        while time.monotonic() < deadline:
            self.sample()
            if self.samples[-1].get("unfinished") == 0:
                time.sleep(3)  # the last outcomes and a purge turn
                return
            time.sleep(2)
        self.event("drain timed out")

    @staticmethod
    def jitter(every: float) -> float:
        return random.uniform(0.5 * every, 1.5 * every)

    def event(self, what: str, **extra: Any) -> None:
        entry = {"t": round(time.monotonic() - self.began, 1), "event": what, **extra}
        self.events.append(entry)
        log(" ".join(f"{k}={v}" for k, v in entry.items()))

    # Reading the database.

    def query(self, sql: str) -> list[tuple]:
        conn = self.server.connect(DATABASE)
        try:
            cursor = conn.cursor()
            cursor.execute(sql)
            return list(cursor.fetchall())
        finally:
            conn.close()

    def sample(self) -> None:
        try:
            rows = dict(self.query("SELECT status, COUNT(*) FROM skipqueue_job GROUP BY status"))
            archived = self.query("SELECT COUNT(*) FROM skipqueue_job_archive")[0][0]
        except Exception as error:  # the server is down: note it and go on
            self.samples.append({"t": self.elapsed(), "error": repr(error)})
            return
        unfinished = sum(int(rows.get(s, 0)) for s in ("ready", "scheduled", "claimed"))
        done = int(rows.get("succeeded", 0)) + int(archived)
        self.samples.append({"t": self.elapsed(), "unfinished": unfinished, "done": done,
                             "claimed": int(rows.get("claimed", 0))})  # fmt: skip

    def elapsed(self) -> float:
        return round(time.monotonic() - self.began, 1)

    def counters(self) -> dict[str, int]:
        names = ("Innodb_deadlocks", "Innodb_row_lock_waits")
        return {name: self.server.status(name) for name in names}

    def latency_per_minute(self) -> list[dict[str, Any]]:
        rows = self.query(
            "SELECT minute, claim_latency_histogram, claim_queries, claimed "
            "FROM skipqueue_queue_minute WHERE claim_queries > 0 ORDER BY minute"
        )
        by_minute: dict[Any, dict[str, Any]] = {}
        for minute, histogram, queries, claimed in rows:
            entry = by_minute.setdefault(minute, {"histograms": [], "queries": 0, "claimed": 0})
            entry["histograms"].append(json.loads(histogram) if histogram else [])
            entry["queries"] += queries
            entry["claimed"] += claimed
        result = []
        for minute, entry in sorted(by_minute.items()):
            merged = merge_histograms(entry["histograms"])
            result.append({
                "minute": minute.strftime("%H:%M"), "claim_queries": entry["queries"],
                "claimed": entry["claimed"], "p50_ms": histogram_percentile(merged, 0.5),
                "p95_ms": histogram_percentile(merged, 0.95),
                "p99_ms": histogram_percentile(merged, 0.99),
            })  # fmt: skip
        return result

    def report(self, before: dict[str, int]) -> dict[str, Any]:
        acked = [int(line) for line in (self.work / "acked").read_text().split()]
        columns = "id, status, attempts, worker_ids, errors"
        jobs = job_rows(self.query(
            f"SELECT {columns} FROM skipqueue_job UNION ALL "
            f"SELECT {columns} FROM skipqueue_job_archive"
        ))  # fmt: skip
        ledger = self.query("SELECT job_id, attempt, worker FROM demo_ledgerentry")
        result = audit(jobs, ledger, expected_ids=acked, task_errors=True)
        tx_ids = {pk for (pk,) in self.query(
            f"SELECT id FROM skipqueue_job WHERE task_path = '{TRANSACTIONAL}' UNION ALL "
            f"SELECT id FROM skipqueue_job_archive WHERE task_path = '{TRANSACTIONAL}'"
        )}  # fmt: skip
        tx = audit([j for j in jobs if j.id in tx_ids],
                   [row for row in ledger if row[0] in tx_ids], effects_once=True)  # fmt: skip
        after = self.counters()
        return {
            "settings": vars(self.args),
            "minutes_run": round(self.elapsed() / 60, 1),
            "acked": len(acked),
            "rows": len(jobs),
            "audit": result.as_dict(),
            "transactional": tx.as_dict(),
            "kills": sum(1 for e in self.events if e["event"] == "worker killed"),
            "restarts": [e for e in self.events if "server" in e["event"]],
            "deadlocks": after["Innodb_deadlocks"] - before["Innodb_deadlocks"],
            "row_lock_waits": after["Innodb_row_lock_waits"] - before["Innodb_row_lock_waits"],
            "latency_per_minute": self.latency_per_minute(),
            "samples": self.samples,
            "events": self.events,
        }

    @staticmethod
    def print_summary(report: dict[str, Any]) -> None:
        found = report["audit"]
        print("\n=== soak summary ===")
        print(f"minutes {report['minutes_run']}  kills {report['kills']}  "
              f"restarts {len(report['restarts'])}  deadlocks {report['deadlocks']}")  # fmt: skip
        for key in ("enqueued", "succeeded", "failed", "lost", "executions", "duplicates"):
            print(f"{key:>12} {found[key]}")
        print(f"{'acked':>12} {report['acked']}")
        print(f"{'causes':>12} {found['causes']}")
        print(f"{'problems':>12} {found['problems'] or 'none'}")
        tx = report["transactional"]
        print(f"transactional jobs {tx['enqueued']}, effects {tx['executions']}, "
              f"duplicates {tx['duplicates']}")  # fmt: skip
        print("minute  claims   p50   p95   p99 (ms)")
        for row in report["latency_per_minute"]:
            print(f"{row['minute']}  {row['claim_queries']:>6} {row['p50_ms']:>5} "
                  f"{row['p95_ms']:>5} {row['p99_ms']:>5}")  # fmt: skip


def log(message: str) -> None:
    print(f"[soak {time.strftime('%H:%M:%S')}] {message}", flush=True)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=150.0, help="jobs a second, all producers")
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--kill-every", type=float, default=20.0)
    parser.add_argument("--restart-every", type=float, default=300.0)
    parser.add_argument("--down-for", type=float, default=2.0)
    parser.add_argument("--drain-timeout", type=float, default=300.0)
    parser.add_argument("--out", default="soak.json")
    parser.add_argument("--workdir", default="")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
