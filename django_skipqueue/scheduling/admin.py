"""Schedules in the admin: create, edit, enable and disable them, run one now; ticks read only.

Saving a form writes the definition fields only: the scheduler's own columns (next and last
tick, last job, missed ticks) are never written from a form read seconds earlier, so an edit
cannot move a schedule back over ticks a scheduler has fired meanwhile.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from django_skipqueue.admin import cells
from django_skipqueue.admin.readonly import ReadOnlyAdmin
from django_skipqueue.admin.selection import CheckedSelection
from django_skipqueue.db.clock import read_db_now
from django_skipqueue.exceptions import InvalidSchedule
from django_skipqueue.scheduling import ticks
from django_skipqueue.scheduling.definition import KEYS, validate
from django_skipqueue.scheduling.models import Schedule, Source, Tick
from django_skipqueue.scheduling.status import local_time

#: The fields a person edits; the rest belongs to the scheduler.
DEFINITION = [*KEYS.values()]
TIMING = ("cron", "interval_seconds", "time_zone", "enabled")


class ScheduleForm(forms.ModelForm):
    class Meta:
        model = Schedule
        fields = ["name", *DEFINITION]

    def clean(self) -> dict[str, Any]:
        """Refuse what the scheduler could not run: bad cron, time zone, task or policy."""
        data = super().clean() or {}
        if self.errors:
            return data
        try:
            validate(data.get("name") or "", data)
        except InvalidSchedule as error:
            field = {"cron": "cron", "time_zone": "time_zone", "task": "task_path"}
            self.add_error(field.get(error.field), str(error))
        return data


@admin.action(permissions=["run"], description="Run selected schedules now")
def run_now(model_admin: ScheduleAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    """Enqueue one job per schedule at once, recorded as a manual tick."""
    for schedule in queryset:
        using = schedule._state.db
        try:
            with transaction.atomic(using=using):
                job_id = ticks.run_now(schedule, read_db_now(using), using, "admin")
        except InvalidSchedule as error:
            model_admin.message_user(request, f"{schedule}: {error}", messages.ERROR)
        else:
            model_admin.message_user(request, f"{schedule}: job {job_id} enqueued.")


@admin.action(permissions=["change"], description="Enable selected schedules")
def enable(model_admin: ScheduleAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    # next_tick_at stays NULL: the scheduler gives it the first tick after its now.
    count = queryset.filter(source=Source.DATABASE, enabled=False).update(enabled=True)
    model_admin.message_user(request, f"{count} schedules enabled.")


@admin.action(permissions=["change"], description="Disable selected schedules")
def disable(model_admin: ScheduleAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    count = queryset.filter(source=Source.DATABASE).update(enabled=False, next_tick_at=None)
    model_admin.message_user(request, f"{count} schedules disabled.")


@admin.register(Schedule)
class ScheduleAdmin(CheckedSelection):
    form = ScheduleForm
    list_display = ("title", "task", "timing_cell", "enabled", "next_tick", "last_tick",
                    "last_job", "missed_ticks")  # fmt: skip
    list_filter = ("enabled", "source")
    search_fields = ("name", "task_path")
    ordering = ("name",)
    actions = [run_now, enable, disable]

    class Media:
        css = {"all": ("django_skipqueue/admin.css",)}

    readonly_fields = (
        "source",
        "next_tick",
        "last_tick",
        "last_job",
        "missed_ticks",
        "last_error",
        "updated",
    )

    def has_run_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("skipqueue_scheduling.run_schedule")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Declared in settings: edited there, and copied again by every scheduler.
        if obj is not None and obj.source == Source.SETTINGS:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and obj.source == Source.SETTINGS:
            return False
        return super().has_delete_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: Schedule, form: Any, change: bool) -> None:
        """Write the definition only; a changed timing moves the next tick to after now."""
        using = obj._state.db or "default"
        timing_changed = not change or any(name in form.changed_data for name in TIMING)
        fields = [name for name in DEFINITION if not change or name in form.changed_data]
        if timing_changed:
            now = read_db_now(using)
            next_tick = validate(obj.name, form.cleaned_data).timing.after(now)
            obj.next_tick_at = next_tick if obj.enabled else None
            fields.append("next_tick_at")
        if not change:
            obj.save(using=using)
            return
        obj.save(using=using, update_fields=[*fields, "updated_at"])

    @admin.display(description="updated (UTC)")
    def updated(self, schedule: Schedule) -> SafeString:
        return cells.when(schedule.updated_at)

    @admin.display(description="name", ordering="name")
    def title(self, schedule: Schedule) -> SafeString:
        """The name, and where the schedule is declared when it is not edited here."""
        source = "declared in settings" if schedule.source == Source.SETTINGS else ""
        return cells.noted(schedule.name, source)

    @admin.display(description="task", ordering="task_path")
    def task(self, schedule: Schedule) -> SafeString:
        return cells.dotted(schedule.task_path)

    @admin.display(description="timing")
    def timing_cell(self, schedule: Schedule) -> SafeString:
        return cells.noted(schedule.timing, cells.dotted(schedule.time_zone))

    @admin.display(description="next tick (UTC)", ordering="next_tick_at")
    def next_tick(self, schedule: Schedule) -> SafeString:
        return _tick_time(schedule.next_tick_at, schedule.time_zone)

    @admin.display(description="last tick (UTC)", ordering="last_tick_at")
    def last_tick(self, schedule: Schedule) -> SafeString:
        return _tick_time(schedule.last_tick_at, schedule.time_zone)

    @admin.display(description="last job")
    def last_job(self, schedule: Schedule) -> str:
        from django_skipqueue.models import Job

        if not schedule.last_job_id:
            return "-"
        job = Job.objects.using(schedule._state.db).filter(pk=schedule.last_job_id).first()
        if job is None:
            return f"#{schedule.last_job_id} (purged)"
        url = reverse("admin:django_skipqueue_job_change", args=[job.pk])
        return format_html('<a href="{}">#{}</a> {}', url, job.pk, job.status)


def _tick_time(value: datetime | None, time_zone: str) -> SafeString:
    """A tick time in UTC as on the job pages, with the schedule's own clock in its title."""
    if value is None:
        return cells.when(None)
    local = local_time(value, time_zone)
    return format_html('<span title="{}">{}</span>', local, cells.when(value))


@admin.register(Tick)
class TickAdmin(ReadOnlyAdmin):
    list_display = ("schedule", "tick", "kind", "job", "enqueued", "scheduler_cell")
    list_filter = ("kind",)
    search_fields = ("=schedule__name",)
    ordering = ("-tick_at",)
    list_select_related = ("schedule",)

    @admin.display(description="tick at (UTC)", ordering="tick_at")
    def tick(self, row: Tick) -> SafeString:
        return cells.when(row.tick_at)

    @admin.display(description="job")
    def job(self, row: Tick) -> SafeString:
        if not row.job_id:
            return cells.when(None)
        url = reverse("admin:django_skipqueue_job_change", args=[row.job_id])
        return format_html('<a href="{}">#{}</a>', url, row.job_id)

    @admin.display(description="enqueued (UTC)", ordering="enqueued_at")
    def enqueued(self, row: Tick) -> SafeString:
        return cells.when(row.enqueued_at)

    @admin.display(description="scheduler")
    def scheduler_cell(self, row: Tick) -> SafeString:
        return cells.clipped(row.scheduler, 24)
