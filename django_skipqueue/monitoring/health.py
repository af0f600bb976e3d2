"""Health checks for orchestrators: each failing check has its own exit status and reason."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from django_skipqueue.conf import get_settings
from django_skipqueue.durations import format_seconds
from django_skipqueue.monitoring.dbhealth import DatabaseHealth
from django_skipqueue.monitoring.stats import QueueStatus, StatusReport
from django_skipqueue.states import JobStatus


class Unhealthy(IntEnum):
    """Exit statuses of ``skipqueue_health`` (1 is a failure to check at all, 2 a usage error).

    6 and 9 belong to shipped apps' checks (``Extension.health_checks``); an app that plugs
    in takes a free value of its own.
    """

    NO_LIVE_WORKER = 3
    READY_TOO_OLD = 4
    REAPER_NOT_RUNNING = 5
    HISTORY_TOO_LONG = 7
    TRANSACTION_TOO_OLD = 8
    QUEUE_UNSERVED = 10


@dataclass(frozen=True)
class Problem:
    #: ``Unhealthy``, or an installed app's own status (``Extension.health_checks``).
    check: IntEnum
    reason: str


@dataclass(frozen=True)
class Thresholds:
    max_ready_age: float
    max_reaper_age: float

    @classmethod
    def from_settings(
        cls, max_ready_age: float | None = None, max_reaper_age: float | None = None
    ) -> Thresholds:
        config = get_settings()
        return cls(
            max_ready_age=config.HEALTH_MAX_READY_AGE if max_ready_age is None else max_ready_age,
            max_reaper_age=(
                config.HEALTH_MAX_REAPER_AGE if max_reaper_age is None else max_reaper_age
            ),
        )


def problems(report: StatusReport, thresholds: Thresholds) -> list[Problem]:
    """Return what is wrong, most fundamental first (the exit status is the first one's)."""
    return [
        *_workers(report),
        *_ready_age(report, thresholds.max_ready_age),
        *_reaper(report, thresholds.max_reaper_age),
        *_unserved(report),
    ]


def _workers(report: StatusReport) -> list[Problem]:
    if report.workers.live:
        return []
    stale = f" ({report.workers.stale} stale)" if report.workers.stale else ""
    return [Problem(Unhealthy.NO_LIVE_WORKER, f"no live worker process{stale}")]


def _ready_age(report: StatusReport, limit: float) -> list[Problem]:
    # A paused queue piles up ready jobs on purpose: its age is not a fault.
    return [
        Problem(
            Unhealthy.READY_TOO_OLD,
            f"queue {queue.name}: oldest ready job has waited "
            f"{format_seconds(queue.oldest_ready_age)} (limit {format_seconds(limit)})",
        )
        for queue in report.queues
        if not queue.paused
        and queue.oldest_ready_age is not None
        and queue.oldest_ready_age > limit
    ]


def _unserved(report: StatusReport) -> list[Problem]:
    """Queues with ready jobs that no live worker serves, while workers live (else: status 3).

    Their jobs would wait forever, long before their age reaches ``--max-ready-age``.
    """
    if not report.workers.live:
        return []
    return [
        Problem(
            Unhealthy.QUEUE_UNSERVED,
            f"queue {queue.name}: {ready} ready job(s) and no live worker serves it",
        )
        for queue in report.queues
        if not queue.paused and not queue.live_workers and (ready := _ready(queue))
    ]


def _ready(queue: QueueStatus) -> int:
    count = queue.counts.get(JobStatus.READY)
    return count.value if count is not None else 0


def _reaper(report: StatusReport, limit: float) -> list[Problem]:
    if report.reaper_age is None:
        return [Problem(Unhealthy.REAPER_NOT_RUNNING, "the reaper has never run")]
    if report.reaper_age > limit:
        return [
            Problem(
                Unhealthy.REAPER_NOT_RUNNING,
                f"the reaper last ran {format_seconds(report.reaper_age)} ago "
                f"(limit {format_seconds(limit)})",
            )
        ]
    return []


def database_problems(
    health: DatabaseHealth, max_history: int | None, max_age: float | None
) -> list[Problem]:
    """The server's purge backlog and oldest transaction against their limits (None: off).

    A limit asked for on a server that hides the figure is a problem too: the operator meant
    it to be watched, and a check that silently passes would say the opposite.
    """
    checks = (
        (Unhealthy.HISTORY_TOO_LONG, "history list length", "history_length", max_history),
        (Unhealthy.TRANSACTION_TOO_OLD, "oldest transaction", "oldest_transaction_age", max_age),
    )
    found = []
    for check, label, figure, limit in checks:
        value = getattr(health, figure)
        if limit is None:
            continue
        if value is None:
            reason = f"{label} not available ({health.unavailable.get(figure)})"
            found.append(Problem(check, reason))
        elif value > limit:
            found.append(Problem(check, _over_limit(health, check, value, limit)))
    return found


def _over_limit(health: DatabaseHealth, check: Unhealthy, value: float, limit: float) -> str:
    if check is Unhealthy.HISTORY_TOO_LONG:
        return (
            f"InnoDB history list length is {value:,} (limit {limit:,}): "
            "a long transaction may be holding purge back"
        )
    return (
        f"a transaction has been open {format_seconds(value)} "
        f"(connection {health.oldest_transaction_connection}, "
        f"limit {format_seconds(limit)})"
    )


def summary(report: StatusReport) -> str:
    """One line that says why all is well."""
    ages = [q.oldest_ready_age for q in report.queues if q.oldest_ready_age is not None]
    oldest = format_seconds(max(ages)) if ages else "none"
    return (
        f"{report.workers.live} live worker process(es), oldest ready job {oldest}, "
        f"reaper ran {format_seconds(report.reaper_age)} ago"
    )
