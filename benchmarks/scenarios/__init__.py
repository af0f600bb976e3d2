"""The scenarios, each a ``run(ctx) -> dict`` of raw figures and tables.

The seven of issue 6, then the binary log's cost (binlog), which runs on private servers,
and reservations (issue 17).
"""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.harness import Context
from benchmarks.scenarios import (
    binlog,
    drain,
    enqueue,
    history,
    idle,
    latency,
    purge,
    reservations,
    sweep,
)

SCENARIOS: dict[str, Callable[[Context], dict]] = {
    "drain": drain.run,
    "enqueue": enqueue.run,
    "latency": latency.run,
    "history": history.run,
    "purge": purge.run,
    "sweep": sweep.run,
    "idle": idle.run,
    "binlog": binlog.run,
    "reservations": reservations.run,
}
