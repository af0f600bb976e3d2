"""Wake-ups across hosts, without them, and under a flood of datagrams from another host.

- A worker on one host listens on its host's address (``SKIPQUEUE_WAKEUP_HOST``); a producer on
  another host wakes it after each enqueue, and the job starts within milliseconds. With the
  datagrams dropped, the worker's poll still starts it within the idle cap.
- Wake-ups are unauthenticated datagrams: a third host floods the worker's port (half the
  datagrams name its queue, half are malformed). The worker reads them at most
  ``SKIPQUEUE_WAKEUP_MAX_RATE`` times a second, so the claim queries the flood causes stay
  bounded, and the queue drains beside a second flood.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from django_skipqueue.wakeup import READ_BURST_SECONDS
from tests.reliability.procs import ROOT, wait_for

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

TASK = "tests.reliability.tasks.record"
CAP = 3.0
MAX_RATE = 50
#: The flood test's idle cap, and how long each of its floods lasts (the idle queue's, the
#: drain's).
FLOOD_IDLE_CAP = 1.0
IDLE_FLOOD_SECONDS = 4.0
DRAIN_FLOOD_SECONDS = 8.0


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


def claim_queries_at_next_beat(hosts, owner: str) -> int:
    """The worker's claim queries until its next heartbeat, once that heartbeat is written.

    A heartbeat writes the counters (of every claim its loop made before it) right after its
    timestamp; the worker makes no claim while it writes them.
    """
    [(now,)] = hosts.db.query("SELECT NOW(6)")
    beat = "SELECT last_heartbeat_at FROM skipqueue_worker WHERE owner = %s"
    wait_for(lambda: hosts.db.query(beat, [owner])[0][0] > now, 60)
    return claim_queries(hosts, owner)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / 100


def drain(hosts, count: int) -> float:
    """Enqueue ``count`` jobs (no wake-up: the flood is the only one); return jobs/s drained.

    Timed by the database clock from the enqueue (one statement) to the last job's end: a
    flooded worker may have run them all before the enqueuing child has exited.
    """
    ids = hosts.enqueue(hosts.env(WAKEUP=False), TASK, count)
    wait_for(lambda: finished(hosts, ids), 120)
    marks = ",".join(["%s"] * len(ids))
    [(seconds,)] = hosts.db.query(
        f"SELECT TIMESTAMPDIFF(MICROSECOND, MIN(enqueued_at), MAX(finished_at)) / 1e6 "
        f"FROM skipqueue_job WHERE id IN ({marks})",
        ids,
    )
    return round(count / max(float(seconds), 1e-3), 1)


def start_flood(flooder, address: str, port: str, seconds: float) -> subprocess.Popen:
    """Send 50,000 datagrams a second from ``flooder`` to the worker for ``seconds``."""
    command = [sys.executable, "-m", "tests.reliability.multihost.flood", address, port]
    return subprocess.Popen(
        [*flooder.prefix(), *command, "50000", str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def flood_ended(flood: subprocess.Popen) -> dict:
    """Wait for the flood; return what it sent, and how long it sent for by its own clock."""
    try:
        out, _ = flood.communicate(timeout=120)
    finally:
        if flood.poll() is None:
            flood.kill()
            flood.wait()
    return json.loads(out.strip().splitlines()[-1])


def test_a_flood_of_wakeups_makes_a_bounded_number_of_claims(hosts, figures):
    target, flooder = hosts.rig.hosts[0], hosts.rig.hosts[2]
    args = ("--processes", "1", "--threads", "2", "--queues", "default")
    env = worker_env(hosts, target, IDLE_POLL_SECONDS=FLOOD_IDLE_CAP)
    supervisor = hosts.start(target, env, *args)
    [owner] = hosts.workers_of(supervisor)
    [worker_pid] = supervisor.workers()
    [(address,)] = hosts.db.query(
        "SELECT wakeup_address FROM skipqueue_worker WHERE owner = %s", [owner]
    )
    port = address.rpartition(":")[2]
    quiet_rate = drain(hosts, 200)

    # The idle queue under a flood: the worker's claim queries counted from a heartbeat
    # before the flood to one after it, so every claim it caused is in the count however
    # late the machine's load makes the heartbeats or this test.
    began = time.monotonic()
    before = claim_queries_at_next_beat(hosts, owner)
    cpu, cpu_from = cpu_seconds(worker_pid), time.monotonic()
    idle_flood = flood_ended(start_flood(flooder, target.address, port, IDLE_FLOOD_SECONDS))
    idle_cpu = (cpu_seconds(worker_pid) - cpu) / (time.monotonic() - cpu_from)
    idle_queries = claim_queries_at_next_beat(hosts, owner) - before
    counted_for = time.monotonic() - began

    # What the worker guarantees, whatever the load (wakeup.Waker and the Claimer): it reads
    # its datagram socket at most MAX_RATE times a second on average, each read that found a
    # queue's name makes one claim query, and it polls the idle queue once per idle cap. So the
    # flood's reads are at most MAX_RATE a second of the flood's own clock, plus the reads a
    # Waker may make back to back (READ_BURST_SECONDS of its rate), one at its start and one
    # for what was left in the socket at its end; the polls at most one per
    # FLOOD_IDLE_CAP of the counted time, plus one at each end and one for a first count
    # read between a heartbeat's timestamp and its counters (a poll before the window).
    woken_at_most = MAX_RATE * idle_flood["seconds"] + 2 + MAX_RATE * READ_BURST_SECONDS
    polled_at_most = counted_for / FLOOD_IDLE_CAP + 3

    flood = start_flood(flooder, target.address, port, DRAIN_FLOOD_SECONDS)
    try:
        flooded_rate = drain(hosts, 200)
    finally:
        drain_flood = flood_ended(flood)
    log = supervisor.log()
    figures.update(
        flood=idle_flood,
        drain_flood=drain_flood,
        wakeup_max_rate=MAX_RATE,
        idle_claim_queries=idle_queries,
        idle_claim_queries_bound=round(woken_at_most + polled_at_most, 1),
        idle_claim_queries_per_s=round(idle_queries / idle_flood["seconds"], 1),
        worker_cpu_share=round(idle_cpu, 2),
        drain_jobs_per_s_quiet=quiet_rate,
        drain_jobs_per_s_flooded=flooded_rate,
        ignored_logged="wake-up datagrams ignored" in log,
    )
    assert idle_flood["rate"] > 5000 and drain_flood["rate"] > 5000, "the floods were floods"
    assert idle_queries > polled_at_most, "the flood's wake-ups made claims beyond the poll"
    assert idle_queries <= woken_at_most + polled_at_most, "claims from wake-ups are bounded"
    assert "wake-up datagrams ignored (not queue names)" in log
    assert log.count("wake-up datagrams ignored") <= 2, "one line a minute, not one a datagram"
