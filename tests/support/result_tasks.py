"""Tasks that return large values, for the tests of result bounds (worker processes import
them by path)."""

from __future__ import annotations

import time

from django_skipqueue.tasks import task


@task(max_attempts=3, retry_backoff=0)
def big_result(characters: int) -> str:
    """Return ``characters`` plain characters: as many bytes of JSON, and of SQL."""
    return "x" * characters


@task(max_attempts=3, retry_backoff=0)
def quoted_result(characters: int) -> str:
    """Return ``characters`` double quotes: twice as many bytes of JSON, four times of SQL."""
    return '"' * characters


@task(max_attempts=3, retry_backoff=0)
def small_result(label: str, seconds: float = 0.0) -> str:
    """Return ``label`` after ``seconds``."""
    time.sleep(seconds)
    return label
