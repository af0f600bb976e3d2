"""Drain throughput, claim latency and round trips per job over a slow, lossy link.

One worker host of the multi-host rig (tests/support/netrig.py: a network namespace, a veth
pair, a private ``mariadbd`` on the bridge's address) runs ``runworkers --processes P --threads
T``; the benchmark enqueues jobs that each write a ledger row and times their drain, for each
worker configuration and link, interleaved (the order of the links rotates from one repetition
to the next). Links: the plain bridge (0 ms), a 20 ms and a 50 ms round trip
(tests/support/delayrelay.py: this kernel has no ``sch_netem``), and 20 ms with 1 % of the
host's packets dropped each way (the rig's ``nft`` random-drop rule).

Needs root (namespaces), ``ip``, ``nft``, ``mariadbd``. Run it nice'd, from the repository root:

    sudo nice -n 10 .venv/bin/python -m benchmarks slow_link
    sudo nice -n 10 .venv/bin/python -m benchmarks slow_link --configs 4x16 --links 0,20 --repeat 2

Per run: jobs/s (first claim to last finish, by the database clock), the claim query's p50 and
p99 (the workers' histograms, so bucket bounds), statements per job (the server's
``Questions``, less the benchmark's own), round trips per job (counted by the relay: a client's
bytes that follow the server's), nothing lost (the ledger holds one row per job, each job
succeeded on its first attempt). Prints a JSON line per run and a table, with the load
average; ``--out`` also writes them as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TASK = "tests.reliability.tasks.record"
ENQUEUE = "tests.reliability.multihost.enqueue"
DATABASE = "slowlink"
#: Status counters read before and after each drain (per job in the results).
COUNTERS = (
    "Questions",
    "Com_select",
    "Com_update",
    "Com_insert",
    "Com_begin",
    "Com_commit",
    "Com_rollback",
    "Com_set_option",
    "Com_savepoint",
    "Com_admin_commands",
)


@dataclass(frozen=True)
class Link:
    label: str
    delay_ms: float  # one way
    loss: int  # percent, each way

    @classmethod
    def parse(cls, text: str) -> Link:
        rtt, _, loss = text.partition("+")
        return cls(text, float(rtt) / 2, int(loss or 0))

    def describe(self) -> str:
        if not self.delay_ms:
            return "bridge (0 ms)"
        loss = f", {self.loss} % loss" if self.loss else ""
        return f"{2 * self.delay_ms:g} ms{loss}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="1x1,4x4,4x16", help="PxT, comma-separated")
    parser.add_argument(
        "--links", default="0,20,50,20+1", help="round trip in ms [+loss %%], comma-separated"
    )
    parser.add_argument(
        "--jobs", type=int, default=0, help="jobs per run (default: 100 per process and 1x1)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="repetitions (default: 1)")
    parser.add_argument("--out", type=Path, help="also write the results here (JSON)")
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="a SKIPQUEUE_ setting for the workers, e.g. CLAIM_ROUND_TRIP=false (repeatable)",
    )
    parser.add_argument("--worker-args", default="", help="more runworkers arguments")
    parser.add_argument(
        "--general-log",
        type=Path,
        help="keep the server's general log of each drain in this folder (every statement)",
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.reliability.settings")
    os.environ.setdefault("DATABASE_URL", "sqlite:////tmp/skq_slow_link_unused.sqlite3")
    import django

    django.setup()
    from tests.support import netrig

    reason = netrig.unavailable()
    if reason:
        print(f"cannot run: {reason}", file=sys.stderr)
        return 2
    configs = [tuple(int(n) for n in c.split("x")) for c in args.configs.split(",")]
    links = [Link.parse(text) for text in args.links.split(",")]
    settings = {k: json.loads(v) for k, _, v in (s.partition("=") for s in args.setting)}
    bench = Bench(settings, args.worker_args.split(), args.general_log)
    results: list[dict[str, Any]] = []
    try:
        for repetition in range(args.repeat):
            for processes, threads in configs:
                jobs = args.jobs or (100 if processes * threads == 1 else 100 * processes * 2)
                shift = repetition % len(links)
                for link in links[shift:] + links[:shift]:
                    result = bench.drain(processes, threads, link, jobs)
                    result["repetition"] = repetition
                    print(json.dumps(result), flush=True)
                    results.append(result)
    finally:
        bench.close()
    load = os.getloadavg()
    print_table(results, load)
    if args.out:
        args.out.write_text(json.dumps({"load": load, "runs": results}, indent=1) + "\n")
    return 0 if all(r["lost"] == 0 and r["problems"] == [] for r in results) else 1


class Bench:
    """The rig, its server and one worker host; ``drain()`` measures one configuration."""

    def __init__(
        self, settings: dict[str, Any], worker_args: list[str], general_log: Path | None
    ) -> None:
        from tests.reliability.multihost.conftest import RigServer
        from tests.reliability.procs import child_env
        from tests.support import netrig

        self.settings, self.worker_args, self.general_log = settings, worker_args, general_log
        self.base = Path(tempfile.mkdtemp(prefix="skq-slow-link-"))
        self.rig = netrig.NetRig(hosts=2)
        self.server: Any = None
        try:
            self.server = RigServer(self.base / "server", self.rig.server_address).start()
            self.server.create_database(DATABASE, child_env(self.server.url(DATABASE)))
        except BaseException:
            self.close()
            raise
        self.host, self.producer = self.rig.hosts[0], self.rig.hosts[1]
        self.control = self.server.connect(DATABASE)

    def close(self) -> None:
        try:
            if self.server is not None:
                self.server.destroy()
        finally:
            self.rig.close()
            shutil.rmtree(self.base, ignore_errors=True)

    # One run.

    def drain(self, processes: int, threads: int, link: Link, jobs: int) -> dict[str, Any]:
        from tests.reliability.audit import audit
        from tests.reliability.conftest import PrivateDatabase
        from tests.reliability.procs import Supervisor, child_env, wait_for
        from tests.support.delayrelay import DelayRelay

        self.server.truncate(DATABASE)
        relay = None
        if link.delay_ms:
            target = (self.server.host, self.server.port)
            relay = DelayRelay(self.server.host, target, link.delay_ms / 1000)
        if link.loss:
            self.rig.lose(self.host, link.loss)
        url = self.server.url(DATABASE, relay.port if relay else None)
        env = child_env(url, IDLE_POLL_SECONDS=0.2, DATABASE_TIMEOUT=10, **self.settings)
        log = self.base / f"host-{processes}x{threads}-{link.label}.log"
        supervisor = Supervisor(
            env,
            log,
            *("--processes", str(processes), "--threads", str(threads), "--queues", "default"),
            *self.worker_args,
            prefix=self.host.prefix(),
        )
        supervisor.wrapped = False  # ip netns exec execs runworkers: its pid is the supervisor's
        try:
            wait_for(lambda: self._workers() >= processes, 300, interval=0.2)
            time.sleep(1.0)  # past the workers' start-up statements
            ids = self._enqueue(jobs)
            before, turns_before = self._status(), relay.turns if relay else 0
            self._log_statements(True)
            self._resume()
            polls = self._wait_drained(len(ids))
            self._log_statements(False)
            after, turns_after = self._status(), relay.turns if relay else 0
            if self.general_log:
                self.general_log.mkdir(parents=True, exist_ok=True)
                name = f"{processes}x{threads}-{link.label}.log"
                shutil.copy(self.base / "general.log", self.general_log / name)
        finally:
            supervisor.stop()
            if relay is not None:
                relay.close()
            self.rig.keep_all(self.host)
        database = PrivateDatabase(self.server, DATABASE)
        report = audit(database.jobs(), database.ledger(), task_errors=True)
        per_job = {name: round((after[name] - before[name]) / jobs, 2) for name in COUNTERS[1:]}
        # The benchmark's own statements: SHOW STATUS, the resume, one COUNT per poll.
        own = polls + 2 + (2 if self.general_log else 0)
        statements = (after["Questions"] - before["Questions"] - own) / jobs
        seconds, p50, p99, claims = self._drain_figures()
        ledger = self._one("SELECT COUNT(*), COUNT(DISTINCT job_id) FROM demo_ledgerentry")
        return {
            "config": f"{processes}x{threads}",
            "link": link.label,
            "jobs": jobs,
            "jobs_per_s": round(jobs / seconds, 1),
            "claim_p50_ms": p50,
            "claim_p99_ms": p99,
            "claim_queries_per_job": round(claims / jobs, 3),
            "statements_per_job": round(statements, 2),
            "round_trips_per_job": round((turns_after - turns_before) / jobs, 2)
            if relay
            else None,
            "per_job": per_job,
            "ledger_rows": int(ledger[0]),
            "ledger_jobs": int(ledger[1]),
            "lost": report.lost,
            "failed": report.failed,
            "retried": sum(1 for job in database.jobs() if job.attempts > 1),
            "problems": report.problems,
            "load": [round(x, 2) for x in os.getloadavg()],
        }

    def _enqueue(self, count: int) -> list[int]:
        """Enqueue from the other host (its own connection), wake-ups off, the queue paused.

        The workers see the pause within a second (their cached list of paused queues), then
        the jobs wait for ``_resume()``: the counters then start from a full queue.
        """
        import subprocess

        self._one(
            "INSERT INTO skipqueue_queue_pause (backend_alias, queue_name, paused_at, "
            "paused_by, reason) VALUES ('default', 'default', NOW(6), 'bench', '')"
        )
        time.sleep(1.5)

        from tests.reliability.procs import child_env

        env = child_env(self.server.url(DATABASE), WAKEUP=False)
        done = subprocess.run(
            [*self.producer.prefix(), sys.executable, "-m", ENQUEUE, TASK, str(count), "{}"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            cwd=ROOT,
            check=True,
        )
        return json.loads(done.stdout.strip().splitlines()[-1])

    def _resume(self) -> None:
        self._one("DELETE FROM skipqueue_queue_pause")

    def _log_statements(self, on: bool) -> None:
        if self.general_log is None:
            return
        if on:
            self._one(f"SET GLOBAL general_log_file = '{self.base / 'general.log'}'")
        self._one(f"SET GLOBAL general_log = {int(on)}")

    def _wait_drained(self, count: int) -> int:
        polls = 0
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            polls += 1
            done = self._one("SELECT COUNT(*) FROM skipqueue_job WHERE status = 'succeeded'")[0]
            if done >= count:
                return polls
            time.sleep(0.25)
        raise RuntimeError("the drain did not end within 900 s")

    def _drain_figures(self) -> tuple[float, float | None, float | None, int]:
        """Seconds from the first claim to the last finish; claim p50, p99; claim queries."""
        from django_skipqueue.monitoring.metrics import histogram_percentile, merge_histograms

        first, last = self._one("SELECT MIN(started_at), MAX(finished_at) FROM skipqueue_job")
        seconds = max((last - first).total_seconds(), 1e-3)
        cursor = self.control.cursor()
        cursor.execute("SELECT claim_latency_histogram, claim_queries FROM skipqueue_queue_minute")
        rows = cursor.fetchall()
        histogram = merge_histograms(json.loads(text) for text, _ in rows)
        claims = sum(int(n) for _, n in rows)
        return (
            seconds,
            histogram_percentile(histogram, 0.5),
            histogram_percentile(histogram, 0.99),
            claims,
        )

    def _workers(self) -> int:
        return int(
            self._one(
                "SELECT COUNT(*) FROM skipqueue_worker WHERE role = 'worker' "
                "AND stopped_at IS NULL"
            )[0]
        )

    def _status(self) -> dict[str, int]:
        cursor = self.control.cursor()
        cursor.execute("SHOW GLOBAL STATUS")
        values = dict(cursor.fetchall())
        return {name: int(values.get(name, 0)) for name in COUNTERS}

    def _one(self, sql: str) -> tuple:
        cursor = self.control.cursor()
        cursor.execute(sql)
        return cursor.fetchone()


def print_table(results: list[dict[str, Any]], load: tuple[float, float, float]) -> None:
    """One row per configuration and link (medians over repetitions), with the ratio to 0 ms."""
    from statistics import median

    keys: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for result in results:
        keys.setdefault((result["config"], result["link"]), []).append(result)
    plain = {
        config: median(r["jobs_per_s"] for r in runs)
        for (config, link), runs in keys.items()
        if link == "0"
    }
    print(f"\nload average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(
        "| workers | link | jobs | jobs/s | of 0 ms | claim p50 | claim p99 "
        "| statements/job | round trips/job | lost |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (config, link_label), runs in keys.items():
        rate = median(r["jobs_per_s"] for r in runs)
        ratio = f"{rate / plain[config]:.2f}" if config in plain and link_label != "0" else ""
        trips = [r["round_trips_per_job"] for r in runs if r["round_trips_per_job"] is not None]
        print(
            f"| {config} | {Link.parse(link_label).describe()} | {sum(r['jobs'] for r in runs)} "
            f"| {rate:.0f} | {ratio} | {_ms(median_of(runs, 'claim_p50_ms'))} "
            f"| {_ms(median_of(runs, 'claim_p99_ms'))} "
            f"| {median(r['statements_per_job'] for r in runs):.2f} "
            f"| {f'{median(trips):.2f}' if trips else ''} | {sum(r['lost'] for r in runs)} |"
        )


def median_of(runs: list[dict[str, Any]], key: str) -> float | None:
    from statistics import median

    values = [r[key] for r in runs if r[key] is not None]
    return median(values) if values else None


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:g} ms"


if __name__ == "__main__":
    sys.exit(main())
