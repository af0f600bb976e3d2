"""How a batch or chain reads in the admin: its outcome, its members, its callbacks, its steps.

A batch that ended with a failed member reads as failed everywhere: in its bar (coloured by
outcome), its words and its callbacks (``on_success`` will not run). Member lists are bounded
and read by primary key (failed ones first); a job already purged shows as its id alone.
"""

from __future__ import annotations

import json
from typing import Any

from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from django_skipqueue.admin import cells
from django_skipqueue.admin.columns import ERROR_CLASS, with_error_class
from django_skipqueue.admin.detail import status_badge
from django_skipqueue.models import Job
from django_skipqueue.states import JobStatus
from django_skipqueue.workflows.models import Batch, Kind

#: Member jobs listed at most on a batch's page.
SHOWN = 50
#: Characters of a step's return value shown; its title holds all of it.
RETURN_SHOWN = 80
LIGHT_FIELDS = ("id", "task_path", "status", "cancel_requested", "finished_at")


def outcome(batch: Batch) -> str:
    """One word: running, failed, cancelled or succeeded (failed wins over cancelled)."""
    if batch.failed:
        return "failed" if batch.is_finished else "running, failing"
    if not batch.is_finished:
        return "running"
    return "cancelled" if batch.cancelled else "succeeded"


