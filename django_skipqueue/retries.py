"""What a failed attempt leaves behind: its error record, with a long traceback trimmed.

When the job runs again is the state machine's decision: ``states.next_step()``.
"""

from __future__ import annotations

import traceback

from django_skipqueue.conf import get_settings

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
