"""JSON log lines: every line about a job carries its id, task, queue, attempt and worker.

A real worker (a burst Worker of this process) runs a task that logs through its own logger,
and records the outcome; a handler with the JSON formatter catches every line of both.
"""

from __future__ import annotations

import io
import json
import logging

import pytest

from django_skipqueue.monitoring.logs import JsonFormatter
from django_skipqueue.worker import claimer
from django_skipqueue.worker.loop import Worker
from django_skipqueue.worker.options import WorkerOptions
from django_skipqueue.worker.owner import owner_id
from tests.support import worker_tasks as wt

pytestmark = pytest.mark.django_db(transaction=True)
FIELDS = ("job", "task", "queue", "attempt", "worker")


def test_task_lines_and_outcome_lines_carry_the_job(monkeypatch, close_thread_connections):
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    monkeypatch.setattr(root, "level", logging.INFO)
    result = wt.log_a_line.using(queue_name="emails").enqueue("hello")
    monkeypatch.setattr(claimer, "BURST_HORIZON", 0.0)
    owner = owner_id()
    options = WorkerOptions(queues=("emails",), threads=2, burst=True, wakeup=False)
    try:
        Worker(options, owner=owner).run()
    finally:
        root.removeHandler(handler)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    expected = {
        "job": int(result.id),
        "task": "tests.support.worker_tasks.log_a_line",
        "queue": "emails",
        "attempt": 1,
        "worker": owner,
    }
    [said] = [line for line in lines if line["logger"] == "tests.tasks"]
    assert {key: said[key] for key in FIELDS} == expected
    assert said["message"] == "the task says hello" and said["level"] == "WARNING"
    [outcome] = [line for line in lines if line.get("status") == "succeeded"]
    assert {key: outcome[key] for key in FIELDS} == expected
    assert isinstance(outcome["duration_ms"], float)
    others = [line for line in lines if line["logger"] != "tests.tasks" and line is not outcome]
    assert others and all("job" not in line for line in others)  # start, stop: no job


#: The fragment of docs/howto/run-workers.md ("Short jobs: claim ahead"), as dictConfig takes it.
QUIET_PER_JOB_LINES = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "INFO"},
    "loggers": {
        "django.tasks": {"level": "WARNING"},
        "django_skipqueue.worker": {"level": "WARNING"},
    },
}


def test_quiet_per_job_lines_keep_failures(close_thread_connections, monkeypatch):
    # With the fragment's two loggers at WARNING, a succeeding job writes no line and a job
    # that fails for good still writes Django's FAILED line and the worker's own. The levels
    # go in as an incremental dictConfig: the test's handlers stay as they are.
    import logging.config

    root = logging.getLogger()
    quiet = {key: QUIET_PER_JOB_LINES[key] for key in ("version", "loggers")}
    saved = {name: logging.getLogger(name).level for name in quiet["loggers"]}
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root.addHandler(handler)
    monkeypatch.setattr(root, "level", logging.INFO)
    logging.config.dictConfig({**quiet, "incremental": True})
    succeeded = wt.stamp.enqueue()
    failed = wt.always_fail.enqueue()
    monkeypatch.setattr(claimer, "BURST_HORIZON", 0.0)
    options = WorkerOptions(threads=1, burst=True, wakeup=False)
    try:
        Worker(options, owner=owner_id()).run()
    finally:
        root.removeHandler(handler)
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)
    lines = stream.getvalue().splitlines()

    def about(job_id: str) -> list[str]:
        return [line for line in lines if f"id={job_id} " in line or f"job={job_id} " in line]

    assert about(succeeded.id) == [], lines
    assert any("state=FAILED" in line for line in about(failed.id)), lines
    assert any("status=failed" in line for line in about(failed.id)), lines
