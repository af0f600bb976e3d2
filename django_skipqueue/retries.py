"""What a failed attempt leaves behind: its error record and when the job runs again."""

from __future__ import annotations

import random
import traceback

from django_skipqueue.conf import get_settings
from django_skipqueue.models import Job

ELISION = "\n[... {} characters elided ...]\n"


def error_record(error: BaseException) -> dict[str, str]:
    """Return the stored form of ``error``: its class path and (trimmed) traceback."""
    cls = type(error)
    text = "".join(traceback.format_exception(error))
    return {
        "exception_class_path": f"{cls.__module__}.{cls.__qualname__}",
        "traceback": trim(text),
    }


def message_record(error_class: type[BaseException], message: str) -> dict[str, str]:
    """Return an error record for an attempt that ended without a Python traceback."""
    path = f"{error_class.__module__}.{error_class.__qualname__}"
    return {"exception_class_path": path, "traceback": f"{path}: {message}\n"}


def trim(text: str) -> str:
    """Keep the head and the tail of a long traceback: both ends are where the answers are."""
    limit = get_settings().MAX_TRACEBACK_CHARS
    if len(text) <= limit:
        return text
    keep = max(limit - len(ELISION) - 10, 2) // 2
    return text[:keep] + ELISION.format(len(text) - 2 * keep) + text[-keep:]


def retry_delay(job: Job, backoff: float | None) -> float | None:
    """Return the seconds until the next attempt, or None when the attempts are spent.

    Exponential (``backoff * 2 ** (attempt - 1)``, capped by SKIPQUEUE_RETRY_BACKOFF_MAX) with
    "equal jitter": a random half of the delay is added to its fixed half, so that jobs that
    failed together do not all come back at the same instant. A backoff of 0 retries at once.
    """
    if job.attempts >= job.max_attempts:
        return None
    config = get_settings()
    base = config.RETRY_BACKOFF if backoff is None else backoff
    if base <= 0:
        return 0.0
    delay = min(config.RETRY_BACKOFF_MAX, base * 2 ** max(job.attempts - 1, 0))
    return delay / 2 + random.uniform(0, delay / 2)
