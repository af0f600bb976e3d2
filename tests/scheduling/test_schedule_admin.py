"""Schedules in the admin: validation, run now under its permission, an edit while running."""

from __future__ import annotations

import itertools
import signal
import time
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from django_skipqueue.models import Job
from django_skipqueue.scheduling.models import Missed, Schedule, Source, Tick, TickKind
from tests.reliability.procs import Supervisor, child_env
from tests.support.workers import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.vendor_neutral]
ECHO = "tests.support.tasks.echo"
ADD = "admin:skipqueue_scheduling_schedule_add"
CHANGELIST = "admin:skipqueue_scheduling_schedule_changelist"


def form(**values: object) -> dict[str, object]:
    data = {
        **{"name": "often", "task_path": ECHO, "cron": "", "interval_seconds": "1"},
        **{"time_zone": "UTC", "args": "[]", "kwargs": "{}", "queue_name": "", "priority": ""},
        **{"missed": Missed.CATCH_UP, "catch_up": "100", "enabled": "on"},
    }
    data.update(values)
    return {key: value for key, value in data.items() if value is not None}


def user(*codenames: str) -> Client:
    person = User.objects.create_user("staff", password="x", is_staff=True)
    for codename in codenames:
        person.user_permissions.add(
            Permission.objects.get(
                codename=codename, content_type__app_label="skipqueue_scheduling"
            )
        )
    client = Client()
    client.force_login(person)
    return client


@pytest.mark.parametrize(
    ("values", "field", "words"),
    [
        ({"cron": "0 3 * * 8", "interval_seconds": ""}, "cron", "bad cron expression"),
        ({"time_zone": "Europe/Pariss"}, "time_zone", "unknown time zone"),
        ({"task_path": "tests.support.tasks.missing"}, "task_path", "missing"),
        ({"cron": "0 3 * * *"}, None, "not both"),
        ({"cron": "", "interval_seconds": ""}, None, "give a cron expression or an interval"),
    ],
)
def test_the_form_refuses_what_no_scheduler_could_run(admin_client, values, field, words):
    response = admin_client.post(reverse(ADD), form(**values))
    assert response.status_code == 200, "saved"
    errors = response.context["adminform"].form.errors
    assert words in str(errors.get(field or "__all__")), errors
    assert not Schedule.objects.exists()


def test_run_now_needs_its_permission_and_records_a_manual_tick():
    schedule = Schedule.objects.create(name="nightly", task_path=ECHO, cron="0 3 * * *",
                                       args=[5])  # fmt: skip
    action = {"action": "run_now", "_selected_action": [schedule.pk]}
    viewer = user("view_schedule", "change_schedule")
    viewer.post(reverse(CHANGELIST), action)
    assert not Job.objects.exists(), "run without the run_schedule permission"
    User.objects.all().delete()
    runner = user("view_schedule", "run_schedule")
    runner.post(reverse(CHANGELIST), action)
    job = Job.objects.get()
    assert (job.task_path, job.args) == (ECHO, [5])
    tick = Tick.objects.get()
    assert (tick.kind, tick.job_id, tick.scheduler) == (TickKind.MANUAL, job.pk, "admin")
    assert Schedule.objects.get().last_job_id == job.pk


def test_settings_schedules_are_read_only(admin_client):
    schedule = Schedule.objects.create(name="declared", task_path=ECHO, cron="0 3 * * *",
                                       source=Source.SETTINGS)  # fmt: skip
    url = reverse("admin:skipqueue_scheduling_schedule_change", args=[schedule.pk])
    admin_client.post(url, form(name="declared", cron="0 4 * * *", interval_seconds=""))
    assert Schedule.objects.get().cron == "0 3 * * *"


@pytest.mark.skip_locked
def test_an_interval_edited_in_the_admin_while_a_supervisor_runs(admin_client, test_database_url,
                                                                 tmp_path):  # fmt: skip
    """Every second, then every 2 s from the edit on: no tick twice, none skipped, a job each."""
    admin_client.post(reverse(ADD), form())
    schedule = Schedule.objects.get()
    worker = Supervisor(child_env(test_database_url), tmp_path / "runworkers.log",
                        "--processes", "1", "--queues", "default")  # fmt: skip
    try:
        wait_for(lambda: Tick.objects.count() >= 6, 60, what="six ticks")
        url = reverse("admin:skipqueue_scheduling_schedule_change", args=[schedule.pk])
        response = admin_client.post(url, form(interval_seconds="2"))
        assert response.status_code == 302, response.content[-2000:]
        edited = Tick.objects.count()
        wait_for(lambda: Tick.objects.count() >= edited + 5, 60, what="ticks after the edit")
        time.sleep(1)
    finally:
        worker.stop(signal.SIGTERM, timeout=30)
    times = list(Tick.objects.order_by("tick_at").values_list("tick_at", flat=True))
    steps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
    assert set(steps) <= {1.0, 2.0}, steps
    assert steps.index(2.0) >= 5 and set(steps[steps.index(2.0) :]) == {2.0}, steps
    assert all(t.second % 2 == 0 for t in times[-5:])
    assert times[-1] - times[0] >= timedelta(seconds=12)
    jobs = Job.objects.filter(task_path=ECHO).values_list("pk", flat=True)
    assert sorted(jobs) == sorted(Tick.objects.values_list("job_id", flat=True))


def test_the_list_shows_next_and_last_tick_in_the_zone_and_the_last_jobs_outcome(admin_client):
    from datetime import UTC, datetime

    from tests.support.admin import make_job

    job = make_job("failed")
    schedule = Schedule.objects.create(
        name="nightly", task_path=ECHO, cron="30 2 * * *", time_zone="Europe/Paris",
        next_tick_at=datetime(2027, 3, 28, 1, tzinfo=UTC),  # the spring-forward night
        last_tick_at=datetime(2026, 10, 25, 0, 30, tzinfo=UTC), last_job_id=job.pk,
    )  # fmt: skip
    at = schedule.last_tick_at
    Tick.objects.create(schedule=schedule, tick_at=at, job_id=job.pk, enqueued_at=at,
                        scheduler="scheduler:h:1:t")  # fmt: skip
    page = admin_client.get(reverse(CHANGELIST)).content.decode()
    assert "2027-03-28 03:00:00 CEST" in page and "2026-10-25 02:30:00 CEST" in page
    assert f">#{job.pk}</a> failed" in page
    ticks = admin_client.get(reverse("admin:skipqueue_scheduling_tick_changelist"))
    assert ticks.status_code == 200 and "scheduler:h:1:t" in ticks.content.decode()
