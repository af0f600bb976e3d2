"""Flow control is visible: skipqueue_status per key, and the reason on the job's admin page."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from django_skipqueue.admin import detail
from django_skipqueue.models import Job
from tests.support.admin import add_worker
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
    # The admitted job holds the slot; no worker runs it.
    assert (first["limit"], first["running"], first["slots_held"], first["waiting"]) == (
        1,
        0,
        1,
        2,
    )
    assert first["oldest_waiting_seconds"] is not None
    second = lines[f"{export_for.module_path}:customer:2"]
    assert (second["running"], second["waiting"], second["oldest_waiting_seconds"]) == (0, 0, None)
    text = status()
    assert (
        "slots held" in text and f"{export_for.module_path}:customer:1  1      0        1" in text
    )


def test_status_counts_as_running_only_the_jobs_of_live_workers():
    """A killed worker's claimed job holds its slot until reaped, but runs nowhere."""
    holders = [export_for.enqueue(n).id for n in (1, 2)]
    add_worker("host-1:101:live", ["default"], heartbeat_ago=1)
    add_worker("host-1:102:killed", ["default"], heartbeat_ago=900)
    for job_id, owner in zip(holders, ("host-1:101:live", "host-1:102:killed"), strict=True):
        Job.objects.filter(pk=job_id).update(status="claimed", owner=owner)
    lines = {line["key"]: line for line in json.loads(status("--json"))["flow_keys"]}
    running = [lines[f"{export_for.module_path}:customer:{n}"]["running"] for n in (1, 2)]
    held = [lines[f"{export_for.module_path}:customer:{n}"]["slots_held"] for n in (1, 2)]
    assert (running, held) == ([1, 0], [1, 1])


def test_the_job_page_says_what_a_blocked_job_waits_for():
    holder = Job.objects.get(pk=export_for.enqueue(5).id)
    waiting = Job.objects.get(pk=export_for.enqueue(5).id)
    assert "waiting for a free slot (1 of 1 running)" in detail.summary(waiting)
    assert "holds one of its key" in detail.summary(holder)
    for n in range(3):
        call_api.enqueue(n)
    over = Job.objects.filter(task_path=call_api.module_path, status="blocked").get()
    assert "the next rate window (2 starts per 60 s)" in detail.summary(over)
