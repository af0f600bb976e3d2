"""Batches and their members: one row per batch or chain, one row per job in it.

A batch's counters are written only in the transaction that records one of its jobs' outcomes
(``transitions.py`` -> ``counting.py``), under the batch row's lock: a callback's job id is
set in the same transaction that enqueues it, so no second transaction can enqueue it again.
"""

from __future__ import annotations

from django.db import models

#: Explicit: were the app left out of INSTALLED_APPS, its models would join
#: django_skipqueue (the package around them) and name tables no migration creates.
APP_LABEL = "skipqueue_workflows"


class Kind(models.TextChoices):
    # Jobs enqueued together; done when each of them has ended.
    BATCH = "batch", "Batch"
    # Steps run one after another, each with the previous step's return value.
    CHAIN = "chain", "Chain"


class Batch(models.Model):
    id = models.BigAutoField(primary_key=True)
    kind = models.CharField(max_length=5, choices=Kind.choices, default=Kind.BATCH)
    description = models.CharField(max_length=200, blank=True)
    # A nested batch counts as one member of its parent, ended when the nested one finishes.
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="children"
    )

    # Members: jobs and nested batches (a chain: its steps, enqueued or not yet).
    size = models.PositiveIntegerField(default=0)
    succeeded = models.PositiveIntegerField(default=0)
    # Failed for good (attempts spent, or an error that is not retried).
    failed = models.PositiveIntegerField(default=0)
    cancelled = models.PositiveIntegerField(default=0)

    # Task paths; each is enqueued with the batch id, then ``callback_kwargs``.
    on_success = models.CharField(max_length=255, blank=True)
    on_finish = models.CharField(max_length=255, blank=True)
    on_failure = models.CharField(max_length=255, blank=True)
    callback_kwargs = models.JSONField(default=dict, blank=True)
    # A chain's steps not enqueued yet: [{"task_path", "args", "kwargs"}, ...], first next.
    steps = models.JSONField(default=list, blank=True)

    created_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    # The callbacks' jobs: set once, in the transaction that enqueues them.
    success_job_id = models.BigIntegerField(null=True, blank=True)
    finish_job_id = models.BigIntegerField(null=True, blank=True)
    failure_job_id = models.BigIntegerField(null=True, blank=True)
    # A callback that could not be enqueued (its task gone, its arguments refused).
    callback_error = models.TextField(blank=True)

    class Meta:
        app_label = APP_LABEL
        db_table = "skipqueue_batch"
        verbose_name_plural = "batches"

    def __str__(self) -> str:
        label = self.description or f"{self.kind} {self.pk}"
        return f"{label} ({self.ended}/{self.size})"

    @property
    def ended(self) -> int:
        return self.succeeded + self.failed + self.cancelled

    @property
    def is_finished(self) -> bool:
        return self.finished_at is not None


class Member(models.Model):
    # The job's id, not a foreign key: purging finished jobs must not touch the batches.
    job_id = models.BigIntegerField(primary_key=True)
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="members")

    class Meta:
        app_label = APP_LABEL
        db_table = "skipqueue_batch_member"

    def __str__(self) -> str:
        return f"job {self.job_id} in batch {self.batch_id}"
