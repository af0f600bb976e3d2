"""The last run of each maintenance task: how health knows the reaper is alive."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import IntegrityError, models, transaction
from django.db.models import F

from django_skipqueue.db.clock import DatabaseNow


class MaintenanceRun(models.Model):
    """One row per maintenance task ("reap", "promote", "purge"), rewritten by every pass.

    Every supervisor or ``skipqueue_reap`` loop writes the same row, so its age is the age
    of the most recent pass by anyone: exactly what "is the reaper running?" asks.
    """

    task = models.CharField(max_length=32, unique=True)
    # The process that ran the last pass (host, pid and a random part).
    runner = models.CharField(max_length=128)
    last_started_at = models.DateTimeField()
    last_finished_at = models.DateTimeField(null=True, blank=True)
    runs = models.PositiveBigIntegerField(default=0)
    # Figures of the last pass, e.g. {"reclaimed": 3, "failed": 1}.
    last_result = models.JSONField(default=dict)

    class Meta:
        db_table = "skipqueue_maintenance"

    def __str__(self) -> str:
        return f"{self.task} (last run {self.last_finished_at or self.last_started_at})"

    @classmethod
    def record(
        cls, using: str, task: str, runner: str, started_at: datetime, result: dict[str, Any]
    ) -> None:
        """Record a finished pass of ``task`` by ``runner`` (the database clock ends it)."""
        values = {
            "runner": runner,
            "last_started_at": started_at,
            "last_finished_at": DatabaseNow(),
            "last_result": result,
        }
        rows = cls.objects.using(using).filter(task=task)
        if rows.update(runs=F("runs") + 1, **values):
            return
        try:
            with transaction.atomic(using=using):
                cls.objects.using(using).create(task=task, runs=1, **values)
        except IntegrityError:
            rows.update(runs=F("runs") + 1, **values)
