"""The benchmark's work as Django Tasks (for this project, django-tasks-db and django-ox)."""

from __future__ import annotations

from benchmarks.jobs import noop_function, probe_function
from django_skipqueue.tasks import task


@task
def noop() -> None:
    """Do nothing: the benchmark measures the queue, not the task."""
    noop_function()


@task
def probe(key: str) -> None:
    """Record this job's start time."""
    probe_function(key)


@task(concurrency_key="k{key}", concurrency_limit=1)
def keyed_noop(key: int) -> None:
    """Do nothing, one key's jobs at most ``concurrency_limit`` at once (set per call)."""
    noop_function()
