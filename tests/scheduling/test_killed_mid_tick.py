"""A scheduler killed between its tick's job and its tick row leaves nothing; the tick runs once.

Another connection holds an uncommitted row for the same tick, so the scheduler's INSERT of
its tick row waits on that key after it has inserted the tick's job. The scheduler process is
killed (SIGKILL) right there, the holder rolls back, and the next scheduler fires the tick.
"""

from __future__ import annotations

import signal
import subprocess
import threading

import pytest
from django.db import connection, connections, transaction

from django_skipqueue.db.clock import DatabaseNow
from django_skipqueue.models import Job
from django_skipqueue.scheduling.models import Schedule, Tick
from tests.scheduling.test_scheduler import behind, schedule
from tests.support.workers import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql]


def waiting_tick_inserts() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM information_schema.processlist WHERE db = DATABASE()"
            " AND info LIKE 'INSERT INTO `skipqueue_schedule_tick`%%'"
        )
        return int(cursor.fetchone()[0])


def uncommitted_jobs() -> int:
    """Jobs in the table, committed or not (a dirty read)."""
    with connection.cursor() as cursor:
        cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED")
        try:
            cursor.execute("SELECT count(*) FROM skipqueue_job")
            return int(cursor.fetchone()[0])
        finally:
            cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")


def test_a_scheduler_killed_mid_tick_enqueues_nothing_and_the_next_fires_it_once(
    child_env, manage_py
):
    row = schedule()
    behind(row, 1)
    due = Schedule.objects.get(pk=row.pk).next_tick_at
    held, release = threading.Event(), threading.Event()

    def hold_the_tick_key() -> None:
        with connection.cursor() as cursor:
            # Without the foreign key check, which would share-lock the schedule's row and so
            # make the scheduler skip the schedule instead of reaching its tick row.
            cursor.execute("SET SESSION foreign_key_checks = 0")
        with transaction.atomic():
            Tick.objects.create(schedule_id=row.pk, tick_at=due, enqueued_at=DatabaseNow())
            held.set()
            release.wait(60)
            transaction.set_rollback(True)
        connections.close_all()

    holder = threading.Thread(target=hold_the_tick_key)
    holder.start()
    try:
        assert held.wait(10)
        scheduler = subprocess.Popen([*manage_py, "skipqueue_scheduler", "--once"], env=child_env)
        wait_for(waiting_tick_inserts, 60, what="the scheduler waiting on its tick row")
        assert uncommitted_jobs() == 1, "the tick's job is inserted before its tick row"
        scheduler.send_signal(signal.SIGKILL)
        scheduler.wait(10)
    finally:
        release.set()
        holder.join()
    wait_for(lambda: waiting_tick_inserts() == 0, 30, what="the killed session gone")
    assert not Job.objects.exists(), "the killed scheduler's job committed"
    assert not Tick.objects.exists()
    done = subprocess.run([*manage_py, "skipqueue_scheduler", "--once"], env=child_env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.stdout.strip() == "ticks=1", done.stdout + done.stderr
    tick = Tick.objects.get()
    assert (tick.tick_at, tick.job_id) == (due, Job.objects.get().pk)
