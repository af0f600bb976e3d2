"""The outbox relay against a raw pika loop, and commit-to-publish latency of an idle relay.

Throughput: 1 or 4 ``skipqueue_relay`` processes are started and left idle; N messages over 20
keys are then committed to the outbox in one transaction, and the run is timed from the commit
to an empty outbox (watched through the broker's queue depth until every message is there, then
the outbox itself). The raw reference publishes the same bodies and properties (persistent,
mandatory, message_id, headers) with pika from 1 or 4 connected processes, timed from a common
start signal to the last confirm, with publisher confirms in batches of 256 (publish a batch,
then wait for its confirms), the relay's wave size. Neither figure includes a process start.
Both run interleaved, on a RabbitMQ vhost of their own, into one durable queue.
Latency: one idle relay; messages written one per transaction, a little apart; the time from
the commit's return to a consumer's receipt.
Write cost: a transaction with one publish() against one with one enqueue().

    DATABASE_URL=mysql://root@127.0.0.1:3306/skq_bench_outbox python -m benchmarks outbox_relay

Writes docs/benchmarks/raw/outbox.json and prints the figures.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RAW = ROOT / "docs" / "benchmarks" / "raw" / "outbox.json"
#: Keys of the throughput runs (``--keys``): a key's messages are sent in order, so its
#: depth bounds what can be in flight; 20 keys is a hot aggregate, 1,000 a typical spread.
KEYS = 20
#: Messages per batch of the raw loop's confirms, the relay's pipeline depth.
RAW_BATCH = 256


def set_keys(keys: int) -> None:
    global KEYS
    KEYS = keys


def key_of(n: int) -> str:
    return f"order-{n % KEYS}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=6000, help="per throughput run")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--latency-messages", type=int, default=200)
    parser.add_argument("--keys", type=int, default=KEYS, help="keys of the throughput runs")
    args = parser.parse_args()
    set_keys(args.keys)
    setup_django()
    from tests.support.brokers import rabbitmq_vhost

    loads = {"start": os.getloadavg()[0]}
    with rabbitmq_vhost() as url:
        declare(url)
        throughput = measure_throughput(url, args.messages, args.reps)
        loads["after_throughput"] = os.getloadavg()[0]
        latency = measure_latency(url, args.latency_messages)
        loads["after_latency"] = os.getloadavg()[0]
    writes = measure_writes(2000)
    result = {
        "messages": args.messages,
        "reps": args.reps,
        "keys": KEYS,
        "throughput": throughput,
        "latency_ms": latency,
        "write_us": writes,
        "load_average": loads,
    }
    RAW.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(summary(result), indent=2))


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def declare(url: str) -> None:
    from tests.support.brokers import RabbitQueue

    RabbitQueue(url, "orders", "bench").close()


def purge(url: str) -> None:
    from tests.support.brokers import RabbitQueue

    queue = RabbitQueue(url, "orders", "bench")
    queue.channel.queue_purge("bench")
    queue.close()


def fill(count: int) -> None:
    """Write ``count`` messages over KEYS keys in one transaction: the relays see them at once."""
    from django.db import transaction

    from django_skipqueue.outbox import Message, publish_many

    messages = [Message("orders", {"order_id": n, "total": "12.50"}, key=key_of(n))
                for n in range(count)]  # fmt: skip
    with transaction.atomic():
        for start in range(0, count, 1000):
            publish_many(messages[start : start + 1000])


def relay_run(url: str, count: int, relays: int) -> float:
    """Start ``relays`` idle relays, commit ``count`` messages, time until the outbox is empty."""
    from django_skipqueue.outbox import relays
    from django_skipqueue.outbox.models import OutboxMessage, OutboxRelay
    from tests.support.brokers import RabbitQueue

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    manage_py = str(ROOT / "testproject" / "manage.py")
    command = [sys.executable, manage_py, "skipqueue_relay", "--broker", url]
    OutboxRelay.objects.all().delete()
    processes = [subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
                 for _ in range(relays)]  # fmt: skip
    try:
        while OutboxRelay.objects.filter(stopped_at=None).count() < relays:
            time.sleep(0.05)
        time.sleep(1)  # connected to the broker and idle
        relays.forget_addresses()
        queue = RabbitQueue(url, "orders", "bench")
        fill(count)
        began = time.perf_counter()
        # Watch the broker's queue until every message is there, and only then the outbox:
        # polling the outbox every 5 ms walks the rows the relays deleted and InnoDB has not
        # purged yet, database work that would compete with the relays (the raw loop has none).
        polls = 0
        while queue.count() < count and (polls % 50 or OutboxMessage.objects.exists()):
            polls += 1
            time.sleep(0.005)
        while OutboxMessage.objects.exists():
            time.sleep(0.005)
        elapsed = time.perf_counter() - began
        queue.close()
        return count / elapsed
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(30)


def raw_publisher(url: str, start: int, count: int, keys: int, go: Any) -> None:
    """Publish with confirms in batches: a batch goes out, then its confirms are awaited."""
    import pika

    set_keys(keys)  # a spawned interpreter
    connection = pika.BlockingConnection(pika.URLParameters(url))
    impl: Any = connection.channel()._impl  # underneath BlockingChannel: publish, don't wait
    confirmed = [0]

    def on_confirm(frame: Any) -> None:
        # A multiple ack answers every tag up to its own.
        confirmed[0] = frame.method.delivery_tag
        # A callback queued on the connection ends process_data_events' wait.
        connection.add_callback_threadsafe(lambda: None)

    impl.confirm_delivery(on_confirm)
    connection.process_data_events(time_limit=0.1)
    go.wait()
    published = 0
    for first in range(start, start + count, RAW_BATCH):
        for n in range(first, min(first + RAW_BATCH, start + count)):
            body = json.dumps({"order_id": n, "total": "12.50"}, separators=(",", ":")).encode()
            properties = pika.BasicProperties(
                content_type="application/json",
                delivery_mode=2,
                message_id=f"raw-{n}",
                headers={"X-Skipqueue-Topic": "orders", "X-Skipqueue-Attempt": "1"},
            )
            impl.basic_publish("orders", key_of(n), body, properties, mandatory=True)
            published += 1
        while confirmed[0] < published:
            connection.process_data_events(time_limit=1)
    connection.close()


def raw_run(url: str, count: int, processes: int) -> float:
    """Start ``processes`` connected publishers, then time them from one signal to the end."""
    share = count // processes
    context = multiprocessing.get_context("spawn")
    go = context.Event()
    workers = [context.Process(target=raw_publisher, args=(url, i * share, share, KEYS, go))
               for i in range(processes)]  # fmt: skip
    for worker in workers:
        worker.start()
    time.sleep(2)  # started and connected, like the idle relays
    began = time.perf_counter()
    go.set()
    for worker in workers:
        worker.join()
    return share * processes / (time.perf_counter() - began)


def measure_throughput(url: str, count: int, reps: int) -> dict[str, list[float]]:
    runs: dict[str, list[float]] = {"relay-1": [], "raw-1": [], "relay-4": [], "raw-4": []}
    for rep in range(reps):
        order = list(runs) if rep % 2 == 0 else list(reversed(runs))
        for name in order:
            purge(url)
            kind, processes = name.split("-")
            rate = (relay_run if kind == "relay" else raw_run)(url, count, int(processes))
            runs[name].append(rate)
            print(f"rep {rep + 1} {name}: {rate:,.0f} msg/s", flush=True)
    return runs


def measure_latency(url: str, count: int) -> list[float]:
    import pika

    from django_skipqueue.outbox import publish

    purge(url)
    received: dict[int, float] = {}
    ready = threading.Event()

    def consume() -> None:
        connection = pika.BlockingConnection(pika.URLParameters(url))
        channel = connection.channel()
        ready.set()
        for method, _, body in channel.consume("bench", auto_ack=True, inactivity_timeout=5):
            if method is None:
                break
            received[json.loads(body)["seq"]] = time.time()
        connection.close()

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    relay = subprocess.Popen([sys.executable, str(ROOT / "testproject" / "manage.py"),
                              "skipqueue_relay", "--broker", url], env=env)  # fmt: skip
    consumer = threading.Thread(target=consume)
    consumer.start()
    ready.wait(10)
    time.sleep(3)  # the relay is up and idle
    committed = {}
    try:
        for seq in range(count):
            publish("orders", {"seq": seq}, key=key_of(seq))  # autocommit: one txn
            committed[seq] = time.time()
            time.sleep(0.05)
        consumer.join(30)
    finally:
        relay.terminate()
        relay.wait(30)
    return [(received[s] - committed[s]) * 1000 for s in committed if s in received]


def measure_writes(count: int) -> dict[str, float]:
    from django.db import transaction

    from django_skipqueue.outbox import publish
    from testproject.demo.tasks import add

    def timed(write: Any) -> float:
        began = time.perf_counter()
        for n in range(count):
            with transaction.atomic():
                write(n)
        return (time.perf_counter() - began) / count * 1e6

    return {
        "publish": timed(lambda n: publish("orders", {"order_id": n}, key=key_of(n))),
        "enqueue": timed(lambda n: add.enqueue(n, 1)),
    }


def summary(result: dict[str, Any]) -> dict[str, Any]:
    medians = {name: statistics.median(rates) for name, rates in result["throughput"].items()}
    latencies = sorted(result["latency_ms"])
    return {
        "msg_per_s": {k: round(v) for k, v in medians.items()},
        "ratio_1": round(medians["relay-1"] / medians["raw-1"], 2),
        "ratio_4": round(medians["relay-4"] / medians["raw-4"], 2),
        "latency_ms": {
            "p50": round(statistics.median(latencies), 1),
            "p99": round(latencies[int(len(latencies) * 0.99) - 1], 1),
            "received": len(latencies),
        },
        "write_us": {k: round(v) for k, v in result["write_us"].items()},
    }


if __name__ == "__main__":
    main()
