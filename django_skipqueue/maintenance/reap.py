"""reap() gives expired leases back: to the queue after a backoff, or to failed.

It locks its work in small ``SKIP LOCKED`` batches, one short transaction each, so any
number of supervisors (and ``skipqueue_reap`` loops) can run it at once: each batch is
disjoint from every other. Times are the database's clock, never this process's.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F

from django_skipqueue import transitions, wakeup
from django_skipqueue.conf import get_settings
from django_skipqueue.context import resolve_task
from django_skipqueue.db.clock import read_db_now
from django_skipqueue.db.statements import retry_whole_transaction
from django_skipqueue.exceptions import LeaseExpired, TaskNotFound, message_record
from django_skipqueue.models import Job, MaintenanceRun, QueueMinute
from django_skipqueue.states import (
    JobStatus,
    RetryPolicy,
    next_step,
)
from django_skipqueue.tasks import retry_policy

logger = logging.getLogger("django_skipqueue.reaper")

#: What the reaper reads of each expired row it locks: the fence and what the update needs.
REAP_FIELDS = (
    "pk",
    "queue_name",
    "task_path",
    "owner",
    "attempts",
    "max_attempts",
    "cancel_requested",
    "lease_until",
    "errors",
    "worker_ids",
    "batch_id",
    "flow_key",
    "flow_slot",
)
_TOKEN = secrets.token_hex(4)


@dataclass
class ReapResult:
    """What one reap() pass did, per outcome and per queue."""

    retried: int = 0
    failed: int = 0
    cancelled: int = 0
    #: Rows locked but changed by nobody: the fence saw a renewed lease or a finished job.
    fenced: int = 0
    #: Reclaims per (queue name, outcome).
    per_queue: Counter[tuple[str, str]] = field(default_factory=Counter)
    #: Queues where a reclaimed job is ready again at once (its wake-up goes out on commit).
    made_ready: set[str] = field(default_factory=set)

    @property
    def reclaimed(self) -> int:
        return self.retried + self.failed + self.cancelled

    def as_dict(self) -> dict[str, Any]:
        return {
            "reclaimed": self.reclaimed,
            "retried": self.retried,
            "failed": self.failed,
            "cancelled": self.cancelled,
            "fenced": self.fenced,
        }


def runner_id(role: str = "reaper") -> str:
    """Name this process in owner columns: role, host, pid and a random part."""
    return f"{role}:{socket.gethostname()}:{os.getpid()}:{_TOKEN}"[:128]


def counter_owner(runner: str) -> str:
    """Return the QueueMinute owner the reaper counts under when run by ``runner``.

    A supervisor writes its own QueueMinute rows with absolute values at each heartbeat;
    the reaper's increments go to rows of their own so that neither overwrites the other.
    """
    return runner if runner.startswith("reaper:") else f"reaper:{runner}"[:128]


def reap(
    using: str = "default", *, batch: int | None = None, runner: str | None = None
) -> ReapResult:
    """Reclaim every job whose lease has expired, in batches, and record the pass.

    A reclaimed job goes back to the queue after its retry backoff (scheduled, then promoted),
    or ends ``failed`` when its attempts are spent (``cancelled`` if a cancel was requested).
    Each gets a LeaseExpired error and its lost owner in ``worker_ids``, and is counted in
    ``QueueMinute.reclaimed`` (owner ``counter_owner(runner)``).
    """
    batch = batch or get_settings().MAINTENANCE_BATCH
    runner = runner or runner_id()
    started = read_db_now(using)
    result = ReapResult()
    while True:
        done = retry_whole_transaction(using, lambda: _reap_batch(using, batch, runner, result))
        if done < batch:
            break
    MaintenanceRun.record(using, "reap", runner, started, result.as_dict())
    if result.reclaimed:
        logger.warning("reaped %s", " ".join(f"{k}={v}" for k, v in result.as_dict().items()))
    return result


def _reap_batch(using: str, batch: int, runner: str, result: ReapResult) -> int:
    """Lock, reclaim and count one batch in one transaction; return the rows locked."""
    step = ReapResult()
    with transaction.atomic(using=using):
        expired = Job.objects.using(using).expired()
        rows = Job.objects.db_manager(using).lock_batch(expired, REAP_FIELDS, batch)
        for row in rows:
            _reclaim(using, dict(zip(REAP_FIELDS, row, strict=True)), runner, step)
        _count(using, runner, step)
        # A retry with a backoff is scheduled, not ready: its wake-up comes with promotion.
        wakeup.after_commit(using, step.made_ready)
    # Merged only after commit: a retried transaction must not count twice.
    _merge(result, step)
    return len(rows)


def _reclaim(using: str, row: dict[str, Any], runner: str, step: ReapResult) -> None:
    """Apply the fenced transition of one expired row, or count it as fenced off."""
    cancel = row["cancel_requested"]
    policy = None if cancel else _task_policy(row["task_path"])
    error = _lease_error(row, runner)
    lost = LeaseExpired(error["traceback"])
    # A job of a flow key retried at once waits for its key's admission (21), not ready (7).
    ending = next_step(
        row["attempts"],
        row["max_attempts"],
        policy,
        flow_key=row["flow_key"],
        cancel_requested=cancel,
        error=lost,
    )
    if transitions.end_lost_lease(using, row, error, ending) != 1:
        step.fenced += 1
        return
    outcome = ending.outcome  # its transition's label (states.py): a ReapResult counter
    setattr(step, outcome, getattr(step, outcome) + 1)
    step.per_queue[row["queue_name"], outcome] += 1
    if ending.status == JobStatus.READY:
        step.made_ready.add(row["queue_name"])


def _lease_error(row: dict[str, Any], runner: str) -> dict[str, str]:
    lease_until = row["lease_until"]
    when = lease_until.isoformat() if isinstance(lease_until, datetime) else str(lease_until)
    return message_record(
        LeaseExpired,
        f"the lease of {row['owner']} on attempt {row['attempts']} expired at {when}; "
        f"reclaimed by {runner}.",
    )


def _task_policy(task_path: str) -> RetryPolicy | None:
    """The retry policy of the job's task (its backoff, its discard_on), if it still exists."""
    try:
        return retry_policy(resolve_task(task_path))
    except TaskNotFound:
        return None


