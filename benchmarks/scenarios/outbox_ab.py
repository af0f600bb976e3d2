"""The outbox's hot paths before and after a change, two commits interleaved in one invocation.

``python -m benchmarks outbox_ab --before REV [--after REV] --rounds N --messages M``

Each commit is checked out in a git worktree of its own with a database of its own (as
:mod:`benchmarks.sides` has it; every process runs its side's ``django_skipqueue``), and
round after round, the sides alternating which goes first (AB, BA, ...), each side measures:

1. ``publish``: M single ``publish()`` calls in one process, each its own transaction
   (autocommit, as a view makes them), after a warm-up;
2. ``publish_many``: M messages in ``publish_many()`` chunks of 1,000, a transaction each;
3. ``relay``: ``skipqueue_relay --burst`` drains the M messages of (2) to a RabbitMQ vhost of
   the benchmark's own, into a durable queue bound to the topic's exchange (every message
   routable; purged before each drain), timed from the relay's start to its exit.

Messages/s, and CPU per message of the publishing process (its process time) or of the relay
(its rusage). Prints one line per side and round, then JSON: the medians of each side and
after/before ratios (throughput above 1 is faster after, CPU below 1 is cheaper after), the
machine and its load average (``--out`` also writes every run).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from benchmarks.backlog import connect
from benchmarks.harness import ROOT, interleaved
from benchmarks.sides import (
    WORK,
    Side,
    _git,
    ab_parser,
    outcome,
    remove_worktrees,
    sides_of,
)
from benchmarks.stats import ratio, summary
from tests.support.brokers import RabbitQueue, rabbitmq_vhost

SETTINGS = "benchmarks.peers.outbox"
SETTINGS_FILE = Path("benchmarks") / "peers" / "outbox.py"
TOPIC, QUEUE = "orders", "outbox-ab"
PHASES = ("publish", "publish_many", "relay")
FIGURES = ("msgs_per_s", "cpu_us_per_msg")
#: Run by each side's interpreter: warm up both calls, then time M publish() (autocommit),
#: then M messages in publish_many() chunks, leaving those M for the relay.
CHILD = """
import json, sys, time
import django
django.setup()
from django.db import connection, transaction
from django_skipqueue.outbox import Message, publish, publish_many
count, keys, chunk = (int(arg) for arg in sys.argv[1:4])
def payload(n):
    return {"order_id": n, "total": "12.50"}
def singles():
    for n in range(count):
        publish("orders", payload(n), key=f"order-{n % keys}")
def chunks():
    for start in range(0, count, chunk):
        with transaction.atomic():
            publish_many([Message("orders", payload(n), key=f"order-{n % keys}")
                          for n in range(start, min(start + chunk, count))])
def empty():
    connection.cursor().execute("TRUNCATE TABLE skipqueue_outbox")
def timed(run):
    empty()
    cpu, wall = time.process_time(), time.perf_counter()
    run()
    return {"seconds": time.perf_counter() - wall, "cpu": time.process_time() - cpu}
for n in range(200):
    publish("orders", payload(n), key="warm-up")
publish_many([Message("orders", payload(n), key="warm-up") for n in range(200)])
print(json.dumps({"publish": timed(singles), "publish_many": timed(chunks)}))
"""


class OutboxSide(Side):
    """A side of the A/B with the outbox settings; its worktree apart from before_after's."""

    def __init__(self, name: str, rev: str, database: str) -> None:
        super().__init__(name, rev, database)
        self.checkout = WORK / f"outbox-{name}-{self.sha[:10]}"
        self.system = replace(self.system, settings=SETTINGS)

    def prepare(self) -> None:
        """Check out the commit, give it this checkout's settings module, migrate."""
        if not self.checkout.exists():
            _git("worktree", "add", "--detach", str(self.checkout), self.sha)
        shutil.copyfile(ROOT / SETTINGS_FILE, self.checkout / SETTINGS_FILE)
        super().prepare()


def figures(count: int, seconds: float, cpu: float) -> dict[str, float]:
    return {"msgs_per_s": count / seconds, "cpu_us_per_msg": cpu / count * 1e6}


