"""A producer process for the fault tests and the soak: ``python -m tests.reliability.producer``.

Modes:

- ``bulk``: enqueue ``--count`` jobs of ``--task`` with multi-row INSERTs, then exit.
- ``stream``: enqueue ``--rate`` jobs a second until ``--seconds`` pass, riding out database
  outages (a restart): an enqueue that fails is tried again; an id is appended to ``--acked``
  only once its commit returned, so the file lists exactly the jobs the queue promised to run.
- ``orders``: the transactional outbox: each iteration writes a business row (a ledger row
  with job_id 0, label ``order-N``) and enqueues ``--task`` with the same label in one
  transaction, lingering ``--linger`` seconds inside it so that a kill lands mid-transaction;
  ``--acked`` gets N after the commit.

Run with DJANGO_SETTINGS_MODULE and DATABASE_URL set (see procs.child_env).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path

import django


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    django.setup()
    from django.utils.module_loading import import_string

    task = import_string(args.task)
    if args.mode == "bulk":
        return bulk(task, args.count, args.label)
    with Path(args.acked or os.devnull).open("a", buffering=1) as acked:
        if args.mode == "stream":
            return stream(task, args.rate, args.seconds, args.label, acked, args.at_least)
        return orders(task, args.start, args.count, args.linger, acked)


def bulk(task, count: int, label: str) -> int:
    from django_skipqueue.compat import task_backends

    backend = task_backends["default"]
    for start in range(0, count, 1000):
        calls = [(task, [], {"label": label})] * min(1000, count - start)
        backend.enqueue_many(calls)
    return 0


def stream(task, rate: float, seconds: float, label: str, acked, at_least: int = 0) -> int:
    """Enqueue at ``rate`` a second (in small bursts) for ``seconds``; survive outages.

    With ``at_least``, go on past ``seconds`` (at the same pace, for at most ten times as long)
    until that many jobs are in: on a loaded machine a fixed time gives a smaller load than the
    test needs, and a test that asserts on the load it made would fail for the wrong reason.
    """
    from django.db import Error, close_old_connections

    began, sent = time.monotonic(), 0
    while (elapsed := time.monotonic() - began) < seconds or (
        sent < at_least and elapsed < 10 * seconds
    ):
        due = int(elapsed * rate) - sent
        if due <= 0:
            time.sleep(0.01)
            continue
        try:
            result = task.enqueue(label=label)
        except Error as error:
            print(f"enqueue failed: {error!r}", file=sys.stderr, flush=True)
            close_old_connections()
            _drop_connection()
            time.sleep(0.2)
            continue
        sent += 1
        acked.write(f"{result.id}\n")
    return 0


def orders(task, start: int, count: int, linger: float, acked) -> int:
    """Business row and job in one transaction, ``count`` times from number ``start``."""
    from django.db import transaction

    from testproject.demo.models import LedgerEntry

    for number in range(start, start + count):
        label = f"order-{number}"
        with transaction.atomic():
            LedgerEntry.objects.create(job_id=0, attempt=0, worker="producer", label=label)
            task.enqueue(label=label)
            time.sleep(linger)
        acked.write(f"{number}\n")
    return 0


def _drop_connection() -> None:
    from django.db import connection

    with contextlib.suppress(Exception):  # already broken
        connection.close()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="producer")
    parser.add_argument("mode", choices=["bulk", "stream", "orders"])
    parser.add_argument("--task", default="testproject.demo.tasks.record")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--label", default="")
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--at-least", type=int, default=0)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--linger", type=float, default=0.0)
    parser.add_argument("--acked", default="")
    return parser


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.reliability.settings")
    sys.exit(main(sys.argv[1:]))
