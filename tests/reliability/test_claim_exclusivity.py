"""16 claimer processes x 20,000 jobs: every job claimed exactly once, by the ledger.

tests/db/test_claim.py proves the same with 8 threads in one process. Here the claimers are
separate processes (truly concurrent, each with its own connection), each writes a ledger row
per job it claimed, and the run is on a private server so that its deadlock counter counts
this run alone: it must stay at zero.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.reliability.procs import ROOT, manage_module

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

CLAIMERS, JOBS = 16, 20_000


def test_sixteen_claimers_claim_twenty_thousand_jobs_exactly_once(private_db, tmp_path, figures):
    env = private_db.env()
    manage_module(env, "tests.reliability.producer", "bulk", "--count", str(JOBS),
                  "--task", "tests.reliability.tasks.record")  # fmt: skip
    server = private_db.server
    before = {name: server.status(name) for name in ("Innodb_deadlocks", "Innodb_row_lock_waits")}
    go = tmp_path / "go"
    command = [sys.executable, "-m", "tests.reliability.claimer", "--go", str(go)]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    claimers = [
        subprocess.Popen([*command, f"claimer-{n}"], env=env, cwd=ROOT, **pipes)
        for n in range(CLAIMERS)
    ]
    time.sleep(3)  # let every claimer connect
    began = time.monotonic()
    go.touch()
    results = [claimer.communicate(timeout=300) for claimer in claimers]
    elapsed = time.monotonic() - began
    assert [claimer.returncode for claimer in claimers] == [0] * CLAIMERS, results
    counts = [int(out) for out, _ in results]
    after = {name: server.status(name) for name in before}

    [(rows, distinct)] = private_db.query(
        "SELECT COUNT(*), COUNT(DISTINCT job_id) FROM demo_ledgerentry"
    )
    figures.update(
        claimers=CLAIMERS, jobs=JOBS, ledger_rows=rows, distinct_jobs=distinct,
        seconds=round(elapsed, 1), jobs_per_s=round(JOBS / elapsed),
        per_claimer_min=min(counts), per_claimer_max=max(counts),
        deadlocks=after["Innodb_deadlocks"] - before["Innodb_deadlocks"],
        row_lock_waits=after["Innodb_row_lock_waits"] - before["Innodb_row_lock_waits"],
    )  # fmt: skip
    assert (rows, distinct, sum(counts)) == (JOBS, JOBS, JOBS)
    assert private_db.statuses() == {"claimed": JOBS}
    assert private_db.query(
        "SELECT COUNT(*) FROM skipqueue_job j JOIN demo_ledgerentry l ON l.job_id = j.id "
        "AND l.worker = j.owner AND l.attempt = j.attempts"
    ) == [(JOBS,)], "each ledger row names the job's owner at its attempt"
    assert min(counts) > 0, "every claimer got work"
    assert after["Innodb_deadlocks"] == before["Innodb_deadlocks"]
