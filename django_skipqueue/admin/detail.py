"""How a job reads on its admin page: JSON, tracebacks, timeline, owner and lease.

Everything that comes from a job (arguments, results, tracebacks, task paths) is user data
and is escaped: it goes through ``format_html`` placeholders, never into a format string.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from django_skipqueue.models import Job, JobStatus

EMPTY = "-"


def summary(job: Job) -> SafeString:
    """Render what identifies the job: id, task, queue, priority and idempotency key."""
    rows = [
        ("Id", str(job.pk)),
        ("Task", job.task_path),
        ("Queue", job.queue_name),
        ("Priority", str(job.priority)),
        ("Idempotency key", job.idempotency_key or EMPTY),
    ]
    if job.flow_key is not None:
        from django_skipqueue.flow.status import reason

        rows += [("Flow key", job.flow_key), ("Flow", reason(job))]
    return _table(None, rows)


def pretty_json(value: Any) -> SafeString:
    """Render a JSON value indented, escaped, in a <pre>."""
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    return format_html('<pre class="skipqueue-json">{}</pre>', text)


def error_list(errors: Iterable[Any]) -> SafeString:
    """Render each stored error: its number, exception class and traceback, escaped."""
    rows = [_error_parts(error) for error in errors]
    if not rows:
        return format_html("{}", "No errors.")
    return format_html_join(
        "",
        '<div class="skipqueue-error"><p class="skipqueue-error-title">{}. <code>{}</code></p>'
        '<pre class="skipqueue-traceback">{}</pre></div>',
        ((number, path, text) for number, (path, text) in enumerate(rows, 1)),
    )


def _error_parts(error: Any) -> tuple[str, str]:
    if isinstance(error, dict):
        return str(error.get("exception_class_path", "")), str(error.get("traceback", ""))
    return "", str(error)


def timeline(job: Job, now: datetime) -> SafeString:
    """Render enqueued / due / started / last attempt / finished in the order they happened.

    A retry moves ``run_after`` past the first start, so the events are sorted by time:
    listed in a fixed order, a retried job would show a negative time between two of them.
    """
    rows = []
    previous = None
    for label, moment in sorted(_events(job), key=lambda event: event[1]):
        rows.append((label, moment_ms(moment), _duration(moment - previous) if previous else ""))
        previous = moment
    if job.finished_at is None and previous is not None:
        rows.append(("Now (database clock)", moment_ms(now), ""))
    return _table(("Event", "When (UTC)", "After previous"), rows)


def _events(job: Job) -> list[tuple[str, datetime]]:
    """The job's recorded moments; a due time after the first start was set by a retry."""
    started = job.started_at
    due_at = job.run_after
    due = "Retry due" if started and due_at and due_at > started else "Due"
    steps = [
        ("Enqueued", job.enqueued_at),
        (due, due_at),
        ("Started", job.started_at),
        ("Last attempt started", job.last_attempted_at),
        ("Finished", job.finished_at),
    ]
    return [(label, moment) for label, moment in steps if moment is not None]


def lease(job: Job, now: datetime) -> SafeString:
    """Render who holds the job, until when, and the workers that ran earlier attempts."""
    rows = [
        ("Owner", job.owner or EMPTY),
        ("Lease until", _lease_text(job, now)),
        ("Lease length", f"{job.lease_seconds} s"),
        ("Timeout", f"{job.timeout_seconds} s" if job.timeout_seconds else EMPTY),
        ("Cancellation requested", "yes" if job.cancel_requested else "no"),
        ("Earlier attempts ran on", ", ".join(map(str, job.worker_ids)) or EMPTY),
    ]
    return _table(None, rows)


def moment(value: datetime | None) -> str:
    """Render a time in UTC to the second, the way logs show it."""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if value else EMPTY


def moment_ms(value: datetime) -> str:
    """Render a time in UTC to the millisecond (for the timeline)."""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def attempts(job: Job) -> str:
    """Return "spent of allowed", the way the list shows it."""
    return f"{job.attempts} of {job.max_attempts}"


def status_badge(job: Job) -> SafeString:
    """Render the status as a coloured label (the colour is also in the word)."""
    label = JobStatus(job.status).label if job.status in JobStatus.values else job.status
    extra = (
        " (cancel requested)" if job.cancel_requested and job.status == JobStatus.CLAIMED else ""
    )
    return format_html(
        '<span class="skipqueue-status skipqueue-status-{}">{}{}</span>', job.status, label, extra
    )


def _lease_text(job: Job, now: datetime) -> str:
    if job.lease_until is None:
        return EMPTY
    left = job.lease_until - now
    when = moment(job.lease_until)
    if left >= timedelta(0):
        return f"{when} (expires in {_duration(left)})"
    return f"{when} (expired {_duration(-left)} ago)"


def _duration(delta: timedelta) -> str:
    seconds = delta.total_seconds()
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _table(header: tuple[str, ...] | None, rows: Sequence[tuple[str, ...]]) -> SafeString:
    head = format_html("<thead><tr>{}</tr></thead>", _cells("th", header)) if header else ""
    body = format_html_join("", "<tr>{}</tr>", ((_cells("td", row),) for row in rows))
    return format_html('<table class="skipqueue-table">{}<tbody>{}</tbody></table>', head, body)


def _cells(tag: str, values: tuple[str, ...]) -> SafeString:
    # The tag is one of two constants; every value is escaped by format_html_join.
    template = "<th>{}</th>" if tag == "th" else "<td>{}</td>"
    return format_html_join("", template, ((value,) for value in values))
