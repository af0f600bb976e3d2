"""Wake-ups across hosts, without them, and under a flood of datagrams from another host.

- A worker on one host listens on its host's address (``SKIPQUEUE_WAKEUP_HOST``); a producer on
  another host wakes it after each enqueue, and the job starts within milliseconds. With the
  datagrams dropped, the worker's poll still starts it within the idle cap.
- Wake-ups are unauthenticated datagrams: a third host floods the worker's port (half the
  datagrams name its queue, half are malformed). The worker reads them at most
  ``SKIPQUEUE_WAKEUP_MAX_RATE`` times a second, so the claim queries the flood causes stay
  bounded, and the queue drains beside it.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.reliability.procs import ROOT, wait_for

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

TASK = "tests.reliability.tasks.record"
CAP = 3.0
MAX_RATE = 50


def worker_env(hosts, host, **settings):
    """A worker that listens on its host's address (other hosts reach it)."""
    base = {"HEARTBEAT_SECONDS": 0.5, "IDLE_POLL_SECONDS": CAP}
    return hosts.env(WAKEUP_HOST=host.address, **{**base, **settings})


def start_latencies(hosts, ids: list[int]) -> list[float]:
    marks = ",".join(["%s"] * len(ids))
    rows = hosts.db.query(
        f"SELECT TIMESTAMPDIFF(MICROSECOND, enqueued_at, started_at) / 1e6 FROM skipqueue_job "
        f"WHERE id IN ({marks})",
        ids,
    )
    return sorted(round(float(seconds), 3) for (seconds,) in rows)


def finished(hosts, ids: list[int]) -> bool:
    marks = ",".join(["%s"] * len(ids))
    rows = hosts.db.query(
        f"SELECT COUNT(*) FROM skipqueue_job WHERE id IN ({marks}) AND status = 'succeeded'",
        ids,
    )
    return rows[0][0] == len(ids)


def test_wakeups_across_hosts_and_the_poll_without_them(hosts, figures):
    listener, producer_host = hosts.rig.hosts[0], hosts.rig.hosts[1]
    args = ("--processes", "1", "--threads", "1", "--queues", "default")
    supervisor = hosts.start(listener, worker_env(hosts, listener), *args)
    [owner] = hosts.workers_of(supervisor)
    [(address,)] = hosts.db.query(
        "SELECT wakeup_address FROM skipqueue_worker WHERE owner = %s", [owner]
    )
    producer = hosts.env(HEARTBEAT_SECONDS=0.5)
    woken_ids = hosts.enqueue(producer, TASK, 6, host=producer_host, every=0.5)
    wait_for(lambda: finished(hosts, woken_ids), 60)
    hosts.rig.drop_datagrams(listener)
    polled_ids = hosts.enqueue(producer, TASK, 6, host=producer_host, every=0.5)
    wait_for(lambda: finished(hosts, polled_ids), 60)
    woken, polled = start_latencies(hosts, woken_ids), start_latencies(hosts, polled_ids)
    figures.update(
        worker_address=address,
        idle_cap_s=CAP,
        woken_start_s=woken,
        polled_start_s=polled,
        woken_median_s=statistics.median(woken),
        polled_median_s=statistics.median(polled),
    )
    assert address.startswith(listener.address + ":")
    assert max(woken) < 1.0, "a woken worker starts the job at once"
    assert max(polled) <= CAP + 2.0, "without wake-ups the poll starts it within the idle cap"
    assert max(polled) > 0.3, "the datagrams were dropped (else the test proves nothing)"


def claim_queries(hosts, owner: str) -> int:
    [(count,)] = hosts.db.query(
        "SELECT COALESCE(SUM(claim_queries), 0) FROM skipqueue_queue_minute WHERE owner = %s",
        [owner],
    )
    return int(count)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / 100


def drain(hosts, count: int) -> float:
    """Enqueue ``count`` jobs (no wake-up: the flood is the only one); return jobs/s drained.

    Timed from the enqueue's commit (the child's start-up left out) to the last job's end.
    """
    ids = hosts.enqueue(hosts.env(WAKEUP=False), TASK, count)
    began = time.monotonic()
    wait_for(lambda: finished(hosts, ids), 120)
    return round(count / (time.monotonic() - began), 1)


def test_a_flood_of_wakeups_makes_a_bounded_number_of_claims(hosts, figures):
    target, flooder = hosts.rig.hosts[0], hosts.rig.hosts[2]
    args = ("--processes", "1", "--threads", "2", "--queues", "default")
    env = worker_env(hosts, target, IDLE_POLL_SECONDS=1.0)
    supervisor = hosts.start(target, env, *args)
    [owner] = hosts.workers_of(supervisor)
    [worker_pid] = supervisor.workers()
    [(address,)] = hosts.db.query(
        "SELECT wakeup_address FROM skipqueue_worker WHERE owner = %s", [owner]
    )
    port = address.rpartition(":")[2]
    quiet_rate = drain(hosts, 200)
    seconds = 12.0
    flood = subprocess.Popen(
        [
            *flooder.prefix(),
            sys.executable,
            "-m",
            "tests.reliability.multihost.flood",
            target.address,
            port,
            "50000",
            str(seconds),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        time.sleep(1.0)  # the flood is under way
        queries, cpu, began = (
            claim_queries(hosts, owner),
            cpu_seconds(worker_pid),
            time.monotonic(),
        )
        time.sleep(3.0)  # an idle queue under the flood
        time.sleep(0.6)  # a heartbeat writes the counters
        idle_queries = claim_queries(hosts, owner) - queries
        idle_for = time.monotonic() - began - 0.6
        idle_cpu = (cpu_seconds(worker_pid) - cpu) / (time.monotonic() - began)
        flooded_rate = drain(hosts, 200)
        out, _ = flood.communicate(timeout=60)
    finally:
        if flood.poll() is None:
            flood.kill()
            flood.wait()
    sent = json.loads(out.strip().splitlines()[-1])
    per_second = round(idle_queries / idle_for, 1)
    log = supervisor.log()
    figures.update(
        flood=sent,
        wakeup_max_rate=MAX_RATE,
        idle_claim_queries_per_s=per_second,
        worker_cpu_share=round(idle_cpu, 2),
        drain_jobs_per_s_quiet=quiet_rate,
        drain_jobs_per_s_flooded=flooded_rate,
        ignored_logged="wake-up datagrams ignored" in log,
    )
    assert sent["rate"] > 5000, "the flood was a flood"
    assert per_second <= MAX_RATE * 1.2 + 2, "claims from wake-ups are bounded"
    assert "wake-up datagrams ignored (not queue names)" in log
    assert log.count("wake-up datagrams ignored") <= 2, "one line a minute, not one a datagram"