def progress(batch: Batch) -> SafeString:
    """A bar coloured by outcome, the ended count and the outcome, the counts below."""
    size = batch.size or 1
    segments = format_html_join(
        "",
        '<span class="skipqueue-bar-{}" style="width: {}%"></span>',
        ((name, 100 * count // size) for name, count in _counts(batch) if count),
    )
    word = outcome(batch)
    return format_html(
        '<span class="skipqueue-bar" role="img" aria-label="{}">{}</span> {} / {} '
        '(<span class="skipqueue-outcome-{}">{}</span>)'
        '<span class="skipqueue-status-note">{}</span>',
        counts_text(batch),
        segments,
        batch.ended,
        batch.size,
        word.split(",")[0],
        word,
        counts_text(batch),
    )


def counts_text(batch: Batch) -> str:
    """Say "4 succeeded, 1 failed, 0 cancelled of 5"."""
    parts = ", ".join(f"{count} {name}" for name, count in _counts(batch))
    return f"{parts} of {batch.size}"


def _counts(batch: Batch) -> list[tuple[str, int]]:
    return [
        ("succeeded", batch.succeeded),
        ("failed", batch.failed),
        ("cancelled", batch.cancelled),
    ]


def callbacks(batch: Batch) -> SafeString:
    """Each callback's task, and its job, or when it runs, or why it never will."""
    rows = [
        (name, path, _callback_state(batch, name, job_id))
        for name, path, job_id in (
            ("on_success", batch.on_success, batch.success_job_id),
            ("on_finish", batch.on_finish, batch.finish_job_id),
            ("on_failure", batch.on_failure, batch.failure_job_id),
        )
        if path
    ]
    if not rows:
        return format_html("{}", "none")
    return format_html_join(
        "",
        '<div data-callback="{}">{}: {} -&gt; {}</div>',
        ((name, name, cells.dotted(path), state) for name, path, state in rows),
    )


def _callback_state(batch: Batch, name: str, job_id: int | None) -> SafeString | str:
    if job_id:
        return _job_link(job_id)
    if name == "on_success" and batch.failed:
        return "will not run (a member failed)"
    if name == "on_success" and batch.cancelled:
        return "will not run (a member was cancelled)"
    if name == "on_failure" and batch.is_finished and not batch.failed:
        return "will not run (no member failed)"
    if batch.is_finished:
        return "not enqueued (see the callback error)"
    return "not yet"


def members(batch: Batch) -> SafeString:
    """The member jobs (failed first, at most ``SHOWN``) and nested batches, each linked."""
    jobs = _member_jobs(batch)
    listed = format_html_join("", "<tr>{}</tr>", ((_member_row(job),) for job in jobs))
    more = batch.members.count() - len(jobs) if len(jobs) >= SHOWN else 0
    tail = format_html("<p>{} more not shown.</p>", more) if more > 0 else ""
    head = "<th>Job</th><th>Task</th><th>Status</th><th>Finished (UTC)</th>"
    return format_html(
        '<table class="skipqueue-table skipqueue-members"><thead><tr>{}</tr></thead>'
        "<tbody>{}</tbody></table>{}{}",
        SafeString(head),
        listed,
        tail,
        _nested(batch),
    )


def _nested(batch: Batch) -> SafeString | str:
    """The nested batches and chains (each one member), failed first, each linked."""
    children = list(batch.children.order_by("-failed", "pk")[:SHOWN])
    if not children:
        return ""
    links = format_html_join(
        ", ",
        '<a href="{}" data-batch="{}">{}</a> ({})',
        (
            (
                reverse("admin:skipqueue_workflows_batch_change", args=[child.pk]),
                child.pk,
                child,
                outcome(child),
            )
            for child in children
        ),
    )
    return format_html('<p class="skipqueue-nested">Nested: {}</p>', links)


def _member_jobs(batch: Batch) -> list[Job]:
    using = batch._state.db or "default"
    ids = batch.members.values("job_id")
    jobs = with_error_class(Job.objects.using(using).filter(pk__in=ids).only(*LIGHT_FIELDS))
    failed = list(jobs.filter(status=JobStatus.FAILED).order_by("pk")[:SHOWN])
    others = jobs.exclude(status=JobStatus.FAILED).order_by("pk")[: SHOWN - len(failed)]
    return failed + list(others)


def _member_row(job: Job) -> SafeString:
    error = getattr(job, ERROR_CLASS, None)
    note = format_html('<span class="skipqueue-status-note">{}</span>', error) if error else ""
    return format_html(
        '<td data-job="{}" data-status="{}">{}</td><td>{}</td><td>{}{}</td><td>{}</td>',
        job.pk,
        job.status,
        _job_link(job.pk),
        cells.dotted(job.task_path),
        status_badge(job),
        note,
        cells.when(job.finished_at),
    )


def _job_link(job_id: int) -> SafeString:
    url = reverse("admin:django_skipqueue_job_change", args=[job_id])
    return format_html('<a href="{}">job {}</a>', url, job_id)


def steps(batch: Batch) -> SafeString:
    """A chain's steps in order: each enqueued one with its job and return value, then the rest."""
    if batch.kind != Kind.CHAIN:
        return format_html("{}", "-")
    using = batch._state.db or "default"
    ids = batch.members.values("job_id")
    done = Job.objects.using(using).filter(pk__in=ids).order_by("pk")
    rows = [_step_row(number, job) for number, job in enumerate(done, 1)]
    waiting = "will not run (a step failed)" if batch.failed or batch.cancelled else "not yet"
    start = len(rows) + 1
    rows += [_waiting_row(number, step, waiting) for number, step in enumerate(batch.steps, start)]
    head = "<th>Step</th><th>Task</th><th>Job</th><th>Return value</th>"
    return format_html(
        '<table class="skipqueue-table skipqueue-steps"><thead><tr>{}</tr></thead>'
        "<tbody>{}</tbody></table>",
        SafeString(head),
        format_html_join("", "<tr>{}</tr>", ((row,) for row in rows)),
    )


def _step_row(number: int, job: Job) -> SafeString:
    value = _json(job.return_value) if job.status == JobStatus.SUCCEEDED else "-"
    return format_html(
        '<td>{}</td><td>{}</td><td data-job="{}">{} {}</td><td>{}</td>',
        number,
        cells.dotted(job.task_path),
        job.pk,
        _job_link(job.pk),
        status_badge(job),
        cells.clipped(value, RETURN_SHOWN),
    )


def _waiting_row(number: int, step: dict[str, Any], waiting: str) -> SafeString:
    return format_html(
        "<td>{}</td><td>{}</td><td>{}</td><td>-</td>",
        number,
        cells.dotted(str(step.get("task_path", ""))),
        waiting,
    )


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