def _count(using: str, runner: str, step: ReapResult) -> None:
    """Add this batch's reclaims to the runner's own QueueMinute rows (no contention)."""
    if not step.per_queue:
        return
    minute = read_db_now(using).replace(second=0, microsecond=0)
    for queue_name in {queue for queue, _ in step.per_queue}:
        counts = {"reclaimed": sum(n for (q, _), n in step.per_queue.items() if q == queue_name)}
        if failed := step.per_queue[queue_name, "failed"]:
            counts["failed"] = failed
        add_to_minute(using, minute, queue_name, counter_owner(runner), **counts)


def add_to_minute(
    using: str, minute: datetime, queue_name: str, owner: str, **counts: int
) -> None:
    """Increment counters of one (minute, queue, owner) row, creating it on first use."""
    rows = QueueMinute.objects.using(using).filter(
        minute=minute, queue_name=queue_name, owner=owner
    )
    increments = {name: F(name) + value for name, value in counts.items()}
    if rows.update(**increments):
        return
    try:
        with transaction.atomic(using=using):
            QueueMinute.objects.using(using).create(
                minute=minute, queue_name=queue_name, owner=owner, **counts
            )
    except IntegrityError:
        rows.update(**increments)


def _merge(result: ReapResult, step: ReapResult) -> None:
    for name in ("retried", "failed", "cancelled", "fenced"):
        setattr(result, name, getattr(result, name) + getattr(step, name))
    result.per_queue.update(step.per_queue)