def publish(side: OutboxSide, count: int, keys: int) -> dict[str, dict[str, float]]:
    """Run the publishing child; the outbox then holds ``count`` messages for the relay."""
    out = side.run("-c", CHILD, str(count), str(keys), "1000", timeout=600)
    timed = json.loads(out.strip().splitlines()[-1])
    return {phase: figures(count, **timed[phase]) for phase in ("publish", "publish_many")}


def relay(side: OutboxSide, queue: RabbitQueue, url: str, count: int) -> dict[str, float]:
    """Drain the outbox with ``skipqueue_relay --burst``; check every message reached the queue.

    Its CPU is the difference of this process's reaped children's rusage around its wait
    (nothing else is reaped meanwhile).
    """
    queue.channel.queue_purge(QUEUE)
    command = side.system.django("skipqueue_relay", "--burst", "--broker", url)
    log = WORK / "logs" / f"outbox-ab-{side.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with log.open("ab") as output:
        began = time.perf_counter()
        code = subprocess.call(command, env=side.env(), stdout=output, stderr=output, timeout=600)
        seconds = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    left = _outbox_rows(side)
    delivered = queue.count()
    if code != 0 or left or delivered != count:
        raise RuntimeError(
            f"{side.name}: relay exit {code}, {left} left in the outbox, {delivered} of "
            f"{count} in the queue (see {log})"
        )
    return figures(count, seconds, cpu)


def _outbox_rows(side: OutboxSide) -> int:
    cursor = connect(side.system.database).cursor()
    cursor.execute("SELECT COUNT(*) FROM skipqueue_outbox")
    return int(cursor.fetchone()[0])


def reset(side: OutboxSide) -> None:
    """An empty outbox and no relay rows left by the runs before (publish() reads them)."""
    db = connect(side.system.database)
    db.cursor().execute("TRUNCATE TABLE skipqueue_outbox")
    db.cursor().execute("DELETE FROM skipqueue_outbox_relay")
    db.close()


def medians(runs: dict[str, dict[str, list[dict[str, float]]]]) -> dict[str, dict]:
    """Per phase and figure: each side's median and after/before."""
    table: dict[str, dict] = {}
    for phase, by_side in runs.items():
        table[phase] = {}
        for key in FIGURES:
            found = {n: summary([r[key] for r in by_side.get(n, [])]) for n in ("before", "after")}
            before, after = found["before"]["median"], found["after"]["median"]
            table[phase][key] = {"before": before, "after": after,
                                 "after/before": ratio(after, before)}  # fmt: skip
    return table


def main() -> None:
    parser = ab_parser(__doc__.splitlines()[0], rounds=5, db_prefix="sq_oxab")
    parser.add_argument("--messages", type=int, default=5000, help="per phase and run")
    parser.add_argument("--keys", type=int, default=20, help="message keys (as outbox_relay)")
    args = parser.parse_args()
    sides = sides_of(args, OutboxSide)
    started = {"at": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "loadavg": os.getloadavg()}
    runs: dict[str, dict[str, list[dict[str, float]]]] = {}
    try:
        for side in sides:
            side.prepare()
        with rabbitmq_vhost() as url:
            queue = RabbitQueue(url, TOPIC, QUEUE)
            try:
                for rnd, _, side in interleaved(args.rounds, ["outbox"], sides):
                    reset(side)
                    measured = publish(side, args.messages, args.keys)
                    measured["relay"] = relay(side, queue, url, args.messages)
                    for phase in PHASES:
                        by_side = runs.setdefault(phase, {})
                        by_side.setdefault(side.name, []).append(measured[phase])
                    report(rnd, side.name, measured)
            finally:
                queue.close()
    finally:
        remove_worktrees(sides)
    result = {**outcome(sides, started, args), "medians": medians(runs)}
    if args.out:
        args.out.write_text(json.dumps(result | {"runs": runs}, indent=1, default=str) + "\n")
    print(json.dumps(result, indent=1, default=str))


def report(rnd: int, name: str, result: dict[str, dict[str, float]]) -> None:
    brief = "; ".join(
        f"{phase} {result[phase]['msgs_per_s']:,.0f}/s "
        f"{result[phase]['cpu_us_per_msg']:.0f} us CPU/msg"
        for phase in PHASES
    )
    at = time.strftime("%H:%M:%S")
    print(f"{at} round {rnd + 1} {name}: {brief}; load {os.getloadavg()[0]:.2f}", flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
