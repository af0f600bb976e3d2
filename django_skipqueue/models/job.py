"""The jobs table: one row per job, shaped around the claim query."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import models
from django.db.models.expressions import Combinable, CombinedExpression
from django.db.models.functions import Concat
from django.db.models.lookups import GreaterThan

from django_skipqueue.compat import DEFAULT_TASK_QUEUE_NAME, TASK_MAX_PRIORITY, TASK_MIN_PRIORITY
from django_skipqueue.db.keys import KeyField
from django_skipqueue.managers import JobManager
from django_skipqueue.states import FINISHED_STATUSES, KEY_BITS, KEYED_MASK, JobStatus

#: ``waiting_key`` prefixes: a blocked job of a flow key, an admitted one not yet claimed.
WAITING_PREFIX = "b:"
ADMITTED_PREFIX = "r:"

#: The bit of the row's status in KEY_BITS, as SQL; _KEY_BLOCKS is non-zero where the key
#: blocks in that status.
_STATUS_BIT = models.Case(
    *[models.When(status=status, then=models.Value(bit)) for status, bit in KEY_BITS.items()],
    default=models.Value(0),
    output_field=models.PositiveSmallIntegerField(),
)
_KEY_BLOCKS = CombinedExpression(models.F("key_statuses"), Combinable.BITAND, _STATUS_BIT)


class Job(models.Model):
    # A monotonic key: inserts append to the B-tree, and it breaks ties in claim order.
    id = models.BigAutoField(primary_key=True)
    queue_name = models.CharField(max_length=64, default=DEFAULT_TASK_QUEUE_NAME)
    priority = models.SmallIntegerField(default=0)
    # Ascending index order is "highest priority first" on every MySQL/MariaDB version
    # (descending index columns are ignored before MariaDB 10.8).
    priority_rank = models.GeneratedField(
        expression=models.F("priority") * -1,
        output_field=models.SmallIntegerField(),
        db_persist=True,
    )
    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.READY)
    run_after = models.DateTimeField(null=True, blank=True)
    task_path = models.CharField(max_length=255)
    args = models.JSONField(default=list)
    kwargs = models.JSONField(default=dict)

    owner = models.CharField(max_length=128, null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    max_attempts = models.PositiveSmallIntegerField(default=1)
    lease_seconds = models.PositiveIntegerField(default=60)
    timeout_seconds = models.PositiveIntegerField(null=True, blank=True)
    # Times the task raised Snooze: ran again later without spending an attempt (bounded).
    # A database default too: code that predates the column still inserts during a deploy.
    snoozes = models.PositiveIntegerField(default=0, db_default=0)
    # Set to ask a running job to stop; the worker sees it when it renews the lease.
    cancel_requested = models.BooleanField(default=False)

    enqueued_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    last_attempted_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    errors = models.JSONField(default=list)
    return_value = models.JSONField(null=True, blank=True)
    worker_ids = models.JSONField(default=list)
    # The enqueuing trace's W3C context (traceparent, tracestate) with SKIPQUEUE_TRACING on.
    trace_context = models.JSONField(null=True, blank=True)
    # The batch or chain (django_skipqueue.workflows) the job belongs to; NULL for most jobs.
    # No index: a transition reads it from the row it already holds, and the batch's members
    # are listed in the workflows app's own table, so plain jobs pay for nothing.
    batch_id = models.BigIntegerField(null=True, blank=True)

    # Flow control (django_skipqueue.flow): the key whose slots and rate window this job
    # waits for (a FlowKey row), NULL for a plain job, which pays for nothing else.
    flow_key = KeyField(max_length=191, null=True, blank=True)
    # True while the job holds one of its key's concurrency slots: from its admission (or
    # its enqueue into a free slot) until it ends; a retry keeps it.
    flow_slot = models.BooleanField(default=False, db_default=False)
    # "b:<flow key>" while the job is blocked, "r:<flow key>" while it is ready, NULL
    # otherwise and always NULL for a plain job: the admission reads the oldest blocked jobs
    # of one key (and a rate window counts its key's admitted jobs not yet claimed) through
    # an index whose entry a plain job's status changes never touch.
    waiting_key = models.GeneratedField(
        expression=models.Case(
            models.When(
                status=JobStatus.BLOCKED,
                flow_key__isnull=False,
                then=Concat(models.Value(WAITING_PREFIX), models.F("flow_key")),
            ),
            models.When(
                status=JobStatus.READY,
                flow_key__isnull=False,
                then=Concat(models.Value(ADMITTED_PREFIX), models.F("flow_key")),
            ),
            default=models.Value(None),
            output_field=models.CharField(max_length=193),
        ),
        output_field=KeyField(max_length=193, null=True),
        db_persist=True,
    )

    idempotency_key = KeyField(max_length=191, null=True, blank=True)
    # The states in which the key blocks a new job, one bit each (states.KEY_BITS): the
    # task's unique_while, by default scheduled, ready, claimed and succeeded.
    key_statuses = models.PositiveSmallIntegerField(default=KEYED_MASK, db_default=KEYED_MASK)
    # The key while it must stay unique, NULL otherwise: a plain UNIQUE index on it
    # makes concurrent enqueues race-free (a unique index allows many NULLs).
    active_key = models.GeneratedField(
        expression=models.Case(
            models.When(
                GreaterThan(
                    CombinedExpression(models.F("key_statuses"), Combinable.BITAND, _STATUS_BIT), 0
                ),
                then=models.F("idempotency_key"),
            ),
            default=models.Value(None),
            output_field=models.CharField(max_length=191),
        ),
        output_field=KeyField(max_length=191, null=True),
        db_persist=True,
    )

    objects: ClassVar[JobManager] = JobManager()

    class Meta:
        db_table = "skipqueue_job"
        indexes = [
            # Derived from the only claim shape: WHERE status = 'ready' AND queue_name = %s
            # ORDER BY priority_rank, id LIMIT n. Equalities, then ORDER BY, then the key.
            # Reaper and status counts read its (status) and (status, queue_name) prefixes.
            models.Index(
                fields=["status", "queue_name", "priority_rank", "id"], name="skipqueue_claim"
            ),
            # Promotion: WHERE status = 'scheduled' AND run_after <= now ORDER BY run_after.
            models.Index(fields=["status", "run_after", "id"], name="skipqueue_due"),
            # Admission: WHERE waiting_key = 'b:<key>' ORDER BY id LIMIT n (oldest first).
            models.Index(fields=["waiting_key", "id"], name="skipqueue_waiting"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["active_key"], name="skipqueue_unique_key"),
            models.CheckConstraint(
                condition=models.Q(priority__gte=TASK_MIN_PRIORITY)
                & models.Q(priority__lte=TASK_MAX_PRIORITY),
                name="skipqueue_priority_range",
            ),
        ]
        permissions = [
            ("retry_job", "Can retry failed jobs"),
            ("cancel_job", "Can cancel jobs"),
            ("pause_queue", "Can pause and resume queues"),
        ]

    def __str__(self) -> str:
        return f"{self.task_path} #{self.pk} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_STATUSES

    def lease_token(self) -> dict[str, Any]:
        """Return the fence every transition out of CLAIMED is guarded by."""
        return {"pk": self.pk, "owner": self.owner, "attempts": self.attempts}
