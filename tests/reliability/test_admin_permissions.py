"""Admin operations are refused without their permission, whatever the request says.

tests/admin/test_admin_actions.py checks the retry permission (not offered, a forged POST does
nothing) and tests/admin/test_admin_dashboard.py the pause permission and the dashboard's view
permission. This completes the matrix: every action, from its own job list and its job
page, for a staff user holding every permission but the one it needs, for a user who is not
staff and for an anonymous visitor; and the read-only job page accepts no edit.
"""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from django_skipqueue.models import Job, JobStatus, QueuePause
from tests.support.admin import changelist_url, job_url, make_job, run_action, staff_user

pytestmark = [pytest.mark.django_db, pytest.mark.vendor_neutral]

ALL = ("view_job", "retry_job", "cancel_job", "delete_job", "pause_queue")
#: action: (the permission it needs, the state it applies to, the state it leaves)
ACTIONS = {
    "retry_failed": ("retry_job", JobStatus.FAILED, "ready"),
    "cancel_waiting": ("cancel_job", JobStatus.READY, "cancelled"),
    "request_cancellation": ("cancel_job", JobStatus.CLAIMED, "claimed"),
    "delete_finished": ("delete_job", JobStatus.SUCCEEDED, None),
}
PAUSE_URL = "admin:django_skipqueue_pause"


def snapshot(job: Job) -> tuple | None:
    row = Job.objects.filter(pk=job.pk).values_list("status", "cancel_requested").first()
    return tuple(row) if row else None


def offered(client, url: str) -> set[str]:
    page = client.get(url)
    if page.status_code != 200 or "action_form" not in (page.context or {}):
        return set()
    return {value for value, _ in page.context["action_form"].fields["action"].choices}


def post_action(client, action: str, job: Job) -> None:
    """Post the action as a forged form would, from the list and from the job page."""
    run_action(client, action, [job], post="yes")
    client.post(job_url(job), {"action": action, "_selected_action": [job.pk], "post": "yes"})


@pytest.mark.parametrize("action", ACTIONS)
def test_an_action_without_its_permission_is_neither_offered_nor_applied(client, action):
    needed, state, _ = ACTIONS[action]
    job = make_job(state)
    before = snapshot(job)
    client.force_login(staff_user("almost", *[p for p in ALL if p != needed]))

    assert action not in offered(client, changelist_url())
    assert action not in offered(client, job_url(job))
    post_action(client, action, job)

    assert snapshot(job) == before
    assert not LogEntry.objects.exists()


@pytest.mark.parametrize("action", ACTIONS)
def test_the_same_action_with_its_permission_is_applied(client, action):
    needed, state, after = ACTIONS[action]
    job = make_job(state)
    client.force_login(staff_user("operator", "view_job", needed))
    assert action in offered(client, changelist_url())
    post_action(client, action, job)
    row = snapshot(job)
    assert (row[0] if row else None) == after
    if action == "request_cancellation":
        assert row == ("claimed", True)


@pytest.mark.parametrize("who", ["anonymous", "not staff"])
def test_nobody_outside_the_admin_can_act_or_pause(client, who):
    if who == "not staff":
        user = User.objects.create_user("outsider", password="pw", is_staff=False)
        for codename in ALL:
            user.user_permissions.add(Permission.objects.get(codename=codename))
        client.force_login(user)
    jobs = {action: make_job(state) for action, (_, state, _) in ACTIONS.items()}
    before = {action: snapshot(job) for action, job in jobs.items()}

    for action, job in jobs.items():
        post_action(client, action, job)
    response = client.post(reverse(PAUSE_URL), {"queue": "emails", "operation": "pause"})

    assert response.status_code == 302 and "/login/" in response["Location"]
    assert {action: snapshot(job) for action, job in jobs.items()} == before
    assert not QueuePause.objects.exists() and not LogEntry.objects.exists()


def test_the_job_page_accepts_no_edit_even_from_a_superuser(admin_client):
    job = make_job(JobStatus.FAILED, task_path="tests.support.tasks.echo")
    response = admin_client.post(
        job_url(job), {"task_path": "os.system", "status": "ready", "args": '["id"]'}
    )
    assert response.status_code in (403, 200)
    row = Job.objects.get(pk=job.pk)
    assert (row.task_path, row.status, row.args) == ("tests.support.tasks.echo", "failed", [])
    assert admin_client.get(reverse("admin:django_skipqueue_job_add")).status_code == 403
