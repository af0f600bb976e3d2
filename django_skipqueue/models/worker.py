"""Live worker processes and their per-minute counters: what status, health and admin read."""

from __future__ import annotations

from django.db import models

from django_skipqueue.models.process import ProcessRecord


class WorkerRole(models.TextChoices):
    SUPERVISOR = "supervisor", "Supervisor"
    WORKER = "worker", "Worker"


class WorkerProcess(ProcessRecord):
    """One row per worker or supervisor start; its heartbeat says whether it lives."""

    # Unique per process start (host, pid, random part); also the owner written on claims.
    owner = models.CharField(max_length=128, unique=True)
    role = models.CharField(max_length=16, choices=WorkerRole.choices)
    supervisor = models.CharField(max_length=128, null=True, blank=True)
    backend_alias = models.CharField(max_length=64, default="default")
    queues = models.JSONField(default=list)
    threads = models.PositiveSmallIntegerField(default=1)
    # hostname, pid, wakeup_address (woken when a job of its queues is enqueued), started_at,
    # last_heartbeat_at, stopped_at: ProcessRecord's.

    claimed = models.PositiveBigIntegerField(default=0)
    succeeded = models.PositiveBigIntegerField(default=0)
    failed = models.PositiveBigIntegerField(default=0)
    retried = models.PositiveBigIntegerField(default=0)
    reclaimed = models.PositiveBigIntegerField(default=0)
    lost_leases = models.PositiveBigIntegerField(default=0)
    # Claim-query latency over the recent window, in milliseconds.
    claim_p50_ms = models.FloatField(null=True, blank=True)
    claim_p95_ms = models.FloatField(null=True, blank=True)

    class Meta:
        db_table = "skipqueue_worker"
        indexes = [models.Index(fields=["last_heartbeat_at"], name="skipqueue_worker_beat")]

    def __str__(self) -> str:
        return f"{self.role} {self.owner}"


class QueueMinute(models.Model):
    """Counters of one process for one queue and one minute, summed by the status views.

    Each process writes only its own rows, so the counters never contend; claim latency is
    kept as a histogram (fixed bucket bounds) so percentiles can be merged across processes.
    """

    minute = models.DateTimeField()
    queue_name = models.CharField(max_length=64)
    owner = models.CharField(max_length=128)
    claimed = models.PositiveIntegerField(default=0)
    succeeded = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    retried = models.PositiveIntegerField(default=0)
    reclaimed = models.PositiveIntegerField(default=0)
    lost_leases = models.PositiveIntegerField(default=0)
    claim_queries = models.PositiveIntegerField(default=0)
    claim_latency_histogram = models.JSONField(default=list)

    class Meta:
        db_table = "skipqueue_queue_minute"
        constraints = [
            models.UniqueConstraint(
                fields=["minute", "queue_name", "owner"], name="skipqueue_minute_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.queue_name} {self.minute:%Y-%m-%d %H:%M} {self.owner}"
