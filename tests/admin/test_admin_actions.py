"""Admin actions: each guarded by state and permission, reported, logged; nothing else edits."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.urls import reverse

from django_skipqueue.admin import operations
from django_skipqueue.admin.compat import ACTIONS_ON_CHANGE_FORM
from django_skipqueue.models import Job, JobStatus
from tests.support.admin import (
    changelist_url,
    job_url,
    make_job,
    messages_of,
    run_action,
    staff_user,
)

pytestmark = pytest.mark.django_db


def statuses(*jobs: Job) -> list[str]:
    return [Job.objects.get(pk=job.pk).status for job in jobs]


def test_retry_moves_failed_jobs_to_ready_and_leaves_the_rest(admin_client):
    failed = make_job(JobStatus.FAILED, owner="gone", lease_until=None)
    ready = make_job(JobStatus.READY)
    done = make_job(JobStatus.SUCCEEDED)

    response = run_action(admin_client, "retry_failed", [failed, ready, done])

    assert statuses(failed, ready, done) == ["ready", "ready", "succeeded"]
    job = Job.objects.get(pk=failed.pk)
    # The attempt counter (the lease fence) is kept; one more attempt is granted.
    assert (job.attempts, job.max_attempts) == (3, 4)
    assert (job.owner, job.lease_until, job.finished_at, job.run_after) == (None,) * 4
    assert len(job.errors) == 3, "the history of failures stays"
    assert messages_of(response) == [
        "1 job retried.",
        "2 selected jobs were not failed: left unchanged.",
    ]
    [entry] = LogEntry.objects.filter(object_id=str(failed.pk))
    assert entry.action_flag == CHANGE and "failed -> ready" in entry.change_message


def test_retry_keeps_unspent_attempts_of_a_job_that_failed_early(admin_client):
    early = make_job(JobStatus.FAILED, attempts=1, max_attempts=5)
    run_action(admin_client, "retry_failed", [early])
    assert Job.objects.get(pk=early.pk).max_attempts == 5


def test_retry_refuses_a_job_whose_idempotency_key_is_live_again(admin_client):
    failed = make_job(JobStatus.FAILED, idempotency_key="order-7")
    make_job(JobStatus.READY, idempotency_key="order-7")
    other = make_job(JobStatus.FAILED)

    response = run_action(admin_client, "retry_failed", [failed, other])

    assert statuses(failed, other) == ["failed", "ready"]
    assert f"Job {failed.pk} was not retried: another live job holds its idempotency key." in (
        messages_of(response)
    )
    assert not LogEntry.objects.filter(object_id=str(failed.pk)).exists()


def test_a_user_without_the_retry_permission_is_not_offered_it_and_cannot_post_it(client):
    failed = make_job(JobStatus.FAILED)
    client.force_login(staff_user("viewer", "view_job", "cancel_job"))

    page = client.get(changelist_url())
    choices = [value for value, _ in page.context["action_form"].fields["action"].choices]
    assert "retry_failed" not in choices and "cancel_waiting" in choices

    response = run_action(client, "retry_failed", [failed])
    assert statuses(failed) == ["failed"]
    assert messages_of(response) == ["No action selected."]


def test_a_user_with_the_retry_permission_can_retry(client):
    failed = make_job(JobStatus.FAILED)
    client.force_login(staff_user("operator", "view_job", "retry_job"))
    run_action(client, "retry_failed", [failed])
    assert statuses(failed) == ["ready"]


def test_cancel_cancels_waiting_jobs_only_and_records_why(admin_client):
    ready, scheduled = make_job(JobStatus.READY), make_job(JobStatus.SCHEDULED)
    running, failed = make_job(JobStatus.CLAIMED), make_job(JobStatus.FAILED)

    response = run_action(admin_client, "cancel_waiting", [ready, scheduled, running, failed])

    assert statuses(ready, scheduled, running, failed) == [
        "cancelled", "cancelled", "claimed", "failed",
    ]  # fmt: skip
    job = Job.objects.get(pk=ready.pk)
    assert job.finished_at is not None
    [error] = job.errors
    assert error["exception_class_path"] == "django_skipqueue.exceptions.JobCancelled"
    assert "admin" in error["traceback"]
    assert messages_of(response) == [
        "2 jobs cancelled.",
        "2 selected jobs were not ready or scheduled: left unchanged.",
    ]
    assert LogEntry.objects.filter(action_flag=CHANGE).count() == 2


def test_request_cancellation_flags_running_jobs_only(admin_client):
    running, ready = make_job(JobStatus.CLAIMED), make_job(JobStatus.READY)

    run_action(admin_client, "request_cancellation", [running, ready])

    running.refresh_from_db()
    ready.refresh_from_db()
    assert (running.status, running.cancel_requested, running.owner) == (
        "claimed",
        True,
        "worker-1",
    )
    assert (ready.status, ready.cancel_requested) == ("ready", False)


def test_delete_asks_first_then_deletes_finished_jobs_only(admin_client):
    done, failed = make_job(JobStatus.SUCCEEDED), make_job(JobStatus.FAILED)
    ready, running = make_job(JobStatus.READY), make_job(JobStatus.CLAIMED)
    selection = [done, failed, ready, running]

    confirm = run_action(admin_client, "delete_finished", selection)
    assert "2 finished jobs (succeeded, failed or cancelled) will be deleted." in (
        confirm.content.decode()
    )
    assert Job.objects.count() == 4

    response = run_action(admin_client, "delete_finished", selection, post="yes")

    assert set(Job.objects.values_list("pk", flat=True)) == {ready.pk, running.pk}
    assert "2 jobs deleted." in messages_of(response)
    assert LogEntry.objects.filter(action_flag=DELETION).count() == 2


def test_the_stock_delete_action_is_gone_and_a_running_job_cannot_be_deleted(admin_client):
    running, done = make_job(JobStatus.CLAIMED), make_job(JobStatus.SUCCEEDED)
    page = admin_client.get(changelist_url())
    choices = [value for value, _ in page.context["action_form"].fields["action"].choices]
    assert "delete_selected" not in choices

    delete_running = reverse("admin:django_skipqueue_job_delete", args=[running.pk])
    assert admin_client.post(delete_running, {"post": "yes"}).status_code == 403
    delete_done = reverse("admin:django_skipqueue_job_delete", args=[done.pk])
    admin_client.post(delete_done, {"post": "yes"})
    assert list(Job.objects.values_list("pk", flat=True)) == [running.pk]


def test_select_across_retries_every_matching_job_in_chunks(admin_client, monkeypatch):
    monkeypatch.setattr(operations, "CHUNK", 2)
    failed = [make_job(JobStatus.FAILED) for _ in range(5)]
    make_job(JobStatus.FAILED, queue_name="emails")
    make_job(JobStatus.READY)

    response = run_action(
        admin_client, "retry_failed", failed[:1], query="queue=default", select_across="1"
    )

    assert Job.objects.filter(status="ready").count() == 6
    assert Job.objects.filter(status="failed", queue_name="emails").count() == 1
    assert messages_of(response) == ["5 jobs retried."]
    assert LogEntry.objects.count() == 5


def test_a_job_that_moves_on_after_it_was_selected_is_left_alone(monkeypatch):
    """The guard is repeated under the lock: a job changed meanwhile is neither touched nor
    reported."""
    first, second = make_job(JobStatus.FAILED), make_job(JobStatus.FAILED)
    lock = operations._lock

    def lock_after_another_operator(rows, *extra):
        Job.objects.filter(pk=first.pk).update(status=JobStatus.CANCELLED)
        return lock(rows, *extra)

    monkeypatch.setattr(operations, "_lock", lock_after_another_operator)
    changed: list[int] = []
    outcome = operations.retry_failed(Job.objects.all(), lambda jobs: changed.extend(jobs))

    assert (outcome.changed, [job.pk for job in changed]) == (1, [second.pk])
    assert statuses(first, second) == ["cancelled", "ready"]


@pytest.mark.skipif(not ACTIONS_ON_CHANGE_FORM, reason="actions on an object's page: Django 6.1")
def test_actions_run_from_the_job_page_and_return_to_it(admin_client):
    failed = make_job(JobStatus.FAILED)
    page = admin_client.get(job_url(failed))
    assert page.status_code == 200
    response = admin_client.post(
        job_url(failed),
        {"CHANGE_FORM-action": "retry_failed", "_selected_action": str(failed.pk)},
        follow=True,
    )
    assert response.redirect_chain[-1][0] == job_url(failed)
    assert statuses(failed) == ["ready"]
    assert "1 job retried." in messages_of(response)


def test_the_job_page_is_read_only_and_jobs_cannot_be_added(admin_client):
    job = make_job(JobStatus.READY)
    response = admin_client.post(job_url(job), {"status": "succeeded", "owner": "me"})
    assert response.status_code == 403
    assert statuses(job) == ["ready"]
    assert admin_client.get(reverse("admin:django_skipqueue_job_add")).status_code == 403
