"""The job list on a table of millions of rows: capped counts, cheap filters, indexed search.

Every query the list runs is bounded by an index: the page itself walks the primary key
backwards (newest first) or the claim index's ``status`` prefix; the count stops at a cap;
the date filter becomes a primary-key range (ids grow with enqueue time); the task filter
offers the tasks of recent jobs only; search looks up ids and idempotency keys by index.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

from django.contrib import admin
from django.core.paginator import Paginator
from django.http import HttpRequest
from django.utils import timezone

from django_skipqueue.admin.operations import JobQuery
from django_skipqueue.admin.scope import configured_queues
from django_skipqueue.db.counting import Count, capped_count
from django_skipqueue.models import Job, JobStatus

#: The job list counts at most this many rows; past it, it says "more than".
COUNT_CAP = 10_000
#: The task filter offers the tasks of this many most recent jobs.
RECENT_TASKS_WINDOW = 10_000
#: Task paths have no index: task filters and searches look at this many most recent jobs
#: (a bounded primary-key range), so one that matches nothing does not read the whole table.
TASK_SCAN_WINDOW = 100_000
#: How far an id's enqueue time may lag behind a newer id's (clock skew between web servers,
#: time between building a job and inserting it). The date filter widens its id range by it.
ENQUEUE_SKEW = timedelta(minutes=5)
#: A dotted Python path: what a task path search looks like.
DOTTED_PATH = re.compile(r"\A[A-Za-z_]\w*(\.[A-Za-z_]\w*)+\Z")


class CappedPaginator(Paginator):
    """Count at most COUNT_CAP + 1 rows; past that, ask the optimizer for an estimate.

    An exact COUNT(*) reads every matching index entry: on a table of millions of rows that
    is the slowest part of a list page. Pages stop at the cap; filters reach the rest.
    """

    cap = COUNT_CAP

    @cached_property
    def found(self) -> Count:
        """Return the exact count up to the cap, or the optimizer's (marked) estimate."""
        return capped_count(self.object_list, self.cap)  # type: ignore[arg-type]

    @cached_property
    def count(self) -> int:
        """Return the number of rows, or the cap when there are more (see ``capped``)."""
        return min(self.found.value, self.cap)

    @property
    def capped(self) -> bool:
        """Whether there are more rows than ``count`` says."""
        return self.found.approximate

    @property
    def estimate(self) -> int:
        """The optimizer's estimate of the rows when ``capped`` (else the exact count)."""
        return self.found.value


class QueueFilter(admin.SimpleListFilter):
    """The configured queues (a DISTINCT over the table would read all of it)."""

    title = "queue"
    parameter_name = "queue"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        names = [ref.name for ref in configured_queues()]
        return [(name, name) for name in _with_current(names, self.value())]

    def queryset(self, request: HttpRequest, queryset: JobQuery) -> JobQuery:
        return queryset.filter(queue_name=self.value()) if self.value() else queryset


class TaskFilter(admin.SimpleListFilter):
    """The tasks of the most recent jobs, matched among the TASK_SCAN_WINDOW newest jobs."""

    title = f"task (newest {TASK_SCAN_WINDOW:,} jobs)"
    parameter_name = "task"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        paths = recent_task_paths(model_admin.get_queryset(request))
        return [(path, path) for path in _with_current(paths, self.value())]

    def queryset(self, request: HttpRequest, queryset: JobQuery) -> JobQuery:
        value = self.value()
        return newest_jobs(queryset).filter(task_path=value) if value else queryset


class EnqueuedFilter(admin.SimpleListFilter):
    """Enqueue time as a primary-key range found by bisection, plus the exact condition."""

    title = "enqueued"
    parameter_name = "enqueued"
    WINDOWS = {
        "1h": ("Last hour", timedelta(hours=1)),
        "24h": ("Last 24 hours", timedelta(days=1)),
        "7d": ("Last 7 days", timedelta(days=7)),
    }
    OLDER = "older-7d"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            *((key, label) for key, (label, _) in self.WINDOWS.items()),
            (self.OLDER, "More than 7 days ago"),
        ]

    def queryset(self, request: HttpRequest, queryset: JobQuery) -> JobQuery:
        value = self.value()
        if value in self.WINDOWS:
            return enqueued_since(queryset, timezone.now() - self.WINDOWS[value][1])
        if value == self.OLDER:
            return enqueued_before(queryset, timezone.now() - timedelta(days=7))
        return queryset


