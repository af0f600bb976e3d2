"""Run one operation inside a system's own interpreter and settings; print JSON on the last line.

``python -m benchmarks.agent SYSTEM OP [ARGS]`` with the environment of
``System.env()``. The harness never imports a peer's package: it asks this agent.

Operations: ``setup`` (create the database, migrate), ``enqueue MODE N`` (single, txn or
bulk; prints the seconds taken), ``feed RATE SECONDS OUT`` (latency producer: probe jobs
at an offered rate, writing "key commit_time" lines to OUT); for django-skipqueue only,
``history``, ``ready``, ``claimcost`` and ``workers`` (see ourside.py).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable

from benchmarks import enqueuers


def main(argv: list[str]) -> None:
    system, op, *args = argv
    if system != "celery":
        import django

        _create_database()
        django.setup()
    result = OPERATIONS[op](system, *args)
    print(json.dumps(result))


def _create_database() -> None:
    """Create BENCH_DB on the server if it is missing (Django needs it to connect)."""
    import os

    import MySQLdb

    name = os.environ["BENCH_DB"]
    conn = MySQLdb.connect(
        host=os.environ.get("BENCH_DB_HOST", "127.0.0.1"),
        port=int(os.environ.get("BENCH_DB_PORT", "3306")),
        user="root",
    )
    conn.cursor().execute(f"CREATE DATABASE IF NOT EXISTS `{name}`")
    conn.close()


def setup(system: str) -> dict[str, object]:
    if system == "celery":
        return {"ok": True}
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return {"ok": True}


def enqueue(system: str, mode: str, count: str) -> dict[str, object]:
    """Enqueue ``count`` no-op jobs; return the wall time of the enqueue alone."""
    run = enqueuers.for_system(system, mode)
    if run is None:
        return {"seconds": None}
    began = time.perf_counter()
    run(int(count))
    return {"seconds": time.perf_counter() - began}


def feed(system: str, rate: str, seconds: str, out: str) -> dict[str, object]:
    """Enqueue probe jobs one by one at ``rate`` per second; record each commit time."""
    send = enqueuers.probe_sender(system)
    interval, deadline = 1 / float(rate), time.monotonic() + float(seconds)
    lines: list[str] = []
    next_at, index = time.monotonic(), 0
    while next_at < deadline:
        pause = next_at - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        key = f"k{index}"
        send(key)
        lines.append(f"{key} {time.time():.6f}\n")
        index += 1
        next_at += interval
    with open(out, "w") as handle:
        handle.writelines(lines)
    return {"sent": index}


def _ours(name: str) -> Callable[..., dict[str, object]]:
    def run(system: str, *args: str) -> dict[str, object]:
        from benchmarks import ourside

        return getattr(ourside, name)(*args)

    return run


OPERATIONS: dict[str, Callable[..., dict[str, object]]] = {
    "setup": setup,
    "enqueue": enqueue,
    "feed": feed,
    **{name: _ours(name) for name in ("history", "ready", "claimcost", "workers")},
}

if __name__ == "__main__":
    main(sys.argv[1:])
