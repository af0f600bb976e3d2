"""Queue figures for status, health and the admin, cheap on a table of millions of rows.

Nothing here adds an index or scans history. Depth per status and queue is an index-only
range count over the claim index's (status, queue_name) prefix, exact up to a cap and an
estimate (marked) beyond it. The oldest ready job is found from the first key of each
priority in that index (one index seek per priority). Throughput, claim latency and reclaims
come from the per-minute rows the workers already write; liveness from their heartbeats.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Min
from django.db.models.functions import Coalesce

from django_skipqueue.conf import get_settings
from django_skipqueue.db.clock import read_db_now
from django_skipqueue.db.counting import Count, capped_count
from django_skipqueue.models import Job, JobStatus, MaintenanceRun, QueueMinute, WorkerProcess
from django_skipqueue.models.worker import WorkerRole
from django_skipqueue.monitoring.metrics import histogram_percentile, merge_histograms
from django_skipqueue.queues import paused_queues

#: Queues not in settings are still shown when they have ready jobs, up to this many.
MAX_DISCOVERED_QUEUES = 100
#: The statuses status shows a depth for (finished ones other than failed are history).
DEPTH_STATUSES = (JobStatus.READY, JobStatus.SCHEDULED, JobStatus.CLAIMED, JobStatus.FAILED)


@dataclass
class QueueStatus:
    name: str
    paused: bool = False
    counts: dict[str, Count] = field(default_factory=dict)
    #: Seconds the longest-waiting ready job has been waiting (None: no ready job).
    oldest_ready_age: float | None = None
    #: Jobs finished (succeeded + failed) per minute over the window.
    finished_per_minute: float = 0.0
    claimed_per_minute: float = 0.0
    #: Claim-query latency percentiles over the window (bucket upper bounds), in ms.
    claim_p50_ms: float | None = None
    claim_p95_ms: float | None = None
    reclaimed_last_hour: int = 0
    live_workers: int = 0
    stale_workers: int = 0

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["counts"] = {status: count.value for status, count in self.counts.items()}
        data["approximate"] = [s for s, count in self.counts.items() if count.approximate]
        return data


@dataclass
class WorkerCounts:
    live: int = 0
    stale: int = 0


@dataclass
class StatusReport:
    generated_at: datetime
    window_minutes: int
    queues: list[QueueStatus]
    workers: WorkerCounts
    #: Seconds since the last reaper pass by anyone (None: it never ran).
    reaper_age: float | None = None
    reaper: dict[str, Any] = field(default_factory=dict)
    #: The last finished purge (empty: none recorded).
    purge: dict[str, Any] = field(default_factory=dict)

    def queue(self, name: str) -> QueueStatus:
        return next(q for q in self.queues if q.name == name)

    def as_dict(self) -> dict[str, Any]:
        return {
            "generated_at": self.generated_at.isoformat(),
            "window_minutes": self.window_minutes,
            "queues": [queue.as_dict() for queue in self.queues],
            "workers": asdict(self.workers),
            "reaper_age": self.reaper_age,
            "reaper": self.reaper,
            "purge": self.purge,
        }


def queue_status(
    using: str = "default",
    queues: Iterable[str] = (),
    *,
    window_minutes: int = 5,
    cap: int | None = None,
) -> StatusReport:
    """Gather the status of ``queues`` (plus any queue with ready jobs or a pause)."""
    now = read_db_now(using)
    cap = cap or get_settings().STATUS_COUNT_CAP
    paused = paused_queues(using)
    names = _queue_names(using, queues, paused)
    report = StatusReport(now, window_minutes, [], WorkerCounts())
    for name in names:
        status = QueueStatus(name, paused=name in paused)
        status.counts = {s: capped_count(_jobs(using, s, name), cap) for s in DEPTH_STATUSES}
        status.oldest_ready_age = oldest_ready_age(using, name, now)
        report.queues.append(status)
    _add_minutes(using, report, now)
    _add_workers(using, report, now)
    _add_runs(using, report, now)
    return report


def _jobs(using: str, status: str, queue_name: str) -> Any:
    # Exactly the claim index's (status, queue_name) prefix: an index-only range count.
    return Job.objects.using(using).filter(status=status, queue_name=queue_name)


def _queue_names(using: str, configured: Iterable[str], paused: Iterable[str]) -> list[str]:
    names = list(dict.fromkeys(configured))
    for name in sorted({*_queues_with_ready_jobs(using), *paused}):
        if name not in names:
            names.append(name)
    return names


def _queues_with_ready_jobs(using: str) -> list[str]:
    return Job.objects.using(using).ready_queue_names(MAX_DISCOVERED_QUEUES)


def oldest_ready_age(using: str, queue_name: str, now: datetime) -> float | None:
    """Seconds the longest-waiting ready job of ``queue_name`` has waited.

    Keys grow with enqueue time, so within one priority the first key is the oldest job.
    Waiting starts at ``run_after`` for deferred jobs and retries, at ``enqueued_at`` otherwise.
    """
    ids = _first_id_per_priority(using, queue_name)
    if not ids:
        return None
    since = (
        Job.objects.using(using)
        .filter(pk__in=ids)
        .aggregate(since=Min(Coalesce("run_after", "enqueued_at")))["since"]
    )
    return max(0.0, (now - since).total_seconds()) if since else None


def _first_id_per_priority(using: str, queue_name: str) -> list[int]:
    """The first key of each priority present, by one claim-index seek per priority.

    A ``GROUP BY priority_rank`` is only cheap with a loose index scan, which MariaDB does
    not always choose; at most 201 seeks, each reading one index entry, always are.
    """
    ready = Job.objects.using(using).ready().in_queue(queue_name).in_claim_order()
    ids: list[int] = []
    rank: int | None = None
    while True:
        after = ready if rank is None else ready.filter(priority_rank__gt=rank)
        first = after.values_list("priority_rank", "pk").first()
        if first is None:
            return ids
        rank, pk = first
        ids.append(pk)


def _add_minutes(using: str, report: StatusReport, now: datetime) -> None:
    """Throughput and latency over the window, reclaims over the last hour."""
    start = now.replace(second=0, microsecond=0) - timedelta(minutes=report.window_minutes - 1)
    span_minutes = max((now - start).total_seconds() / 60, 1 / 60)
    hour_ago = now - timedelta(hours=1)
    rows = QueueMinute.objects.using(using).filter(minute__gte=min(start, hour_ago))
    sums: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    histograms: dict[str, list[list[int]]] = defaultdict(list)
    for row in rows.iterator():
        totals = sums[row.queue_name]
        totals["reclaimed"] += row.reclaimed
        if row.minute >= start:
            totals["finished"] += row.succeeded + row.failed
            totals["claimed"] += row.claimed
            histograms[row.queue_name].append(row.claim_latency_histogram or [])
    for queue in report.queues:
        totals = sums.get(queue.name, {})
        queue.finished_per_minute = round(totals.get("finished", 0) / span_minutes, 1)
        queue.claimed_per_minute = round(totals.get("claimed", 0) / span_minutes, 1)
        queue.reclaimed_last_hour = totals.get("reclaimed", 0)
        merged = merge_histograms(histograms.get(queue.name, []))
        queue.claim_p50_ms = histogram_percentile(merged, 0.5)
        queue.claim_p95_ms = histogram_percentile(merged, 0.95)


def _add_workers(using: str, report: StatusReport, now: datetime) -> None:
    """Count running worker processes as live or stale by their last heartbeat."""
    stale_before = now - timedelta(seconds=get_settings().WORKER_STALE_SECONDS)
    running = WorkerProcess.objects.using(using).filter(
        role=WorkerRole.WORKER, stopped_at__isnull=True
    )
    for queues, beat in running.values_list("queues", "last_heartbeat_at"):
        live = beat >= stale_before
        if live:
            report.workers.live += 1
        else:
            report.workers.stale += 1
        for queue in report.queues:
            if queue.name in (queues or []):
                queue.live_workers += live
                queue.stale_workers += not live


def _add_runs(using: str, report: StatusReport, now: datetime) -> None:
    """The last reaper pass (health needs its age) and the last finished purge."""
    for run in MaintenanceRun.objects.using(using).filter(task__in=["reap", "purge"]):
        if run.last_finished_at is None:
            continue
        age = max(0.0, (now - run.last_finished_at).total_seconds())
        details = {
            "runner": run.runner,
            "runs": run.runs,
            "age_seconds": round(age, 3),
            "last_finished_at": run.last_finished_at.isoformat(),
            "last_result": run.last_result,
        }
        if run.task == "reap":
            report.reaper_age = age
            report.reaper = details
        else:
            report.purge = details
