"""Paused queues: a row here means workers do not claim from that queue."""

from __future__ import annotations

from django.db import models


class QueuePause(models.Model):
    backend_alias = models.CharField(max_length=64, default="default")
    queue_name = models.CharField(max_length=64)
    paused_at = models.DateTimeField()
    paused_by = models.CharField(max_length=150, blank=True)
    reason = models.CharField(max_length=255, blank=True)

    class Meta:
        db_table = "skipqueue_queue_pause"
        constraints = [
            models.UniqueConstraint(
                fields=["backend_alias", "queue_name"], name="skipqueue_pause_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.queue_name} (paused)"
