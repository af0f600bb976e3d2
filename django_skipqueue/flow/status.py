"""What flow control shows: per key running, waiting and the oldest waiting job; a job's reason.

``running`` counts the key's jobs claimed by a worker whose heartbeat is fresh: a slot is held
from admission (a ready job waiting for any worker holds one) and by the job of a killed
worker until the reaper frees it, so the key's slot count alone would say "running" while no
worker runs. Both are shown.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q

from django_skipqueue.conf import get_settings
from django_skipqueue.db.clock import DatabaseNowPlus, read_db_now
from django_skipqueue.models import FlowKey, Job, JobStatus, WorkerProcess
from django_skipqueue.models.job import WAITING_PREFIX

#: Keys ``skipqueue_status`` lists, the busiest first.
SHOWN_KEYS = 20


@dataclass(frozen=True)
class KeyLine:
    key: str
    limit: int | None
    #: Jobs of the key claimed by a live worker.
    running: int
    #: Slots taken: admitted jobs not yet ended, whether a worker runs them or not.
    slots_held: int
    waiting: int
    oldest_waiting_seconds: float | None
    rate: str | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def flow_status(using: str, limit: int = SHOWN_KEYS) -> list[KeyLine]:
    """The keys with jobs running or waiting (at most ``limit``), the most running first.

    A key with waiting jobs has every slot taken or a spent rate window (``wake_at``), so only
    those rows are read; each key's waiting jobs are counted on the waiting index.
    """
    busy = FlowKey.objects.using(using).filter(Q(running__gt=0) | Q(wake_at__isnull=False))
    now = read_db_now(using)
    states = list(busy.order_by("-running", "key")[:limit])
    running = running_on_live_workers(using, [state.key for state in states])
    lines = []
    for state in states:
        waiting = Job.objects.using(using).filter(waiting_key=WAITING_PREFIX + state.key)
        oldest = waiting.order_by("id").values_list("enqueued_at", flat=True).first()
        lines.append(
            KeyLine(
                key=state.key,
                limit=state.limit,
                running=running[state.key],
                slots_held=state.running,
                waiting=waiting.count(),
                oldest_waiting_seconds=_age(oldest, now),
                rate=None if state.rate is None else f"{state.rate}/{state.period:g}s",
            )
        )
    return lines


def running_on_live_workers(using: str, keys: Iterable[str]) -> Counter[str]:
    """Count the jobs of ``keys`` claimed by a worker whose heartbeat is fresh.

    Claimed jobs are few (at most the workers' threads): read on the claim index's status.
    """
    stale = get_settings().WORKER_STALE_SECONDS
    live = WorkerProcess.objects.using(using).filter(
        last_heartbeat_at__gte=DatabaseNowPlus(-stale)
    )
    claimed = Job.objects.using(using).filter(
        status=JobStatus.CLAIMED, flow_key__in=list(keys), owner__in=live.values("owner")
    )
    return Counter(claimed.values_list("flow_key", flat=True))


def _age(moment: datetime | None, now: datetime) -> float | None:
    return None if moment is None else max(0.0, (now - moment).total_seconds())


def reason(job: Job) -> str:
    """Say what a job of a flow key waits for (or holds), for its admin page."""
    if job.flow_key is None:
        return "-"
    state = FlowKey.objects.using(job._state.db or "default").filter(key=job.flow_key).first()
    if state is None:
        return "-"
    if job.status != JobStatus.BLOCKED:
        if job.flow_slot:
            return f"holds one of its key's {state.limit} slot(s)"
        return "no slot held"
    if job.flow_slot:  # a retry that keeps its slot: it waits for the rate alone
        window = f"the next rate window ({state.rate} starts per {state.period:g} s)"
        return f"holds one of its key's {state.limit} slot(s); waiting for {window}"
    parts = []
    if state.limit is not None and state.running >= state.limit:
        parts.append(f"a free slot ({state.running} of {state.limit} running)")
    if state.rate is not None and state.window_count >= state.rate:
        parts.append(f"the next rate window ({state.rate} starts per {state.period:g} s)")
    if state.ordered:
        parts.append("its turn (ordered key)")
    return "waiting for " + (" and ".join(parts) if parts else "admission")
