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
