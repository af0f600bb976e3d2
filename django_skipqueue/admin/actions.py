"""The job list's actions: each checked by permission, guarded by state, reported and logged.

The state guards live in operations.py; this module turns a request into an operation, says
what it did (and what it left alone, and why) and writes one admin log entry per changed job.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.admin import helpers
from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from django_skipqueue.admin import operations
from django_skipqueue.admin.compat import ActionLocation, action
from django_skipqueue.admin.listing import COUNT_CAP
from django_skipqueue.admin.operations import JobQuery, Recorder, Report
from django_skipqueue.models import Job

#: Actions offered on the job page too (Django returns to the page afterwards).
BOTH = [ActionLocation.CHANGE_LIST, ActionLocation.CHANGE_FORM]


@action(
    permissions=["retry"],
    description="Retry this failed job",
    description_plural="Retry selected failed jobs",
    location=BOTH,
)
def retry_failed(model_admin: Any, request: HttpRequest, queryset: JobQuery) -> None:
    """Move the selected failed jobs back to ready, one more attempt each."""
    report = operations.retry_failed(
        queryset, _recorder(request, CHANGE, "Retried: failed -> ready.")
    )
    _report(model_admin, request, report, "retried", "failed")
    for pk in report.key_conflicts:
        model_admin.message_user(
            request,
            f"Job {pk} was not retried: another live job holds its idempotency key.",
            messages.ERROR,
        )


@action(
    permissions=["cancel"],
    description="Cancel this waiting job",
    description_plural="Cancel selected waiting jobs",
    location=BOTH,
)
def cancel_waiting(model_admin: Any, request: HttpRequest, queryset: JobQuery) -> None:
    """Cancel the selected jobs that have not started."""
    note = f"cancelled from the admin by {request.user} before it ran."
    record = _recorder(request, CHANGE, "Cancelled: waiting -> cancelled.")
    _report(
        model_admin,
        request,
        operations.cancel_waiting(queryset, record, note),
        "cancelled",
        "ready or scheduled",
    )


@action(
    permissions=["cancel"],
    description="Request cancellation of this running job",
    description_plural="Request cancellation of selected running jobs",
    location=BOTH,
)
def request_cancellation(model_admin: Any, request: HttpRequest, queryset: JobQuery) -> None:
    """Ask the workers of the selected running jobs to stop them."""
    record = _recorder(request, CHANGE, "Cancellation requested (the worker stops the job).")
    report = operations.request_cancellation(queryset, record)
    _report(
        model_admin, request, report, "asked to stop", "running without a cancellation request"
    )


@action(permissions=["delete"], description="Delete selected finished jobs")
def delete_finished(
    model_admin: Any, request: HttpRequest, queryset: JobQuery
) -> HttpResponse | None:
    """Delete the selected finished jobs, after a confirmation page."""
    if request.POST.get("post") != "yes":
        return _confirm_delete(model_admin, request, queryset)
    report = operations.delete_finished(queryset, _recorder(request, DELETION, ""))
    _report(model_admin, request, report, "deleted", "finished")
    return None


def _confirm_delete(
    model_admin: Any, request: HttpRequest, queryset: JobQuery
) -> TemplateResponse:
    """Ask before deleting: how many of the selected jobs are finished (counted up to a cap)."""
    finished = (
        queryset.filter(operations.FINISHED).order_by().values("pk")[: COUNT_CAP + 1].count()
    )
    context = {
        **model_admin.admin_site.each_context(request),
        "title": "Delete finished jobs?",
        "opts": Job._meta,
        "finished": min(finished, COUNT_CAP),
        "capped": finished > COUNT_CAP,
        "selected": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME),
        "select_across": request.POST.get("select_across") == "1",
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "action": request.POST.get("action"),
    }
    template = "admin/django_skipqueue/job/delete_finished_confirmation.html"
    return TemplateResponse(request, template, context)


def _recorder(request: HttpRequest, flag: int, message: str) -> Recorder:
    """Return a callback that writes one admin log entry per changed job."""

    def record(jobs: list[Job]) -> None:
        user_id = request.user.pk
        assert user_id is not None  # admin views require a logged-in staff user
        LogEntry.objects.log_actions(user_id, jobs, flag, change_message=message)

    return record


def _report(model_admin: Any, request: HttpRequest, report: Report, verb: str, state: str) -> None:
    """Say how many jobs were changed, and how many selected ones were left alone."""
    if report.changed:
        model_admin.message_user(request, f"{_jobs(report.changed)} {verb}.", messages.SUCCESS)
    if request.POST.get("select_across") == "1":
        if not report.changed and not report.key_conflicts:
            model_admin.message_user(
                request, f"No matching job was {state}: nothing changed.", messages.WARNING
            )
        return
    skipped = _selected_count(request) - report.changed - len(report.key_conflicts)
    if skipped > 0:
        were = "job was" if skipped == 1 else "jobs were"
        model_admin.message_user(
            request, f"{skipped} selected {were} not {state}: left unchanged.", messages.WARNING
        )


def _jobs(count: int) -> str:
    return f"{count} job" if count == 1 else f"{count} jobs"


def _selected_count(request: HttpRequest) -> int:
    return len(request.POST.getlist(helpers.ACTION_CHECKBOX_NAME))
