"""The Job admin: a read-only list and page, changed only through state-guarded actions.

Nobody edits a job's status, owner, lease or attempts by hand: those columns belong to the
workers and the reaper, and a typo there would break the fence. Operators retry, cancel and
delete through actions that check permission and state (see actions.py).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.http import HttpRequest
from django.urls import URLPattern
from django.utils.safestring import SafeString

from django_skipqueue.admin import actions, columns, detail
from django_skipqueue.admin.compat import ACTIONS_ON_CHANGE_FORM, ActionLocation
from django_skipqueue.admin.dashboard import dashboard_urls
from django_skipqueue.admin.listing import (
    TASK_SCAN_WINDOW,
    CappedPaginator,
    EnqueuedFilter,
    QueueFilter,
    TaskFilter,
    search_jobs,
)
from django_skipqueue.admin.operations import FINISHED, JobQuery
from django_skipqueue.admin.scope import admin_database
from django_skipqueue.admin.selection import CheckedSelection
from django_skipqueue.db.clock import read_db_now
from django_skipqueue.models import Job

#: Columns the list never reads: payloads, results and tracebacks can be large.
HEAVY_FIELDS = ("args", "kwargs", "errors", "return_value", "worker_ids")


class JobChangeList(ChangeList):
    """The list's query leaves the heavy JSON columns unread."""

    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> JobQuery:
        jobs = super().get_queryset(request, exclude_parameters).defer(*HEAVY_FIELDS)
        return columns.with_error_class(jobs)


class JobAdmin(CheckedSelection):
    list_display = ("id", "task", "queue", "state", "attempts_label", "enqueued", "finished")
    list_display_links = ("id", "task")
    list_filter = (
        ("status", admin.ChoicesFieldListFilter),
        QueueFilter,
        TaskFilter,
        EnqueuedFilter,
    )
    # Sorting by anything but the id would sort the whole filtered table.
    sortable_by = ("id",)
    ordering = ("-id",)
    list_per_page = 100
    paginator = CappedPaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    # The box is enabled by search_fields; get_search_results does the (indexed) work.
    search_fields = ("=id",)
    search_help_text = (
        "A job id, or an idempotency key (exact; key:... to force). A dotted task path "
        f"(or task:...) matches task path prefixes among the newest {TASK_SCAN_WINDOW:,} jobs."
    )
    actions = (
        actions.retry_failed,
        actions.cancel_waiting,
        actions.request_cancellation,
        actions.delete_finished,
    )
    fieldsets = (
        (None, {"fields": ("summary", "status_label", "attempts_label")}),
        ("Arguments", {"fields": ("args_json", "kwargs_json")}),
        ("Result", {"fields": ("return_value_json",)}),
        ("Errors, one per failed attempt", {"fields": ("errors_list",)}),
        ("Timeline", {"fields": ("timeline",)}),
        ("Owner and lease", {"fields": ("lease",)}),
    )
    readonly_fields = (
        "summary",
        "status_label",
        "attempts_label",
        "args_json",
        "kwargs_json",
        "return_value_json",
        "errors_list",
        "timeline",
        "lease",
    )

    class Media:
        css = {"all": ("django_skipqueue/admin.css",)}

    def get_queryset(self, request: HttpRequest) -> JobQuery:
        return super().get_queryset(request).using(admin_database())

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return JobChangeList

    def get_search_results(
        self, request: HttpRequest, queryset: JobQuery, search_term: str
    ) -> tuple[JobQuery, bool]:
        return (search_jobs(queryset, search_term) if search_term.strip() else queryset), False

    def get_actions(
        self, request: HttpRequest, action_location: ActionLocation = ActionLocation.CHANGE_LIST
    ) -> dict[str, Any]:
        # Django 6.1 asks per ActionLocation (and warns about an override without it); older
        # versions know only the list.
        if ACTIONS_ON_CHANGE_FORM:
            found = super().get_actions(request, action_location)
        else:
            found = super().get_actions(request)
        found.pop("delete_selected", None)  # deletes any state; delete_finished guards it
        return found

    def get_urls(self) -> list[URLPattern]:
        return [*dashboard_urls(self), *super().get_urls()]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Job | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Job | None = None) -> bool:
        allowed = super().has_delete_permission(request, obj)
        return allowed and (obj is None or obj.is_finished)

    def has_retry_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_skipqueue.retry_job")

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_skipqueue.cancel_job")

    def delete_model(self, request: HttpRequest, obj: Job) -> None:
        """Delete the job only if it is still finished (it may have been retried meanwhile)."""
        self.get_queryset(request).filter(FINISHED, pk=obj.pk).delete()

    @admin.display(description="status")
    def status_label(self, job: Job) -> SafeString:
        return detail.status_badge(job)

    @admin.display(description="attempts")
    def attempts_label(self, job: Job) -> str:
        return detail.attempts(job)

    @admin.display(description="enqueued (UTC)")
    def enqueued(self, job: Job) -> str:
        return detail.moment(job.enqueued_at)

    @admin.display(description="finished (UTC)")
    def finished(self, job: Job) -> str:
        return detail.moment(job.finished_at)

    @admin.display(description="task")
    def task(self, job: Job) -> SafeString:
        return columns.breakable_path(job.task_path)

    @admin.display(description="queue")
    def queue(self, job: Job) -> SafeString:
        return columns.queue(job)

    @admin.display(description="status")
    def state(self, job: Job) -> SafeString:
        return columns.state(job)

    @admin.display(description="job")
    def summary(self, job: Job) -> SafeString:
        return detail.summary(job)

    @admin.display(description="args")
    def args_json(self, job: Job) -> SafeString:
        return detail.pretty_json(job.args)

    @admin.display(description="kwargs")
    def kwargs_json(self, job: Job) -> SafeString:
        return detail.pretty_json(job.kwargs)

    @admin.display(description="return value")
    def return_value_json(self, job: Job) -> SafeString:
        return detail.pretty_json(job.return_value)

    @admin.display(description="errors")
    def errors_list(self, job: Job) -> SafeString:
        return detail.error_list(job.errors)

    @admin.display(description="timeline")
    def timeline(self, job: Job) -> SafeString:
        return detail.timeline(job, read_db_now(job._state.db or "default"))

    @admin.display(description="owner and lease")
    def lease(self, job: Job) -> SafeString:
        return detail.lease(job, read_db_now(job._state.db or "default"))
