"""A worker host behind a slow, lossy link: throughput and claim latency, nothing lost.

The host's link to the database gets a 10 ms delay each way (a 20 ms round trip: a relay on the
server's address, tests/support/delayrelay.py, since this kernel has no netem) and, in the first
test, 1 % packet loss each way (the rig's random-drop rule in the host's namespace). The same
jobs (each writes a ledger row from its job thread) drain over the plain bridge and over the
slow link. Nothing may be lost; the figures say what a round trip costs (docs/reliability.md).
The second test holds the worker to its promise for ``4 x 16`` workers: over the 20 ms link,
at least SLOW_TO_PLAIN of the plain bridge's throughput, measured in the same test with the
two links taking turns, in at most ROUND_TRIPS_PER_JOB round trips a job.
"""

from __future__ import annotations

import time

import pytest

from tests.reliability.audit import audit
from tests.reliability.procs import wait_for
from tests.support.delayrelay import DelayRelay

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

JOBS = 150
#: (processes, threads) per configuration.
CONFIGURATIONS = ((2, 8),)
#: One-way delay in ms and loss in percent each way; (0, 0): the plain bridge.
LINKS = ((0, 0), (10, 1))
#: The promise of docs/reliability.md: 4 x 16 workers over a 20 ms round trip drain at least
#: this share of what they drain over the plain bridge. Measured 0.26 to 0.61 at loads of 5 to
#: 19 on two cores, 0.27 in a loaded CI run (the relay and the workers wait for a core after
#: every packet there). The load moves it too much to tell today's code from the code before
#: claiming ahead and the three-round-trip claim (b3dd8cf: 0.19, 0.26, 0.27, 0.28, 0.32): it
#: fails a link that stalls; 0.26 twice at loads of 15 to 19 left 0.25 no margin, so the share is
#: 0.20 and the round trips below catch that regression.
SLOW_TO_PLAIN = 0.20
#: Most round trips a job over the 20 ms link, every connection of the host counted (the
#: supervisor's too), which the load hardly moves: today's code 2.76 to 3.19 at loads of 9 to
#: 19 (3.07 with --prefetch 0), b3dd8cf 4.28 to 4.34 at loads of 9 to 20 (a ping before each
#: job, six round trips a claim).
ROUND_TRIPS_PER_JOB = 3.5
#: Jobs per drain of the 4 x 16 test, and drains per link (the links take turns).
WIDE_JOBS = 800
WIDE_TURNS = 2


def drain(
    hosts, host, processes: int, threads: int, port: int | None, jobs: int, heartbeat: float
) -> dict:
    """Start runworkers on ``host``, enqueue ``jobs``, time the drain; return the figures.

    The drain's time runs from the first claim to the last finish, by the database clock:
    neither the workers' start nor the enqueue counts. The claim latencies are the last
    heartbeat's (``heartbeat`` seconds apart).
    """
    env = hosts.env(
        port=port, HEARTBEAT_SECONDS=heartbeat, IDLE_POLL_SECONDS=0.2, DATABASE_TIMEOUT=10
    )
    args = ("--processes", str(processes), "--threads", str(threads), "--queues", "default")
    supervisor = hosts.start(host, env, *args)
    owners = hosts.workers_of(supervisor)
    ids = hosts.enqueue(hosts.env(WAKEUP=False), "tests.reliability.tasks.record", jobs)
    marks = ",".join(["%s"] * len(ids))
    done = f"SELECT COUNT(*) FROM skipqueue_job WHERE status = 'succeeded' AND id IN ({marks})"
    wait_for(lambda: hosts.db.query(done, ids)[0][0] == jobs, 300, interval=0.1)
    [(first, last)] = hosts.db.query(
        f"SELECT MIN(started_at), MAX(finished_at) FROM skipqueue_job WHERE id IN ({marks})", ids
    )
    seconds = max((last - first).total_seconds(), 1e-3)
    time.sleep(min(heartbeat + 0.1, 1.0))  # a heartbeat writes the claim latencies
    rows = hosts.db.query(
        f"SELECT MAX(claim_p50_ms), MAX(claim_p95_ms) FROM skipqueue_worker "
        f"WHERE owner IN ({','.join(['%s'] * len(owners))})",
        owners,
    )
    supervisor.stop()
    hosts.started.clear()
    return {
        "jobs": jobs,
        "seconds": round(seconds, 2),
        "jobs_per_s": round(jobs / seconds, 1),
        "claim_p50_ms": rows[0][0],
        "claim_p95_ms": rows[0][1],
    }


