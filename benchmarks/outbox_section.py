"""The outbox's section of docs/benchmarks.md, from ``python -m benchmarks.outbox_relay``'s JSON.

The relay is measured by its own command (it needs RabbitMQ, which the interleaved job-queue
scenarios do not), so this section reports its last run as it was taken.
"""

from __future__ import annotations

import statistics
from typing import Any


def _figure(runs: list[float]) -> str:
    return f"{statistics.median(runs):,.0f} ({min(runs):,.0f}–{max(runs):,.0f})"


def section(result: dict[str, Any]) -> str:
    from benchmarks.report import table

    runs = result["throughput"]
    ratio = {n: statistics.median(runs[f"relay-{n}"]) / statistics.median(runs[f"raw-{n}"])
             for n in (1, 4)}  # fmt: skip
    rows = [
        [f"{n} process(es)", _figure(runs[f"relay-{n}"]), _figure(runs[f"raw-{n}"]),
         f"{ratio[n]:.2f}×"]
        for n in (1, 4)
    ]  # fmt: skip
    latencies = sorted(result["latency_ms"])
    p99 = latencies[max(int(len(latencies) * 0.99) - 1, 0)]
    writes = result["write_us"]
    return f"""
## The outbox relay: throughput against raw pika, commit-to-publish latency, write cost

`python -m benchmarks.outbox_relay` (RabbitMQ on the same host, a vhost of its own, one durable
queue; {result["messages"]:,} messages over 20 keys per run, {result["reps"]} runs per figure,
interleaved). The relay runs as `skipqueue_relay --burst` processes timed from their start to
an empty outbox; the raw reference is a pika loop publishing the same bodies and properties
(persistent, `mandatory`, `message_id`, headers) with publisher confirms, in as many spawned
processes. Messages per second, median (min–max):

{table(["", "relay", "raw pika loop", "relay ÷ raw"], rows)}

Both wait for each confirm, the one confirm mode pika's `BlockingConnection` offers, and on a
durable queue RabbitMQ confirms a persistent message once it is on disk: both are bound by the
broker's disk writes, not by the relay's Python or its database work, and four processes do not
go four times as fast on this shared 2-core machine. Publishing a round's messages with their
confirms in flight (a wave per position in each key, so that a refused message still never has
a later message of its key confirmed before it) is what would lift both; it needs an
asynchronous client and is not done yet.

Commit-to-publish latency on an idle relay ({len(latencies)} messages, each written in its own
transaction 50 ms apart, timed from the commit's return to a consumer's receipt): p50
**{statistics.median(latencies):.1f} ms**, p99 {p99:.1f} ms. The commit's wake-up datagram
reaches the idle relay at once; without it the relay would look every
`SKIPQUEUE_OUTBOX_IDLE_POLL_SECONDS` (1 s).

Write cost, one transaction with one event: `publish()` {writes["publish"]:,.0f} µs, `enqueue()` of
a job for the same event {writes["enqueue"]:,.0f} µs.
"""
