"""The job list's columns: what comes next (a scheduled run time, a failure's class), and
cells that wrap, so that the list fits a 1400 px window beside the admin's sidebar and filters.

The list defers ``errors`` (tracebacks can be large): the last error's class path is read in
the database, one short string per row of the page, by ``LastErrorClass``.
"""

from __future__ import annotations

import re
from typing import Any

from django.db.models import Case, CharField, F, Func, Value, When
from django.db.models.sql.compiler import SQLCompiler
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from django_skipqueue.admin.detail import moment, status_badge
from django_skipqueue.admin.listing import JobQuery
from django_skipqueue.models import Job, JobStatus

#: The name the list's queryset gives the last error's class path.
ERROR_CLASS = "last_error_class"


class LastErrorClass(Func):
    """``exception_class_path`` of the last element of ``errors`` (NULL when there is none)."""

    output_field = CharField()

    def __init__(self) -> None:
        super().__init__(F("errors"))

    def as_mysql(self, compiler: SQLCompiler, connection: Any, **extra: Any) -> Any:
        # $[last] needs MariaDB 10.9: the index is computed (MySQL 8.0+, MariaDB 10.6+).
        template = (
            "JSON_UNQUOTE(JSON_EXTRACT(%(expressions)s, CONCAT('$[', "
            "GREATEST(JSON_LENGTH(%(expressions)s) - 1, 0), '].exception_class_path')))"
        )
        return self.as_sql(compiler, connection, template=template, **extra)

    def as_postgresql(self, compiler: SQLCompiler, connection: Any, **extra: Any) -> Any:
        template = "(%(expressions)s -> -1 ->> 'exception_class_path')"
        return self.as_sql(compiler, connection, template=template, **extra)

    def as_sqlite(self, compiler: SQLCompiler, connection: Any, **extra: Any) -> Any:
        template = "json_extract(%(expressions)s, '$[#-1].exception_class_path')"
        return self.as_sql(compiler, connection, template=template, **extra)


def with_error_class(queryset: JobQuery) -> JobQuery:
    """Annotate failed jobs with their last error's class path (other rows: NULL)."""
    return queryset.annotate(
        **{
            ERROR_CLASS: Case(
                When(status=JobStatus.FAILED, then=LastErrorClass()),
                default=Value(None),
                output_field=CharField(),
            )
        }
    )


def state(job: Job) -> SafeString:
    """Render the status badge, and below it what comes next or what went wrong."""
    note = _next_or_error(job)
    if not note:
        return status_badge(job)
    return format_html('{}<span class="skipqueue-status-note">{}</span>', status_badge(job), note)


def _next_or_error(job: Job) -> SafeString | str:
    """When a scheduled job runs, or the class of a failed job's last error."""
    if job.status == JobStatus.SCHEDULED and job.run_after:
        return f"runs {moment(job.run_after)}"
    path = getattr(job, ERROR_CLASS, None)
    if job.status == JobStatus.FAILED and path:
        return format_html('<span title="{}">{}</span>', path, path.rpartition(".")[2])
    return ""


def queue(job: Job) -> SafeString:
    """Render the queue's name, and the job's priority when it is not the default."""
    if not job.priority:
        return format_html("{}", job.queue_name)
    return format_html(
        '{}<span class="skipqueue-status-note">priority {}</span>', job.queue_name, job.priority
    )


def breakable_path(path: str) -> SafeString:
    """Render a dotted path that may wrap after its dots and underscores (never inside names)."""
    parts = re.split(r"(?<=[._])", path)
    return format_html_join(mark_safe("<wbr>"), "{}", ((part,) for part in parts))
