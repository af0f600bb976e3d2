"""A worker process's hold on its database: its connection, its row, its heartbeat.

The connection is kept open between loops, its network waits are bounded, and it is backed off
while the database is down. The row
in the workers table is written at start and at every heartbeat: liveness, counters and the
per-minute rows. Also what a process measures of itself for them: its clock offset and its
memory.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.db import Error, connections
from django.db.models import Sum

from django_skipqueue.backoff import exponential
from django_skipqueue.conf import get_settings
from django_skipqueue.db.clock import DatabaseNow, read_db_now
from django_skipqueue.db.outage import is_unreachable, outage
from django_skipqueue.db.packets import max_allowed_packet, result_bound
from django_skipqueue.models import QueueMinute, WorkerProcess
from django_skipqueue.monitoring.metrics import COUNTERS, Metrics
from django_skipqueue.worker.options import WorkerOptions

logger = logging.getLogger("django_skipqueue.worker")

#: Counters that the workers table has (claim_queries lives in QueueMinute only).
ROW_COUNTERS = tuple(name for name in COUNTERS if name != "claim_queries")


# The connection.

#: Longest pause between reconnection attempts, in seconds.
MAX_DATABASE_PAUSE = 5.0
#: How long worker processes keep a connection when DATABASES says CONN_MAX_AGE=0.
WORKER_CONN_MAX_AGE = 600
#: mysqlclient's options that bound a connection's waits on the network, in whole seconds.
NETWORK_TIMEOUTS = ("connect_timeout", "read_timeout", "write_timeout")


class DatabaseBackoff:
    """Pauses between attempts while the database is unreachable, with logging that stays sane."""

    def __init__(self, using: str) -> None:
        self.using = using
        self.failures = 0

    def failed(self, error: Error) -> float:
        """Drop the broken connection; return how long to wait before trying again."""
        self.failures += 1
        delay = exponential(self.failures, 0.1, MAX_DATABASE_PAUSE)
        if is_unreachable(error):
            outage(self.using).failed(error)
        elif self.failures == 1 or self.failures % 10 == 0:
            logger.warning(
                "database error=%r failures=%s retry_in=%.2f", error, self.failures, delay
            )
        with contextlib.suppress(Error):  # already gone
            connections[self.using].close()
        return delay

    def reset(self) -> None:
        if self.failures:
            outage(self.using).recovered()
        self.failures = 0


@contextlib.contextmanager
def connections_kept_open() -> Iterator[None]:
    """Let a worker reuse connections; close_old_connections() still checks them every loop.

    With CONN_MAX_AGE=0 (Django's default, right for requests) every loop would reconnect.
    """
    changed = [
        settings_dict
        for settings_dict in (connections.settings[alias] for alias in connections)
        if settings_dict.get("CONN_MAX_AGE", 0) == 0
    ]
    for settings_dict in changed:
        settings_dict["CONN_MAX_AGE"] = WORKER_CONN_MAX_AGE
    try:
        yield
    finally:
        for settings_dict in changed:
            settings_dict["CONN_MAX_AGE"] = 0


def bound_network_waits(using: str) -> dict[str, int]:
    """Give this thread's connection to ``using`` the timeouts of SKIPQUEUE_DATABASE_TIMEOUT.

    A host whose network drops packets silently (a partition, a firewall that forgets the
    connection) leaves a query waiting until the kernel gives up on the TCP connection, which
    takes about fifteen minutes, hours for a read that nothing acknowledges. The worker's
    and the supervisor's own queries are short, so their connection gets timeouts that
    DATABASES' ``OPTIONS`` did not set, and a partitioned worker notices within that bound.
    Only the calling thread's connection changes: job code runs on other threads, on
    connections that keep DATABASES' options, since its queries may rightly run longer.

    Returns the options added (none on other databases than MySQL/MariaDB, or when the
    setting is None).
    """
    seconds = get_settings().DATABASE_TIMEOUT
    wrapper = connections[using]
    if seconds is None or wrapper.vendor != "mysql":
        return {}
    options = wrapper.settings_dict.get("OPTIONS") or {}
    added = {name: max(1, math.ceil(seconds)) for name in NETWORK_TIMEOUTS if name not in options}
    if added and not getattr(wrapper, "skipqueue_network_waits", None):
        plain = wrapper.get_connection_params

        def with_timeouts() -> dict[str, Any]:
            params = plain()
            for name, value in added.items():
                params.setdefault(name, value)
            return params

        wrapper.get_connection_params = with_timeouts  # type: ignore[method-assign]
        setattr(wrapper, "skipqueue_network_waits", added)  # noqa: B010 - once per connection
        wrapper.close()  # a connection opened before has no timeouts: the next one will
    return added


def bounded_results(using: str) -> int:
    """Return the result bound in force on ``using``: the setting, lowered to fit the server.

    The packet limit is kept on this thread's connection too: its pipelined statements
    (db/statements.py) are refused before they are sent when larger, instead of losing the
    connection (a batch of results may be, each of them within the bound).
    """
    packet = max_allowed_packet(using)
    connections[using].skipqueue_max_packet = packet  # type: ignore[attr-defined]
    return result_bound(get_settings().MAX_RESULT_BYTES, packet)


# The row and the heartbeat.


def register(
    owner: str,
    role: str,
    options: WorkerOptions,
    *,
    supervisor: str | None = None,
    wakeup_address: str | None = None,
) -> None:
    """Insert this process's row in the workers table (database clock)."""
    WorkerProcess.objects.using(options.database).create(
        owner=owner,
        role=role,
        supervisor=supervisor,
        hostname=socket.gethostname()[:255],
        pid=os.getpid(),
        backend_alias=options.backend,
        queues=list(options.queues),
        threads=options.threads,
        wakeup_address=wakeup_address,
        started_at=DatabaseNow(),
        last_heartbeat_at=DatabaseNow(),
    )


def beat(owner: str, using: str, metrics: Metrics) -> bool:
    """Write liveness, counters and claim latency; return False if the row is gone."""
    p50, p95 = metrics.claim_percentiles()
    counters = {name: metrics.totals[name] for name in ROW_COUNTERS}
    updated = (
        WorkerProcess.objects.using(using)
        .filter(owner=owner)
        .update(last_heartbeat_at=DatabaseNow(), claim_p50_ms=p50, claim_p95_ms=p95, **counters)
    )
    write_minutes(owner, using, metrics)
    return updated == 1


def write_minutes(owner: str, using: str, metrics: Metrics) -> None:
    """Write the per-queue, per-minute rows that changed (absolute values: idempotent)."""
    for minute, queue_name, row in metrics.dirty_rows():
        values = {**row.counts, "claim_latency_histogram": list(row.histogram)}
        rows = QueueMinute.objects.using(using).filter(
            minute=minute, queue_name=queue_name, owner=owner
        )
        if not rows.update(**values):
            QueueMinute.objects.using(using).create(
                minute=minute, queue_name=queue_name, owner=owner, **values
            )
        row.dirty = False
    metrics.forget_old_minutes()


def mark_stopped(owner: str, using: str) -> None:
    WorkerProcess.objects.using(using).filter(owner=owner, stopped_at__isnull=True).update(
        stopped_at=DatabaseNow()
    )


def clock_offset(using: str) -> timedelta:
    """Return how far the database clock is ahead of this host's clock."""
    return read_db_now(using) - datetime.now(UTC)


def worker_totals(supervisor_owner: str, using: str) -> dict[str, int]:
    """Sum the counters of the worker processes one supervisor ran."""
    rows = WorkerProcess.objects.using(using).filter(supervisor=supervisor_owner)
    sums = rows.aggregate(**{name: Sum(name) for name in ROW_COUNTERS})
    return {name: int(sums[name] or 0) for name in ROW_COUNTERS}


def resident_megabytes() -> float | None:
    """Return this process's resident memory in MiB (Linux), or None where unknown."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * _PAGE_SIZE / 2**20


try:
    import resource

    _PAGE_SIZE = resource.getpagesize()
except ImportError:  # pragma: no cover - not POSIX
    _PAGE_SIZE = 4096