def drain_over(
    hosts, processes: int, threads: int, delay: float, loss: int, jobs: int, heartbeat: float = 0.5
) -> dict:
    """One drain over the bridge (``delay`` 0) or a link of ``delay`` ms each way."""
    host, server = hosts.rig.hosts[0], hosts.server
    relay = None
    if delay:
        relay = DelayRelay(server.host, (server.host, server.port), delay / 1000)
    if loss:
        hosts.rig.lose(host, loss)
    try:
        port = relay and relay.port
        measured = drain(hosts, host, processes, threads, port, jobs, heartbeat)
    finally:
        hosts.rig.keep_all(host)
        if relay is not None:
            relay.close()
    if relay is not None:
        measured["round_trips"] = relay.turns
        measured["round_trips_per_job"] = round(relay.turns / jobs, 2)
    return measured


def test_a_slow_lossy_link(hosts, figures):
    measured: dict[str, dict] = {}
    for processes, threads in CONFIGURATIONS:
        for delay, loss in LINKS:
            key = f"{processes}x{threads} rtt={2 * delay}ms loss={loss:g}%"
            measured[key] = drain_over(hosts, processes, threads, delay, loss, JOBS)
    report = audit(hosts.db.jobs(), hosts.db.ledger(), task_errors=True)
    ratios = {
        f"{p}x{t}": round(
            measured[f"{p}x{t} rtt=20ms loss=1%"]["jobs_per_s"]
            / measured[f"{p}x{t} rtt=0ms loss=0%"]["jobs_per_s"],
            2,
        )
        for p, t in CONFIGURATIONS
    }
    figures.update(runs=measured, slow_to_plain=ratios, **report.as_dict())
    assert report.problems == [] and (report.lost, report.failed) == (0, 0)
    assert report.succeeded == JOBS * len(CONFIGURATIONS) * len(LINKS)


def test_4x16_over_20ms_keep_a_stated_share_of_the_bridge(hosts, figures):
    """4 processes x 16 threads: the 20 ms link and the bridge take turns, WIDE_TURNS each.

    The share compares the totals (jobs over seconds of draining) of each link, so that a
    moment of load on the machine weighs on both sides alike. The round trips a job are those
    the relay counted over the 20 ms drains: what the worker's code costs on a long link, which
    the load leaves nearly as it is. The claim latencies reported are those of the workers'
    last heartbeat before the drain ended, if one came.
    """
    runs: dict[str, list[dict]] = {"bridge": [], "20ms": []}
    for turn in range(WIDE_TURNS):
        order = ("bridge", "20ms") if turn % 2 == 0 else ("20ms", "bridge")
        for link in order:
            delay = 10 if link == "20ms" else 0
            # The default heartbeat (5 s): a renewal every 0.5 s would cost each process
            # three round trips of its loop's time every 0.5 s, a configuration nobody runs.
            runs[link].append(drain_over(hosts, 4, 16, delay, 0, WIDE_JOBS, heartbeat=5.0))

    def rate(link: str) -> float:
        return sum(r["jobs"] for r in runs[link]) / sum(r["seconds"] for r in runs[link])

    share = rate("20ms") / rate("bridge")
    slow = runs["20ms"]
    round_trips = sum(r["round_trips"] for r in slow) / sum(r["jobs"] for r in slow)
    report = audit(hosts.db.jobs(), hosts.db.ledger(), task_errors=True)
    figures.update(
        runs=runs,
        bridge_jobs_per_s=round(rate("bridge"), 1),
        slow_jobs_per_s=round(rate("20ms"), 1),
        slow_to_plain=round(share, 2),
        promised=SLOW_TO_PLAIN,
        round_trips_per_job=round(round_trips, 2),
        promised_round_trips=ROUND_TRIPS_PER_JOB,
        **report.as_dict(),
    )
    assert report.problems == [] and (report.lost, report.failed) == (0, 0)
    assert report.succeeded == WIDE_JOBS * WIDE_TURNS * 2
    assert len(hosts.db.ledger()) == WIDE_JOBS * WIDE_TURNS * 2
    assert share >= SLOW_TO_PLAIN, f"20 ms drained {share:.2f} of the bridge's throughput"
    assert round_trips <= ROUND_TRIPS_PER_JOB, f"{round_trips:.2f} round trips a job at 20 ms"
