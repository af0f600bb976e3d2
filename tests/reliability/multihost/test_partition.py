"""Silent partitions of a worker host: its jobs move on, it notices, it rejoins, nothing is lost.

A partition drops packets without a reply, so nothing tells the worker that its queries will
never be answered. Three hosts run ``runworkers`` in their own namespaces against a server on
the rig's bridge; one host is cut off while it holds jobs.

- Longer than the lease: the other hosts' reapers take the jobs back once the lease ends and
  their workers finish them (within lease + reaper interval); the cut worker notices within
  ``SKIPQUEUE_DATABASE_TIMEOUT`` plus one heartbeat, not the kernel's TCP timeout; once healed
  it reconnects, its late completions are fenced (counted as lost leases), and it claims again.
- Shorter than the lease: the worker renews its leases after the partition; no job runs twice.
"""

from __future__ import annotations

import time

import pytest

from tests.reliability.audit import audit
from tests.reliability.multihost.conftest import first_line_after
from tests.reliability.procs import wait_for

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

TASK = "tests.reliability.tasks.record_then_hold"
HEARTBEAT = 0.5
REAP = 1.0
#: SKIPQUEUE_DATABASE_TIMEOUT scaled to the short lease (the default is 30 s for 60 s leases).
TIMEOUT = 2.0
SETTINGS = {
    "HEARTBEAT_SECONDS": HEARTBEAT,
    "IDLE_POLL_SECONDS": 0.2,
    "REAP_INTERVAL": REAP,
    "DATABASE_TIMEOUT": TIMEOUT,
}
#: Slack for a loaded 2-core machine on top of each documented bound, in seconds.
SLACK = 4.0


def start_hosts(hosts, lease: float) -> tuple[list, list[set[str]]]:
    env = hosts.env(**SETTINGS)
    args = ("--processes", "1", "--threads", "2", "--lease", f"{lease:g}", "--queues", "default")
    supervisors = [hosts.start(host, env, *args) for host in hosts.rig.hosts[:3]]
    return supervisors, [set(hosts.workers_of(supervisor)) for supervisor in supervisors]


def held_by(hosts, owners: set[str]) -> list[int]:
    rows = hosts.db.query("SELECT id, owner FROM skipqueue_job WHERE status = 'claimed'")
    return [int(pk) for pk, owner in rows if owner in owners]


def finished(hosts, ids: list[int]) -> bool:
    marks = ",".join(["%s"] * len(ids))
    rows = hosts.db.query(
        f"SELECT COUNT(*) FROM skipqueue_job WHERE id IN ({marks}) "
        "AND status IN ('succeeded', 'failed', 'cancelled')",
        ids,
    )
    return rows[0][0] == len(ids)


def counters(hosts, owners: set[str]) -> dict[str, int]:
    marks = ",".join(["%s"] * len(owners))
    [(claimed, lost)] = hosts.db.query(
        f"SELECT COALESCE(SUM(claimed), 0), COALESCE(SUM(lost_leases), 0) "
        f"FROM skipqueue_worker WHERE owner IN ({marks})",
        list(owners),
    )
    return {"claimed": int(claimed), "lost_leases": int(lost)}


def cut_off_while_holding(hosts, owners: set[str], jobs: int, hold: float) -> list[int]:
    """Enqueue ``jobs`` holding jobs; return those the first host holds once it holds two."""
    producer = hosts.env(WAKEUP=False)
    hosts.enqueue(producer, TASK, jobs, seconds=hold)
    return wait_for(lambda: len(held_by(hosts, owners)) >= 2 and held_by(hosts, owners), 120)


