"""Flow options: what they store on the job, and the input they refuse with InvalidTaskOption."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from django_skipqueue.exceptions import InvalidTaskOption
from django_skipqueue.models import FlowKey, Job
from django_skipqueue.tasks import task
from tests.support.tasks import apply_event, call_api, export_for, noop

pytestmark = pytest.mark.django_db


def customer_export(customer_id: int, region: str = "eu") -> None:
    """A module-level function to declare tasks of."""


def declare(**options):
    return task(**options)(customer_export)


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"concurrency_key": "c:{customer}", "concurrency_limit": 2}, "unknown: ['customer']"),
        ({"concurrency_key": "c:{}", "concurrency_limit": 2}, "empty {}"),
        ({"concurrency_key": 42, "concurrency_limit": 2}, "template string or a callable"),
        ({"concurrency_key": "c:{customer_id}"}, "alone it limits nothing"),
        ({"concurrency_limit": 0}, "from 1 to 1000000"),
        ({"concurrency_limit": True}, "from 1 to 1000000"),
        ({"rate_limit": (10, 0)}, "period from 0.01"),
        ({"rate_limit": (0, 1.0)}, "rate_limit must be"),
        ({"rate_limit": 10}, "rate_limit must be"),
        ({"ordered": True, "concurrency_limit": 2}, "concurrency_limit must be 1"),
        ({"ordered_failure": "block"}, "with ordered=True"),
        ({"ordered": True, "ordered_failure": "retry"}, "'skip' or 'block'"),
        ({"ordered": "yes"}, "True or False"),
    ],
)
def test_bad_options_are_refused_when_the_task_is_declared(options, says):
    with pytest.raises(InvalidTaskOption, match=says.replace("[", r"\[").replace("(", r"\(")):
        declare(**options)


def test_a_key_that_the_call_cannot_give_is_refused_at_enqueue():
    bad = export_for.using(concurrency_key=lambda customer_id: None)
    with pytest.raises(InvalidTaskOption, match="non-empty string"):
        bad.enqueue(1)
    assert not Job.objects.exists()


def test_an_ordered_task_refuses_run_after():
    with pytest.raises(InvalidTaskOption, match="enqueue order"):
        apply_event.using(run_after=timezone.now() + timedelta(minutes=5)).enqueue("a", 1)


def test_the_key_is_the_task_path_and_the_template_and_the_slots_are_counted():
    first, second = export_for.enqueue(3), export_for.enqueue(3)
    other = export_for.enqueue(4)
    jobs = {job.pk: job for job in Job.objects.all()}
    key = f"{export_for.module_path}:customer:3"
    assert jobs[int(first.id)].flow_key == key
    assert (jobs[int(first.id)].status, jobs[int(first.id)].flow_slot) == ("ready", True)
    assert (jobs[int(second.id)].status, jobs[int(second.id)].flow_slot) == ("blocked", False)
    assert jobs[int(other.id)].status == "ready"
    assert FlowKey.objects.get(key=key).running == 1
    assert second.status == "READY"  # django.tasks has no blocked status: it is not running


def test_a_rate_without_a_key_is_one_window_for_the_task():
    results = [call_api.enqueue(n) for n in range(3)]
    statuses = [Job.objects.get(pk=r.id).status for r in results]
    assert statuses == ["ready", "ready", "blocked"]
    state = FlowKey.objects.get(key=call_api.module_path)
    assert (state.rate, state.period, state.window_count) == (2, 60.0, 2)
    assert state.wake_at == state.window_start + timedelta(seconds=60)
    assert not Job.objects.filter(flow_slot=True).exists()  # a rate alone holds no slot


def test_plain_tasks_write_no_flow_columns():
    noop.enqueue()
    job = Job.objects.get()
    assert (job.flow_key, job.flow_slot, job.waiting_key) == (None, False, None)
    assert not FlowKey.objects.exists()


def test_enqueue_many_puts_flow_calls_behind_their_keys():
    backend = export_for.get_backend()
    results = backend.enqueue_many([(export_for, [5], {}), (noop, [], {}), (export_for, [5], {})])
    statuses = [Job.objects.get(pk=r.id).status for r in results]
    assert statuses == ["ready", "ready", "blocked"]
