"""A ledger the demo tasks write to: one row per execution, so duplicates can be counted."""

from __future__ import annotations

from django.db import models


class LedgerEntry(models.Model):
    job_id = models.BigIntegerField(db_index=True)
    attempt = models.PositiveIntegerField()
    worker = models.CharField(max_length=128)
    label = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"job {self.job_id} attempt {self.attempt}"


class FlowLedgerEntry(models.Model):
    """One row per execution of a flow-control test task, its times by the database clock."""

    job_id = models.BigIntegerField(db_index=True)
    key = models.CharField(max_length=64)
    seq = models.IntegerField(default=0)
    attempt = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True)

    def __str__(self) -> str:
        return f"job {self.job_id} key {self.key} attempt {self.attempt}"