def enqueued_since(queryset: JobQuery, moment: datetime) -> JobQuery:
    """Jobs enqueued at or after ``moment``, read from a primary-key range."""
    first = first_id_enqueued_since(queryset, moment - ENQUEUE_SKEW)
    if first is None:
        return queryset.none()
    return queryset.filter(pk__gte=first, enqueued_at__gte=moment)


def enqueued_before(queryset: JobQuery, moment: datetime) -> JobQuery:
    """Jobs enqueued before ``moment``, read from a primary-key range."""
    first_after = first_id_enqueued_since(queryset, moment + ENQUEUE_SKEW)
    if first_after is not None:
        queryset = queryset.filter(pk__lt=first_after)
    return queryset.filter(enqueued_at__lt=moment)


def first_id_enqueued_since(queryset: JobQuery, moment: datetime) -> int | None:
    """Return an id bound: jobs from it on were enqueued at or after ``moment``.

    Bisects the primary key with point reads (about log2(ids) of them) instead of scanning
    ``enqueued_at``, which has no index. Correct because ids grow with enqueue time, up to
    ENQUEUE_SKEW, which the callers add as a margin. None when no job is that recent.
    """
    jobs = Job.objects.using(queryset.db).order_by("pk").values_list("pk", "enqueued_at")
    first = jobs.first()
    last = jobs.order_by("-pk").first()
    if last is None or first is None or last[1] < moment:
        return None
    if first[1] >= moment:
        return first[0]
    low = first[0]
    high = last[0]
    while high - low > 1:
        middle = (low + high) // 2
        found = jobs.filter(pk__gte=middle).first()
        if found is not None and found[1] >= moment:
            high = middle
        else:
            low = middle
    return high


def recent_task_paths(queryset: JobQuery, window: int = RECENT_TASKS_WINDOW) -> list[str]:
    """Return the distinct task paths of the ``window`` most recent jobs."""
    recent = newest_jobs(Job.objects.using(queryset.db).all(), window).order_by("task_path")
    return list(recent.values_list("task_path", flat=True).distinct())


def newest_jobs(queryset: JobQuery, window: int | None = None) -> JobQuery:
    """Narrow ``queryset`` to ids within ``window`` of the newest: a primary-key range."""
    window = window or TASK_SCAN_WINDOW
    newest = Job.objects.using(queryset.db).order_by("-pk").values_list("pk", flat=True).first()
    return queryset if newest is None else queryset.filter(pk__gt=newest - window)


def search_jobs(queryset: JobQuery, term: str) -> JobQuery:
    """Filter by a job id, an idempotency key, or a task path (``task:`` or a dotted path).

    Ids and keys are read through indexes (the primary key; the unique active key, and the
    claim index's status prefix for failed and cancelled jobs). A task path has no index: it
    is matched among the TASK_SCAN_WINDOW newest jobs only.
    """
    term = term.strip()
    if term.startswith("task:"):
        prefix = term.removeprefix("task:").strip()
        return newest_jobs(queryset).filter(task_path__startswith=prefix)
    if term.startswith("key:"):
        return queryset.filter(pk__in=ids_with_key(queryset, term.removeprefix("key:").strip()))
    ids = ids_with_key(queryset, term)
    number = term.removeprefix("#")
    # ASCII digits only: "²" is a digit to isdigit() and not to int().
    if number.isascii() and number.isdigit() and len(number) < 19:
        ids.append(int(number))
    if DOTTED_PATH.fullmatch(term):
        return queryset.filter(pk__in=ids) | newest_jobs(queryset).filter(
            task_path__startswith=term
        )
    return queryset.filter(pk__in=ids)


def ids_with_key(queryset: JobQuery, key: str) -> list[int]:
    """Return the ids of jobs with idempotency key ``key``, through indexes.

    A live or succeeded job holds the key in ``active_key`` (a unique index). Failed and
    cancelled ones released it: they are found through the claim index's status prefix,
    which reads one row per failed or cancelled job (history that purge keeps bounded).
    No ORDER BY: sorting by id would make the optimizer walk the whole primary key instead.
    """
    if not key or len(key) > 191:
        return []
    jobs = Job.objects.using(queryset.db).order_by()
    live = jobs.filter(active_key=key).values_list("pk", flat=True)
    released = jobs.filter(status__in=(JobStatus.FAILED, JobStatus.CANCELLED), idempotency_key=key)
    return [*live, *released.values_list("pk", flat=True)[:100]]


def _with_current(values: Iterable[str], current: str | None) -> list[str]:
    """Keep the selected value among the choices even when it is not offered any more."""
    values = list(values)
    return values if current is None or current in values else [*values, current]
