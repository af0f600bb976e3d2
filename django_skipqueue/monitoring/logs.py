"""JSON log lines for log shippers, each carrying the job it is about.

The worker's lines are ``key=value`` text (``job=41 task=... queue=... attempt=1 ...``); this
formatter turns one record into one JSON object: time, level, logger, message, the fields of
the message's ``key=value`` pairs, and, for any line logged while a job runs on this thread or
coroutine (your task's own logging, a library's), the job's ``job``, ``task``, ``queue``,
``attempt`` and ``worker``, read from the context the executor sets for the attempt::

    LOGGING = {
        "version": 1,
        "formatters": {"json": {"()": "django_skipqueue.monitoring.logs.JsonFormatter"}},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"}},
        "root": {"handlers": ["console"], "level": "INFO"},
    }
"""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime
from typing import Any

from django_skipqueue.context import current_job

#: ``key=value`` pairs of the worker's lines (values without spaces).
PAIR = re.compile(r"(?<![\w.])([a-z_]+)=(\S+)")
#: Record attributes every LogRecord has: the rest came from ``extra=``.
STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


def job_fields(job: Any) -> dict[str, Any]:
    """The five fields that say which job a line is about."""
    return {
        "job": job.pk,
        "task": job.task_path,
        "queue": job.queue_name,
        "attempt": job.attempts,
        "worker": job.owner,
    }


class JsonFormatter(logging.Formatter):
    """One JSON object per line: the record, its ``key=value`` fields, the running job."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": message,
        }
        job = current_job.get()
        if job is not None:
            line.update(job_fields(job))
        if record.name.startswith("django_skipqueue"):
            line.update((key, _value(value)) for key, value in PAIR.findall(message))
        line.update((key, value) for key, value in vars(record).items() if key not in STANDARD)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def _value(text: str) -> Any:
    """A number where the text is one (``attempt=2``, ``duration_ms=13.7``), else the text."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
