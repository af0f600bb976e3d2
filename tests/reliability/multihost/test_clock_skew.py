"""Hosts with wrong clocks, together: leases, schedules and purges follow the database's clock.

Two worker hosts, one two hours ahead and one two hours behind the database server
(``faketime``, wall clock only, as on hosts whose NTP failed), run ``runworkers`` with its
maintenance loop (reaper, promotion, scheduler) side by side. If any of them used its own
clock, the fast host's reaper would take live leases (a duplicate), a scheduler would place
ticks two hours off, and a purge would delete fresh jobs (fast host) or keep old ones (slow
host). tests/reliability/test_clock.py covers one skewed process at a time.
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess

import pytest

from tests.reliability.audit import audit
from tests.reliability.procs import MANAGE, wait_for
from tests.reliability.test_clock import skewed_env

pytestmark = [
    pytest.mark.mysql,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("faketime") is None, reason="needs faketime (apt)"),
]

SKEWS = ("+2h", "-2h")
LEASE = 2.0
HOLD = 5.0
SETTINGS = {
    "HEARTBEAT_SECONDS": 0.5,
    "IDLE_POLL_SECONDS": 0.2,
    "REAP_INTERVAL": 0.5,
    "SCHEDULER_INTERVAL": 0.5,
    "DATABASE_TIMEOUT": 2,
    "SCHEDULES": {
        "skew-tick": {
            "task": "tests.reliability.tasks.record",
            "interval": 2,
            "kwargs": {"label": "tick"},
        }
    },
}


def faketime(skew: str) -> tuple[str, ...]:
    return ("faketime", "-f", skew)


def host_clock_offset(hosts, host, skew: str) -> float:
    """Seconds the host's wall clock is ahead of the database's, as a process there sees it."""
    out = subprocess.run(
        [*host.prefix(), *faketime(skew), "python3", "-c", "import time; print(time.time())"],
        env=skewed_env(hosts.env()),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    [(db_now,)] = hosts.db.query("SELECT UNIX_TIMESTAMP(UTC_TIMESTAMP(6)) + 0")
    return float(out) - float(db_now)


def lease_lefts(hosts) -> list[float]:
    rows = hosts.db.query(
        "SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), lease_until) / 1e6 "
        "FROM skipqueue_job WHERE status = 'claimed'"
    )
    return [float(left) for (left,) in rows]


def purge(hosts, host, skew: str) -> int:
    """``skipqueue_purge --older-than 1h`` on ``host``; return the jobs it deleted."""
    command = ("skipqueue_purge", "--older-than", "1h", "--json")
    out = subprocess.run(
        [*host.prefix(), *faketime(skew), *MANAGE, *command],
        # No pause between chunks: time.sleep() fails under libfaketime (see test_clock.py).
        env=skewed_env(hosts.env(PURGE_SLEEP=0)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return int(json.loads(out.stdout)["deleted"])


def test_hosts_two_hours_apart_follow_the_database_clock(hosts, figures):
    pair = list(zip(hosts.rig.hosts[:2], SKEWS, strict=True))
    offsets = [round(host_clock_offset(hosts, host, skew) / 3600, 2) for host, skew in pair]
    assert offsets[0] > 1.9 and offsets[1] < -1.9, offsets  # else the test proves nothing
    env = skewed_env(hosts.env(**SETTINGS))
    args = ("--processes", "1", "--threads", "3", "--lease", f"{LEASE:g}", "--queues", "default")
    supervisors = [hosts.start(host, env, *args, wrapper=faketime(skew)) for host, skew in pair]
    owners = [set(hosts.workers_of(supervisor)) for supervisor in supervisors]
    # Jobs that run 2.5 leases: both hosts' reapers look at them every 0.5 s.
    ids = hosts.enqueue(
        hosts.env(WAKEUP=False), "tests.reliability.tasks.record_then_hold", 6, seconds=HOLD
    )
    marks = ",".join(["%s"] * len(ids))
    lefts: list[float] = []

    def all_done() -> bool:
        lefts.extend(lease_lefts(hosts))
        rows = hosts.db.query(
            f"SELECT COUNT(*) FROM skipqueue_job WHERE id IN ({marks}) AND status = 'succeeded'",
            ids,
        )
        return rows[0][0] == len(ids)

    wait_for(all_done, 120, interval=0.2)
    jobs = [job for job in hosts.db.jobs() if job.id in ids]
    ran_on = [sum(1 for job in jobs if set(job.worker_ids) & mine) for mine in owners]
    report = audit(jobs, [row for row in hosts.db.ledger() if row[0] in ids])
    ticks = hosts.db.query(
        "SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), tick_at) / 1e6, scheduler "
        "FROM skipqueue_schedule_tick ORDER BY tick_at"
    )
    tick_ages = [-float(age) for age, _ in ticks]
    gaps = [round(a - b, 2) for a, b in itertools.pairwise(tick_ages)]
    # Purges: three of the jobs finished 90 minutes ago by the database's clock.
    hosts.db.query(
        f"UPDATE skipqueue_job SET finished_at = UTC_TIMESTAMP(6) - INTERVAL 90 MINUTE "
        f"WHERE id IN ({','.join(['%s'] * 3)})",
        ids[:3],
    )
    purged_by_slow = purge(hosts, pair[1][0], pair[1][1])
    purged_by_fast = purge(hosts, pair[0][0], pair[0][1])
    left = hosts.db.query(f"SELECT COUNT(*) FROM skipqueue_job WHERE id IN ({marks})", ids)[0][0]
    figures.update(
        host_offsets_h=offsets,
        lease_s=LEASE,
        job_s=HOLD,
        ran_on=ran_on,
        lease_left_min=round(min(lefts), 2),
        lease_left_max=round(max(lefts), 2),
        samples=len(lefts),
        ticks=len(ticks),
        tick_gaps_s=gaps,
        newest_tick_age_s=round(min(tick_ages), 2),
        purged_by_slow=purged_by_slow,
        purged_by_fast=purged_by_fast,
        **report.as_dict(),
    )
    assert all(ran_on), "each skewed host ran jobs"
    assert report.problems == [] and report.duplicates == 0 and report.errors == {}
    assert min(lefts) > 0 and max(lefts) <= LEASE + 0.1, "leases run on the database clock"
    assert len(ticks) >= 2 and all(abs(age) < 60 for age in tick_ages)
    assert all(1.5 <= gap <= 2.5 for gap in gaps), "ticks every 2 s of the database's clock"
    assert (purged_by_slow, purged_by_fast, left) == (3, 0, 3)
