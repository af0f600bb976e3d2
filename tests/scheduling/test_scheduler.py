"""The scheduler on the real database: missed-tick policies, row locks, settings, bad rows."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connections, transaction
from django.test import override_settings

from django_skipqueue.db.clock import read_db_now
from django_skipqueue.models import Job
from django_skipqueue.scheduling.models import Missed, Schedule, Source, Tick
from django_skipqueue.scheduling.scheduler import Scheduler

pytestmark = pytest.mark.django_db(transaction=True)
ECHO = "tests.support.tasks.echo"


def schedule(**fields: object) -> Schedule:
    values = {"name": "every-minute", "task_path": ECHO, "interval_seconds": 60, **fields}
    return Schedule.objects.create(**values)


def behind(row: Schedule, ticks: int) -> None:
    """Put the schedule ``ticks`` ticks in the past, as after a downtime."""
    now = read_db_now("default")
    step = timedelta(seconds=row.interval_seconds or 60)
    until_next = step - (now - now.replace(second=0, microsecond=0)) % step
    if until_next < timedelta(seconds=10):  # a tick falling due before the test's turn
        time.sleep(until_next.total_seconds() + 0.5)
        now = read_db_now("default")
    latest = now - (now - now.replace(second=0, microsecond=0)) % step
    Schedule.objects.filter(pk=row.pk).update(next_tick_at=latest - step * (ticks - 1))


def test_a_new_schedule_gets_its_next_tick_and_nothing_runs_early():
    row = schedule()
    assert Scheduler("default").run_due() == 0
    row.refresh_from_db()
    now = read_db_now("default")
    assert now < row.next_tick_at <= now + timedelta(seconds=60)
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    ("missed", "catch_up", "expected"),
    [(Missed.LATEST, 10, 1), (Missed.CATCH_UP, 3, 3), (Missed.CATCH_UP, 10, 6)],
)
def test_missed_ticks_after_a_downtime_follow_the_policy(missed: str, catch_up: int, expected):
    row = schedule(missed=missed, catch_up=catch_up, args=[1], kwargs={"k": "v"})
    behind(row, 6)
    first_due = Schedule.objects.get(pk=row.pk).next_tick_at
    assert Scheduler("default").run_due() == expected
    ticks = list(Tick.objects.order_by("tick_at"))
    assert len(ticks) == expected
    assert ticks[-1].tick_at == first_due + timedelta(minutes=5)  # the latest always runs
    jobs = Job.objects.filter(pk__in=[tick.job_id for tick in ticks])
    calls = [(job.task_path, job.args, job.kwargs) for job in jobs]
    assert calls == [(ECHO, [1], {"k": "v"})] * expected
    row.refresh_from_db()
    assert row.missed_ticks == 6 - expected
    assert row.last_tick_at == ticks[-1].tick_at and row.last_job_id == ticks[-1].job_id
    assert row.next_tick_at > read_db_now("default")
    assert Scheduler("default").run_due() == 0, "a second turn enqueued a tick again"


@pytest.mark.parametrize(("grace", "expected"), [(7200, 1), (0.001, 0)])
def test_skip_drops_every_tick_later_than_the_grace(grace: float, expected: int):
    row = schedule(interval_seconds=3600, missed=Missed.SKIP)
    behind(row, 3)
    with override_settings(SKIPQUEUE_SCHEDULER_GRACE=grace):
        assert Scheduler("default").run_due() == expected
    row.refresh_from_db()
    assert row.missed_ticks == 3 - expected
    assert Job.objects.count() == expected


@pytest.mark.skip_locked
def test_a_schedule_locked_by_another_scheduler_is_skipped_not_waited_for():
    row = schedule()
    behind(row, 1)
    locked, release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        with transaction.atomic():
            Schedule.objects.select_for_update().get(pk=row.pk)
            locked.set()
            release.wait(30)
        connections.close_all()

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        assert locked.wait(10)
        assert Scheduler("default").run_due() == 0
        assert not Tick.objects.exists()
    finally:
        release.set()
        holder.join()
    assert Scheduler("default").run_due() == 1


def test_a_tick_already_recorded_is_never_enqueued_again():
    """An edit that moves the next tick back over recorded ticks fires only the new ones."""
    row = schedule(missed=Missed.CATCH_UP)
    behind(row, 3)
    Scheduler("default").run_due()
    assert Tick.objects.count() == 3
    behind(row, 5)  # two older ticks, and the three already recorded
    assert Scheduler("default").run_due() == 2
    assert Job.objects.count() == Tick.objects.count() == 5


def test_a_schedule_whose_task_is_gone_records_the_error_and_does_not_block_others():
    broken = schedule(name="broken", task_path="tests.support.tasks.removed")
    fine = schedule(name="fine")
    behind(broken, 1)
    behind(fine, 1)
    assert Scheduler("default").run_due() == 1
    broken.refresh_from_db()
    assert "TaskNotFound" in broken.last_error or "removed" in broken.last_error
    assert broken.next_tick_at > read_db_now("default")
    assert list(Tick.objects.values_list("schedule__name", flat=True)) == ["fine"]


def test_settings_schedules_are_created_updated_and_disabled():
    declared = {"nightly": {"task": ECHO, "cron": "0 3 * * *", "time_zone": "Europe/Paris"}}
    with override_settings(SKIPQUEUE_SCHEDULES=declared):
        Scheduler("default").run_due()
    row = Schedule.objects.get(name="nightly")
    assert (row.source, row.cron, row.time_zone) == (Source.SETTINGS, "0 3 * * *", "Europe/Paris")
    assert row.next_tick_at.astimezone().hour in (1, 2)  # 03:00 Paris in UTC
    declared["nightly"].update(cron="0 4 * * *", args=[7])
    with override_settings(SKIPQUEUE_SCHEDULES=declared):
        Scheduler("default").run_due()
    row.refresh_from_db()
    assert (row.cron, row.args) == ("0 4 * * *", [7])
    assert row.next_tick_at.astimezone().hour in (2, 3)
    with override_settings(SKIPQUEUE_SCHEDULES={}):
        Scheduler("default").run_due()
    row.refresh_from_db()
    assert not row.enabled and "no longer" in row.last_error


def test_ticks_older_than_the_retention_are_pruned_and_recent_ones_kept():
    from django_skipqueue.scheduling.prune import prune_ticks

    row = schedule(missed=Missed.CATCH_UP, catch_up=10)
    behind(row, 10)
    Scheduler("default").run_due()
    latest = Tick.objects.order_by("tick_at").last().tick_at
    # The cutoff falls half-way between the fifth and the sixth newest tick.
    retention = read_db_now("default") - (latest - timedelta(minutes=4.5))
    with override_settings(SKIPQUEUE_SCHEDULER_TICK_RETENTION=retention.total_seconds()):
        assert prune_ticks("default") == 5
        assert prune_ticks("default") == 0
    assert Tick.objects.order_by("tick_at").first().tick_at == latest - timedelta(minutes=4)
    assert Tick.objects.count() == 5