def test_partition_longer_than_the_lease(hosts, figures):
    lease = 4.0
    supervisors, owners = start_hosts(hosts, lease)
    cut, cut_log, cut_owners = hosts.rig.hosts[0], supervisors[0], owners[0]
    held = cut_off_while_holding(hosts, cut_owners, jobs=24, hold=1.0)
    offset = len(cut_log.log())
    hosts.rig.partition(cut)
    began = time.monotonic()
    noticed = reclaimed = None
    try:
        # The bounds, each waited for no longer than it promises (plus slack for the load).
        wait_for(
            lambda: first_line_after(cut_log, "^database unreachable", offset),
            TIMEOUT + HEARTBEAT + SLACK,
        )
        noticed = time.monotonic() - began
        wait_for(lambda: finished(hosts, held), lease + REAP + SLACK)
        reclaimed = time.monotonic() - began
    finally:
        partitioned_for = time.monotonic() - began
        hosts.rig.heal(cut)
    # Healed: the cut host reconnects, its completions of the reclaimed jobs are fenced.
    wait_for(lambda: first_line_after(cut_log, "database reachable again", offset), 60)
    wait_for(lambda: counters(hosts, cut_owners)["lost_leases"] >= len(held), 60)
    before = counters(hosts, cut_owners)["claimed"]
    # It claims again: a batch that needs every slot of the three hosts.
    later = hosts.enqueue(hosts.env(WAKEUP=False), TASK, 18, seconds=0.5)
    wait_for(lambda: finished(hosts, later), 120)
    after = counters(hosts, cut_owners)
    report = audit(hosts.db.jobs(), hosts.db.ledger())
    figures.update(
        lease_s=lease,
        database_timeout_s=TIMEOUT,
        heartbeat_s=HEARTBEAT,
        reap_s=REAP,
        held=len(held),
        noticed_s=round(noticed, 2),
        reclaimed_and_finished_s=round(reclaimed, 2),
        partitioned_s=round(partitioned_for, 1),
        lost_leases=after["lost_leases"],
        claimed_after_heal=after["claimed"] - before,
        **report.as_dict(),
    )
    assert reclaimed >= lease - HEARTBEAT, "the jobs moved before their lease could end"
    assert report.problems == []
    assert (report.lost, report.failed) == (0, 0)
    assert set(report.causes) <= {"LeaseExpired"}
    assert after["claimed"] > before, "the healed host never claimed again"


def test_partition_shorter_than_the_lease(hosts, figures):
    lease, cut_for = 5.0, 1.5
    _supervisors, owners = start_hosts(hosts, lease)
    cut, cut_owners = hosts.rig.hosts[0], owners[0]
    held = cut_off_while_holding(hosts, cut_owners, jobs=18, hold=1.0)
    hosts.rig.partition(cut)
    try:
        time.sleep(cut_for)
    finally:
        hosts.rig.heal(cut)
    ids = [pk for (pk,) in hosts.db.query("SELECT id FROM skipqueue_job")]
    wait_for(lambda: finished(hosts, ids), 120)
    report = audit(hosts.db.jobs(), hosts.db.ledger())
    cut_counters = counters(hosts, cut_owners)
    figures.update(
        lease_s=lease,
        partitioned_s=cut_for,
        database_timeout_s=TIMEOUT,
        held=len(held),
        cut_lost_leases=cut_counters["lost_leases"],
        **report.as_dict(),
    )
    assert report.problems == []
    assert (report.lost, report.succeeded) == (0, len(ids))
    assert (report.duplicates, report.reattempted, report.errors) == (0, 0, {})
    assert cut_counters["lost_leases"] == 0


def test_partition_of_the_database_host(hosts, figures):
    """Every host loses the server for longer than the lease while jobs run, then it returns."""
    lease = 4.0
    supervisors, owners = start_hosts(hosts, lease)
    everyone = set().union(*owners)
    producer = hosts.env(WAKEUP=False)
    hosts.enqueue(producer, TASK, 24, seconds=1.0)
    held = wait_for(lambda: len(held_by(hosts, everyone)) >= 4 and held_by(hosts, everyone), 120)
    offsets = [len(supervisor.log()) for supervisor in supervisors]
    for host in hosts.rig.hosts[:3]:
        hosts.rig.partition(host)
    began = time.monotonic()
    try:
        for supervisor, offset in zip(supervisors, offsets, strict=True):
            wait_for(
                lambda s=supervisor, o=offset: first_line_after(s, "^database unreachable", o),
                TIMEOUT + HEARTBEAT + SLACK,
            )
        noticed = time.monotonic() - began
        time.sleep(max(0.0, lease + 2.0 - noticed))  # past every lease
    finally:
        partitioned_for = time.monotonic() - began
        for host in hosts.rig.hosts[:3]:
            hosts.rig.heal(host)
    ids = [pk for (pk,) in hosts.db.query("SELECT id FROM skipqueue_job")]
    wait_for(lambda: finished(hosts, ids), 120)
    report = audit(hosts.db.jobs(), hosts.db.ledger())
    figures.update(
        lease_s=lease,
        held=len(held),
        all_noticed_s=round(noticed, 2),
        partitioned_s=round(partitioned_for, 1),
        **report.as_dict(),
    )
    assert report.problems == [] and (report.lost, report.failed) == (0, 0)
    assert set(report.causes) <= {"LeaseExpired"}
