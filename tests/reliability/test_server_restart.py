"""The database server restarts under load (a clean shutdown, then a crash): nothing is lost.

On a private server: the workers meet refused connections and broken ones, back off, reconnect,
record the outcomes they kept, give back claims whose commit they never saw, and drain the
queue; ``runworkers --burst`` then exits 0 by itself (no hung worker).
"""

from __future__ import annotations

import time

import MySQLdb
import pytest

from tests.reliability.audit import audit
from tests.reliability.procs import Supervisor, manage_module, wait_for

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

JOBS = 6000


def done_count(db) -> int:
    try:
        return db.statuses().get("succeeded", 0)
    except MySQLdb.OperationalError:
        return 0


def test_restarts_under_load_lose_nothing_and_hang_no_worker(private_db, tmp_path, figures):
    env = private_db.env(RETRY_BACKOFF=0.2, RESTART_BACKOFF_MAX=2.0, HEARTBEAT_SECONDS=1.0)
    manage_module(env, "tests.reliability.producer", "bulk", "--count", str(JOBS),
                  "--task", "tests.reliability.tasks.record", "--label", "restart")  # fmt: skip
    supervisor = Supervisor(
        env, tmp_path / "runworkers.log",
        "--processes", "2", "--threads", "4", "--burst", "--queues", "default",
    )  # fmt: skip
    server, outages, pending_at_restart = private_db.server, [], []
    began = time.monotonic()
    try:
        for threshold, hard in ((JOBS // 6, False), (JOBS // 2, True)):
            wait_for(lambda t=threshold: done_count(private_db) >= t, 120)
            pending_at_restart.append(JOBS - done_count(private_db))
            outages.append(round(server.restart(hard=hard, down_for=1.0), 2))
        code = supervisor.wait(timeout=180)
    finally:
        supervisor.stop()
    elapsed = time.monotonic() - began
    assert code == 0, supervisor.log()[-3000:]

    report = audit(private_db.jobs(), private_db.ledger(), task_errors=True)
    stopped = private_db.query("SELECT COUNT(*) FROM skipqueue_worker WHERE stopped_at IS NULL")
    figures.update(
        jobs=JOBS, outages_s=outages, pending_at_restart=pending_at_restart,
        seconds=round(elapsed, 1), **report.as_dict(),
    )  # fmt: skip
    assert all(pending > 0 for pending in pending_at_restart), "a restart came after the load"
    assert report.problems == []
    assert (report.lost, report.succeeded, report.failed) == (0, JOBS, 0)
    assert stopped == [(0,)], "every worker process stopped and said so"
    log = supervisor.log()
    assert log.count("reachable again") >= 2, "the workers met the outages and recovered"
