"""Flow keys: one row per concurrency key or rate-limited task, the semaphore its jobs share."""

from __future__ import annotations

from django.db import models

from django_skipqueue.db.keys import KeyField


class FlowKey(models.Model):
    """The slots and the rate window of one flow key.

    Locked ``FOR UPDATE`` by every transaction that takes or gives back one of its slots (an
    enqueue, a job's end, a promotion, the flow timer), so that ``running`` is exact across
    every worker process and machine. The limits are the task's, written by each enqueue.
    """

    key = KeyField(max_length=191, primary_key=True)
    #: Jobs of the key that may hold a slot at once; NULL for a rate limit alone.
    limit = models.PositiveIntegerField(null=True, blank=True)
    #: Jobs holding a slot now: admitted and not yet ended (a retry keeps its slot, blocked
    #: holders included).
    running = models.PositiveIntegerField(default=0)
    #: One at a time in enqueue order (limit 1).
    ordered = models.BooleanField(default=False)
    #: In ordered mode, a job that failed for good keeps the key's slot ("block") or not ("skip").
    on_failure = models.CharField(max_length=8, default="skip")
    #: At most ``rate`` admissions per ``period`` seconds (fixed windows on the database clock).
    rate = models.PositiveIntegerField(null=True, blank=True)
    period = models.FloatField(null=True, blank=True)
    window_start = models.DateTimeField(null=True, blank=True)
    window_count = models.PositiveIntegerField(default=0)
    #: The jobs admitted in the current window or carried into it (admitted earlier and not
    #: claimed when it began): when the next window begins, those not claimed yet, and those
    #: claimed since it began, count in it. At most ``rate`` ids per window, usually fewer.
    window_jobs = models.JSONField(default=list)
    #: The jobs that hold a slot and wait BLOCKED for a rate window (a retry, at once or
    #: promoted after its backoff; an operator's retry of a job that kept its slot): the
    #: admission reads them by primary key and admits them by the rate alone, before the jobs
    #: that need a slot, so it never scans the key's blocked rows for them. At most ``limit``.
    blocked_holders = models.JSONField(default=list)
    #: When the flow timer must look at the key again: its next rate window, while jobs wait.
    wake_at = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        db_table = "skipqueue_flow_key"

    def __str__(self) -> str:
        return self.key
