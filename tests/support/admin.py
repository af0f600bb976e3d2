"""Helpers shared by the admin tests: jobs in any state, users with chosen permissions."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth.models import Permission, User
from django.urls import reverse
from django.utils import timezone

from django_skipqueue.db.clock import read_db_now
from django_skipqueue.models import Job, JobStatus, QueueMinute, WorkerProcess

CHANGELIST = "admin:django_skipqueue_job_changelist"
TRACEBACK = 'Traceback (most recent call last):\n  File "tasks.py", line 3\nValueError: boom\n'


def make_job(status: str = JobStatus.READY, **fields: Any) -> Job:
    """Insert one job in ``status`` with plausible columns for that state."""
    now = timezone.now()
    values: dict[str, Any] = {
        "task_path": "tests.support.tasks.echo",
        "queue_name": "default",
        "status": status,
        "enqueued_at": now,
        "max_attempts": 3,
    }
    if status == JobStatus.CLAIMED:
        values.update(owner="worker-1", lease_until=now + timedelta(minutes=1), attempts=1)
        values.update(started_at=now, last_attempted_at=now)
    if status == JobStatus.SCHEDULED:
        values.update(run_after=now + timedelta(hours=1))
    if status in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED):
        values.update(attempts=1, started_at=now, last_attempted_at=now, finished_at=now)
        values.update(worker_ids=["worker-1"])
    if status == JobStatus.FAILED:
        values.update(
            attempts=3,
            errors=[{"exception_class_path": "builtins.ValueError", "traceback": TRACEBACK}] * 3,
        )
    values.update(fields)
    return Job.objects.create(**values)


def staff_user(username: str, *codenames: str) -> User:
    """Create a staff user holding only the given django_skipqueue permissions."""
    user = User.objects.create_user(username, password="pw", is_staff=True)
    for codename in codenames:
        user.user_permissions.add(
            Permission.objects.get(codename=codename, content_type__app_label="django_skipqueue")
        )
    return user


def changelist_url(query: str = "") -> str:
    return reverse(CHANGELIST) + (f"?{query}" if query else "")


def dashboard_url(query: str = "refresh=0") -> str:
    return reverse("admin:django_skipqueue_job_dashboard") + (f"?{query}" if query else "")


def job_url(job: Job) -> str:
    return reverse("admin:django_skipqueue_job_change", args=[job.pk])


def run_action(client: Any, action: str, jobs: list[Job], query: str = "", **extra: str) -> Any:
    """Post a changelist action for ``jobs`` and follow the redirect."""
    data = {"action": action, "_selected_action": [str(job.pk) for job in jobs], **extra}
    return client.post(changelist_url(query), data, follow=True)


def messages_of(response: Any) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def add_worker(owner: str, queues: list[str], heartbeat_ago: float = 0, **extra: Any) -> None:
    """Insert a running worker process whose last heartbeat is ``heartbeat_ago`` seconds old."""
    now = read_db_now("default")
    values: dict[str, Any] = {"role": "worker", "hostname": "host-1", "pid": 4242, **extra}
    WorkerProcess.objects.create(
        owner=owner,
        queues=queues,
        started_at=now - timedelta(hours=1),
        last_heartbeat_at=now - timedelta(seconds=heartbeat_ago),
        **values,
    )


def add_minutes(queue_name: str, per_minute: list[tuple[int, int]], owner: str = "w-1") -> None:
    """Insert (succeeded, failed) counters for the last minutes, the newest last."""
    current = read_db_now("default").replace(second=0, microsecond=0)
    for ago, (succeeded, failed) in enumerate(reversed(per_minute)):
        QueueMinute.objects.create(
            minute=current - timedelta(minutes=ago),
            queue_name=queue_name,
            owner=owner,
            succeeded=succeeded,
            failed=failed,
            claimed=succeeded + failed,
            reclaimed=1 if ago == 0 else 0,
            claim_queries=10,
            claim_latency_histogram=[0, 5, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        )
