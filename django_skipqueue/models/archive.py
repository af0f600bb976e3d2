"""History of purged jobs when purge runs with --archive: same columns, no hot indexes."""

from __future__ import annotations

from django.db import models

from django_skipqueue.db.keys import KeyField


class JobArchive(models.Model):
    # The job's own id, kept: archiving the same job twice fails loudly instead of duplicating.
    id = models.BigIntegerField(primary_key=True)
    queue_name = models.CharField(max_length=64)
    priority = models.SmallIntegerField()
    status = models.CharField(max_length=10)
    run_after = models.DateTimeField(null=True)
    task_path = models.CharField(max_length=255)
    args = models.JSONField(default=list)
    kwargs = models.JSONField(default=dict)
    owner = models.CharField(max_length=128, null=True)
    attempts = models.PositiveIntegerField()
    max_attempts = models.PositiveSmallIntegerField()
    enqueued_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True)
    last_attempted_at = models.DateTimeField(null=True)
    finished_at = models.DateTimeField(null=True)
    errors = models.JSONField(default=list)
    return_value = models.JSONField(null=True)
    worker_ids = models.JSONField(default=list)
    idempotency_key = KeyField(max_length=191, null=True)
    archived_at = models.DateTimeField()

    class Meta:
        db_table = "skipqueue_job_archive"

    def __str__(self) -> str:
        return f"{self.task_path} #{self.pk} (archived {self.status})"
