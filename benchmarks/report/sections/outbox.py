"""The outbox's section of docs/benchmarks.md, from ``python -m benchmarks outbox_relay``'s JSON.

The relay is measured by its own command (it needs RabbitMQ, which the interleaved job-queue
scenarios do not), so this section reports its last run as it was taken.
"""

from __future__ import annotations

import statistics
from typing import Any

from benchmarks.report.markdown import table
from benchmarks.report.registry import Inputs, section


def _figure(runs: list[float]) -> str:
    return f"{statistics.median(runs):,.0f} ({min(runs):,.0f}–{max(runs):,.0f})"


def _paired(relay: list[float], raw: list[float]) -> float:
    """The median ratio of the repetitions' pairs, each taken back to back."""
    return statistics.median(r / w for r, w in zip(relay, raw, strict=True))


def _render(result: dict[str, Any]) -> str:

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
    paired = {n: _paired(runs[f"relay-{n}"], runs[f"raw-{n}"]) for n in (1, 4)}
    loads = result.get("load_average", {})
    load = ", ".join(f"{name.replace('_', ' ')} {value:.1f}" for name, value in loads.items())
    when = f";\n{result['when']}" if result.get("when") else ""
    loads_line = f"load average {load or 'not recorded'}{when}"
    notes = result.get("notes", {})
    pairs = f"\n\n{notes['pairs']}" if notes.get("pairs") else ""
    pairs += " Publishing costs the"
    write_cost = f" {notes['write_cost']}" if notes.get("write_cost") else "."
    return f"""
## The outbox relay: throughput against raw pika, commit-to-publish latency, write cost

`python -m benchmarks outbox_relay` (RabbitMQ on the same host, a vhost of its own, one durable
queue; {result["messages"]:,} messages over {result.get("keys", 20)} keys per run,
{result["reps"]} runs per figure, interleaved; {loads_line}). The relays
(`skipqueue_relay` processes) are started and left idle, the messages are committed in one
transaction, and a run is timed from the commit to an empty outbox. The raw reference is a pika
loop publishing the same bodies and properties (persistent, `mandatory`, `message_id`,
headers) from as many connected processes, timed from a common start signal to the last
confirm, with publisher confirms in batches of 256: a batch goes out, then its confirms are
awaited. Neither figure includes a process start. Messages per second, median (min–max):

{table(["", "relay", "raw pika loop", "relay ÷ raw"], rows)}

The ratio of each repetition's pair (relay and raw run back to back), median: {paired[1]:.2f}×
with one process, {paired[4]:.2f}× with four. The target is at least 0.7×.{pairs}
relay what it costs the raw loop: waves of 256 with their confirms in flight, up to
`SKIPQUEUE_OUTBOX_IN_FLIGHT_PER_KEY` (256) of one key, each wave waiting once for RabbitMQ to put
it on disk. On top comes the relay's database work: each round reads its partitions' messages
(about 500 rows per partition) as plain rows, the payload's stored JSON text being the body,
stamps them with its claim and commits, then deletes the confirmed rows. That work rides on
RabbitMQ's confirm waits: the next round is claimed a partition per wave's wait (each about
one wait long), and a round's settlement (the delete, the release of its partitions) is
written during the next round's first wait, so the database work overlaps the broker's disk
wait instead of following it. What cannot overlap is CPU: on two cores that also run MariaDB
and RabbitMQ, the stamp and the delete (two row writes per message on the database server)
compete with the publishing, and the spread of the figures (min–max) is wider than the gap.
A relay run ends when the outbox is empty, watched through the
broker's queue depth until every message arrived and only then through the outbox (polling the
outbox every 5 ms walked the deleted rows InnoDB had not purged yet, database work that
competed with the relays). With `SKIPQUEUE_OUTBOX_IN_FLIGHT_PER_KEY = 1` (a message waits for
the confirm of the one before it of its key) a wave holds one message per key, 20 at most here,
and a relay goes at the pace of 20-message confirm batches, a fraction of these figures.

Commit-to-publish latency on an idle relay ({len(latencies)} messages, each written in its own
transaction 50 ms apart, timed from the commit's return to a consumer's receipt): p50
**{statistics.median(latencies):.1f} ms**, p99 {p99:.1f} ms, against a target of a 10 ms p50.
The commit's wake-up datagram names the partition of the message, and the woken relay leases
it at once; what remains is the claim transaction before the publish (a locking read and an
update for the lease, the read of the messages, their stamp, and a commit that waits for
MariaDB's log flush: six round trips), each a round trip to a server that shares two cores
with the test suites of the other runs (the load average above).

Write cost, one transaction with one event: `publish()` {writes["publish"]:,.0f} µs, `enqueue()`
of a job for the same event {writes["enqueue"]:,.0f} µs{write_cost}
"""


@section(210, "outbox", full_only=True)
def outbox(inputs: Inputs) -> str:
    return _render(inputs.results["outbox"])
