"""Schedules and their ticks: one row per recurring task, one row per tick enqueued.

The unique ``(schedule, tick_at)`` pair is what makes a tick exactly-once: the job of a tick
and its tick row commit in one transaction, so a second insert of the same tick fails and
takes its job down with it.
"""

from __future__ import annotations

from django.db import models

#: Explicit: were the app left out of INSTALLED_APPS, its models would join
#: django_skipqueue (the package around them) and name tables no migration creates.
APP_LABEL = "skipqueue_scheduling"


class Missed(models.TextChoices):
    # Drop every tick reached later than SKIPQUEUE_SCHEDULER_GRACE after its time.
    SKIP = "skip", "Skip missed ticks"
    # Run the most recent due tick once, drop the older ones.
    LATEST = "latest", "Run the latest once"
    # Run the most recent ``catch_up`` due ticks, oldest first.
    CATCH_UP = "catch_up", "Catch up (at most N)"


class Source(models.TextChoices):
    # Declared in SKIPQUEUE_SCHEDULES: edited in settings, not in the admin.
    SETTINGS = "settings", "Settings"
    DATABASE = "database", "Database"


class ScheduleQuerySet(models.QuerySet["Schedule"]):
    def enabled(self) -> ScheduleQuerySet:
        return self.filter(enabled=True)

    def due(self, now: object) -> ScheduleQuerySet:
        """Enabled schedules whose next tick is at or before ``now`` (a database expression)."""
        return self.enabled().filter(next_tick_at__lte=now).order_by("next_tick_at", "id")

    def lock_due(self, now: object) -> Schedule | None:
        """Lock one due schedule, skipping those another scheduler holds (inside a transaction).

        The only locking read of the app: each scheduler takes a different schedule, and a
        schedule's ticks are only ever written while its row is locked.
        """
        return self.due(now).select_for_update(skip_locked=True).first()


class Schedule(models.Model):
    name = models.SlugField(max_length=100, unique=True)
    task_path = models.CharField(max_length=255)
    # Five fields (or six, with seconds first), or @hourly, @daily, @weekly, @monthly, @yearly.
    cron = models.CharField(max_length=200, blank=True)
    interval_seconds = models.PositiveIntegerField(null=True, blank=True)
    time_zone = models.CharField(max_length=64, default="UTC")
    args = models.JSONField(default=list, blank=True)
    kwargs = models.JSONField(default=dict, blank=True)
    # Blank: the task's own queue and priority.
    queue_name = models.CharField(max_length=64, blank=True)
    priority = models.SmallIntegerField(null=True, blank=True)
    missed = models.CharField(max_length=10, choices=Missed.choices, default=Missed.LATEST)
    catch_up = models.PositiveSmallIntegerField(default=10)
    enabled = models.BooleanField(default=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.DATABASE)

    # Written by the scheduler, under the row lock, in the transaction of the ticks.
    next_tick_at = models.DateTimeField(null=True, blank=True)
    last_tick_at = models.DateTimeField(null=True, blank=True)
    last_job_id = models.BigIntegerField(null=True, blank=True)
    missed_ticks = models.PositiveBigIntegerField(default=0)
    last_error = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ScheduleQuerySet.as_manager()

    class Meta:
        app_label = APP_LABEL
        db_table = "skipqueue_schedule"
        indexes = [
            # The scheduler's only query shape: enabled = 1 AND next_tick_at <= now ORDER BY it.
            models.Index(fields=["enabled", "next_tick_at", "id"], name="skipqueue_schedule_due")
        ]
        permissions = [("run_schedule", "Can run a schedule now")]

    def __str__(self) -> str:
        return self.name

    @property
    def timing(self) -> str:
        return self.cron or f"every {self.interval_seconds}s"


class TickKind(models.TextChoices):
    SCHEDULED = "scheduled", "Scheduled"
    # "Run now" from the admin: its own row, so that it never takes a scheduled tick's place.
    MANUAL = "manual", "Run now"


class Tick(models.Model):
    id = models.BigAutoField(primary_key=True)
    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="ticks")
    # The tick's time in UTC (the cron time in the schedule's zone, converted).
    tick_at = models.DateTimeField()
    kind = models.CharField(max_length=10, choices=TickKind.choices, default=TickKind.SCHEDULED)
    # A plain id, not a foreign key: purging finished jobs must not touch the ticks.
    job_id = models.BigIntegerField(null=True, blank=True)
    enqueued_at = models.DateTimeField()
    # The supervisor or scheduler process that enqueued it.
    scheduler = models.CharField(max_length=128, blank=True)

    class Meta:
        app_label = APP_LABEL
        db_table = "skipqueue_schedule_tick"
        constraints = [
            models.UniqueConstraint(fields=["schedule", "tick_at"], name="skipqueue_one_tick")
        ]

    def __str__(self) -> str:
        return f"{self.schedule_id} at {self.tick_at:%Y-%m-%d %H:%M:%S}"
