"""Flow control is visible: skipqueue_status per key, and the reason on the job's admin page."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from django_skipqueue.admin import detail
from django_skipqueue.models import Job
from tests.support.tasks import call_api, export_for

pytestmark = pytest.mark.django_db


def status(*args: str) -> str:
    out = StringIO()
    call_command("skipqueue_status", *args, stdout=out)
    return out.getvalue()


def test_status_lists_each_busy_key_with_running_waiting_and_the_oldest_waiting():
    for _ in range(3):
        export_for.enqueue(1)
    export_for.enqueue(2)
    data = json.loads(status("--json"))
    lines = {line["key"]: line for line in data["flow_keys"]}
    first = lines[f"{export_for.module_path}:customer:1"]
    assert (first["limit"], first["running"], first["waiting"]) == (1, 1, 2)
    assert first["oldest_waiting_seconds"] is not None
    second = lines[f"{export_for.module_path}:customer:2"]
    assert (second["running"], second["waiting"], second["oldest_waiting_seconds"]) == (1, 0, None)
    text = status()
    assert "flow key" in text and f"{export_for.module_path}:customer:1  1" in text


def test_the_job_page_says_what_a_blocked_job_waits_for():
    holder = Job.objects.get(pk=export_for.enqueue(5).id)
    waiting = Job.objects.get(pk=export_for.enqueue(5).id)
    assert "waiting for a free slot (1 of 1 running)" in detail.summary(waiting)
    assert "holds one of its key" in detail.summary(holder)
    for n in range(3):
        call_api.enqueue(n)
    over = Job.objects.filter(task_path=call_api.module_path, status="blocked").get()
    assert "the next rate window (2 starts per 60 s)" in detail.summary(over)
