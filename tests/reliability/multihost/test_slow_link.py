"""A worker host behind a slow, lossy link: throughput and claim latency, nothing lost.

The host's link to the database gets a 10 ms delay each way (a 20 ms round trip: a relay on the
server's address, tests/support/delayrelay.py, since this kernel has no netem) and 1 % packet
loss each way (the rig's random-drop rule in the host's namespace). The same jobs (each writes
a ledger row from its job thread) drain over the plain bridge and over the slow link. Nothing
may be lost; the figures say what a round trip costs (docs/reliability.md).
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


def drain(hosts, host, processes: int, threads: int, port: int | None) -> dict:
    """Start runworkers on ``host``, enqueue JOBS, time the drain; return the figures."""
    env = hosts.env(port=port, HEARTBEAT_SECONDS=0.5, IDLE_POLL_SECONDS=0.2, DATABASE_TIMEOUT=10)
    args = ("--processes", str(processes), "--threads", str(threads), "--queues", "default")
    supervisor = hosts.start(host, env, *args)
    owners = hosts.workers_of(supervisor)
    ids = hosts.enqueue(hosts.env(WAKEUP=False), "tests.reliability.tasks.record", JOBS)
    began = time.monotonic()
    marks = ",".join(["%s"] * len(ids))
    done = f"SELECT COUNT(*) FROM skipqueue_job WHERE status = 'succeeded' AND id IN ({marks})"
    wait_for(lambda: hosts.db.query(done, ids)[0][0] == JOBS, 300, interval=0.1)
    seconds = time.monotonic() - began
    time.sleep(0.6)  # a heartbeat writes the claim latencies
    rows = hosts.db.query(
        f"SELECT MAX(claim_p50_ms), MAX(claim_p95_ms) FROM skipqueue_worker "
        f"WHERE owner IN ({','.join(['%s'] * len(owners))})",
        owners,
    )
    supervisor.stop()
    hosts.started.clear()
    return {
        "jobs_per_s": round(JOBS / seconds, 1),
        "claim_p50_ms": rows[0][0],
        "claim_p95_ms": rows[0][1],
    }


def test_a_slow_lossy_link(hosts, figures):
    host = hosts.rig.hosts[0]
    measured: dict[str, dict] = {}
    server = hosts.server
    for processes, threads in CONFIGURATIONS:
        for delay, loss in LINKS:
            relay = None
            if delay:
                relay = DelayRelay(server.host, (server.host, server.port), delay / 1000)
                hosts.rig.lose(host, loss)
            key = f"{processes}x{threads} rtt={2 * delay}ms loss={loss:g}%"
            try:
                measured[key] = drain(hosts, host, processes, threads, relay and relay.port)
            finally:
                hosts.rig.keep_all(host)
                if relay is not None:
                    relay.close()
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
