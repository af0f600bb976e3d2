"""Paused queues are not claimed, by claim() or by real workers; resumed, they are."""

from __future__ import annotations

import subprocess
import time
from collections import Counter

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings
from django.utils import timezone

from django_skipqueue import queues, transitions
from django_skipqueue.exceptions import InvalidQueueName
from django_skipqueue.models import Job, QueuePause
from tests.support.tasks import noop

pytestmark = pytest.mark.django_db(transaction=True)


def enqueue(queue_name: str, count: int = 1) -> None:
    for _ in range(count):
        noop.using(queue_name=queue_name).enqueue()


def test_a_paused_queue_is_not_claimed_and_resumed_it_is():
    enqueue("emails", 2)
    enqueue("default", 2)
    assert queues.pause("emails", reason="mail server down", by="ops") is True
    assert queues.pause("emails") is False, "already paused"

    claimed = Job.objects.claim(["emails", "default"], limit=10, owner="w")
    assert {job.queue_name for job in claimed} == {"default"}
    assert Job.objects.claim(["emails"], limit=10, owner="w") == []
    row = QueuePause.objects.get(queue_name="emails")
    assert (row.reason, row.paused_by) == ("mail server down", "ops")

    assert queues.resume("emails") is True
    assert queues.resume("emails") is False, "not paused any more"
    assert len(Job.objects.claim(["emails"], limit=10, owner="w")) == 2


def test_a_running_job_of_a_paused_queue_finishes():
    enqueue("emails")
    [job] = Job.objects.claim(["emails"], limit=1, owner="w")
    queues.pause("emails")
    assert transitions.succeed(job, "sent") is True
    assert Job.objects.get(pk=job.pk).status == "succeeded"


@override_settings(SKIPQUEUE_PAUSE_CACHE_SECONDS=0.3)
def test_a_pause_made_elsewhere_is_seen_within_the_cache_time():
    enqueue("reports", 3)
    assert len(Job.objects.claim(["reports"], limit=1, owner="w")) == 1  # caches "not paused"
    # Another process pauses the queue: a row, no cache invalidation here.
    QueuePause.objects.create(queue_name="reports", paused_at=timezone.now())
    time.sleep(0.4)
    assert Job.objects.claim(["reports"], limit=5, owner="w") == []
    QueuePause.objects.all().delete()
    time.sleep(0.4)
    assert len(Job.objects.claim(["reports"], limit=5, owner="w")) == 2


def test_unknown_queues_are_refused():
    with pytest.raises(InvalidQueueName, match="not one of backend 'default'"):
        queues.pause("nope")
    with pytest.raises(CommandError, match="not one of backend"):
        call_command("skipqueue_pause", "nope")
    with pytest.raises(CommandError, match="no task backend"):
        call_command("skipqueue_resume", "emails", "--backend", "missing")


def test_pause_and_resume_commands(capsys):
    call_command("skipqueue_pause", "emails", "reports", "--reason", "maintenance")
    assert set(QueuePause.objects.values_list("queue_name", flat=True)) == {"emails", "reports"}
    call_command("skipqueue_resume", "reports")
    assert list(QueuePause.objects.values_list("queue_name", flat=True)) == ["emails"]
    out = capsys.readouterr().out
    assert "paused emails" in out and "resumed reports" in out


@pytest.mark.slow
def test_workers_leave_a_paused_queue_alone_and_take_it_once_resumed(manage_py, child_env):
    enqueue("emails", 5)
    enqueue("default", 5)
    queues.pause("emails")
    burst = [*manage_py, "runworkers", "--burst", "--processes", "1", "--queues", "default,emails"]
    subprocess.run(burst, env=child_env, check=True, timeout=120, capture_output=True)
    by_status = Counter(Job.objects.values_list("queue_name", "status"))
    assert by_status == {("emails", "ready"): 5, ("default", "succeeded"): 5}

    queues.resume("emails")
    subprocess.run(burst, env=child_env, check=True, timeout=120, capture_output=True)
    assert Job.objects.filter(queue_name="emails", status="succeeded").count() == 5
