"""Lock-wait timeouts (1205) and deadlocks (1213) injected into the queue's own transactions.

A lock-wait timeout rolls back only the statement, a deadlock the whole transaction: either
way the queue must roll back and re-run the whole transaction, so that nothing is committed
half (a batch of completions, a reaper batch and its counters). Then a mixed load (enqueue,
claim, complete, retry, promote, reap, purge with archive) on a private server reports how
many deadlocks the server saw, and checks that nothing was lost.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import MySQLdb
import pytest
from django.db import connection, connections
from django.db.models import Sum

from django_skipqueue.db import transactions as dbretry
from django_skipqueue.db.clock import DatabaseNowPlus, read_db_now
from django_skipqueue.maintenance import reap as reaper
from django_skipqueue.models import Job, QueueMinute
from django_skipqueue.worker import recording as outcomes
from django_skipqueue.worker.executor import Outcome, Running
from tests.reliability.audit import audit, job_rows
from tests.reliability.control import Control
from tests.reliability.procs import Supervisor, wait_for
from tests.support.tasks import noop

pytestmark = pytest.mark.mysql


@pytest.fixture
def retryable_seen(monkeypatch) -> list[int]:
    """The MySQL error codes that dbretry decided to retry, in order (a spy, not a mock)."""
    seen: list[int] = []
    original = dbretry.is_retryable

    def spy(error: BaseException) -> bool:
        answer = original(error)
        if answer:
            seen.append((error.__cause__ or error).args[0])
        return answer

    monkeypatch.setattr(dbretry, "is_retryable", spy)
    return seen


@pytest.fixture
def control():
    ctl = Control()
    yield ctl
    ctl.execute("ROLLBACK")
    ctl.close()


def statuses(*pks: int) -> list[str]:
    conn = Control()
    try:
        rows = dict(conn.execute(f"SELECT id, status FROM skipqueue_job WHERE id IN {tuple(pks)}"))
        return [rows[pk] for pk in pks]
    finally:
        conn.close()


@pytest.mark.django_db(transaction=True)
def test_a_lock_wait_timeout_in_a_completion_batch_retries_the_whole_batch(
    control, retryable_seen, close_thread_connections, figures
):
    for _ in range(3):
        noop.enqueue()
    first, second, third = Job.objects.claim(["default"], limit=3, owner="w")
    error = {"exception_class_path": "builtins.ValueError", "traceback": "boom"}
    batch = [
        Outcome(Running(first), "succeeded", 1),
        Outcome(Running(second), "succeeded", 2),
        Outcome(Running(third), "retry", error=error, retry_in=0.0),
    ]
    # Another transaction holds the third row: its transition must wait, the successes not.
    control.execute("START TRANSACTION")
    control.execute("SELECT id FROM skipqueue_job WHERE id = %s FOR UPDATE", [third.pk])
    seen_half: list[list[str]] = []
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.1):
            seen_half.append(statuses(first.pk, second.pk))

    watcher = threading.Thread(target=watch)
    with connection.cursor() as cursor:
        cursor.execute("SET SESSION innodb_lock_wait_timeout = 1")
    watcher.start()
    release = threading.Timer(2.5, lambda: control.execute("ROLLBACK"))
    release.start()
    began = time.monotonic()
    try:
        outcomes.record(batch, "default")
    finally:
        done.set()
        watcher.join()
        release.join()
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION innodb_lock_wait_timeout = DEFAULT")
    figures.update(lock_wait_retries=retryable_seen.count(1205),
                   waited_s=round(time.monotonic() - began, 1))  # fmt: skip
    assert retryable_seen.count(1205) >= 2, "the batch met the held lock and was retried"
    # A read may land between the batch's commit and the watcher's stop, and see it whole:
    # what must never be seen is one success committed without the other.
    assert all(len(set(seen)) == 1 for seen in seen_half), "nothing committed half"
    assert ["claimed", "claimed"] in seen_half, "the successes waited with the held row"
    assert [outcome.lost for outcome in batch] == [False, False, False]
    assert statuses(first.pk, second.pk, third.pk) == ["succeeded", "succeeded", "ready"]
    assert len(Job.objects.get(pk=third.pk).errors) == 1


@pytest.mark.django_db(transaction=True)
def test_a_deadlock_in_a_reap_batch_is_retried_whole_and_counted_once(
    control, retryable_seen, close_thread_connections, figures
):
    for _ in range(5):
        noop.enqueue()
    jobs = Job.objects.claim(["default"], limit=5, owner="dead-worker")
    Job.objects.update(lease_until=DatabaseNowPlus(-5))
    minute = read_db_now("default").replace(second=0, microsecond=0)
    for at in (minute, minute + timedelta(minutes=1)):
        QueueMinute.objects.create(minute=at, queue_name="default", owner="reaper:r")
    # The control transaction is the heavier one (many rows changed), so InnoDB picks the
    # reaper as the deadlock victim. It holds the reaper's counter rows first ...
    control.execute("START TRANSACTION")
    control.execute("INSERT INTO demo_ledgerentry (job_id, attempt, worker, label, created_at) "
                    "SELECT seq, 0, 'weight', '', NOW() FROM seq_1_to_300")  # fmt: skip
    control.execute("SELECT id FROM skipqueue_queue_minute WHERE owner = 'reaper:r' FOR UPDATE")
    results: list[reaper.ReapResult] = []

    def reap() -> None:
        try:
            results.append(reaper.reap("default", batch=10, runner="r"))
        finally:
            connections.close_all()

    reaping = threading.Thread(target=reap)
    reaping.start()
    # ... the reaper has locked and changed the jobs and waits for its counters ...
    wait_for(lambda: control.sessions("UPDATE `skipqueue_queue_minute`%"), 30)
    # ... and now the control transaction wants one of those jobs: a deadlock.
    control.execute("SELECT id FROM skipqueue_job WHERE id = %s FOR UPDATE", [jobs[0].pk])
    control.execute("ROLLBACK")
    reaping.join(60)

    [result] = results
    counted = QueueMinute.objects.filter(owner="reaper:r").aggregate(n=Sum("reclaimed"))["n"]
    errors = [len(job.errors) for job in Job.objects.all()]
    figures.update(deadlock_retries=retryable_seen.count(1213), reclaimed=result.reclaimed,
                   counted=counted)  # fmt: skip
    assert retryable_seen.count(1213) == 1, "the reaper was the victim and ran again"
    assert (result.reclaimed, counted) == (5, 5), "each job reclaimed and counted once"
    assert errors == [1] * 5, "one LeaseExpired per job, not one per try"


FLAKY = "tests.reliability.tasks.flaky"


@pytest.mark.slow
def test_mixed_load_reports_its_deadlocks_and_loses_nothing(private_db, tmp_path, figures):
    """Two supervisors (claims, completions, retries, promotion, reaping, purging with archive)
    against two producers, for 20 seconds, on a server of its own."""
    env = private_db.env(
        REAP_INTERVAL=0.5, PROMOTE_INTERVAL=0.5, PURGE_INTERVAL=1.0, PURGE_ARCHIVE=True,
        PURGE_CHUNK=500, PURGE_SLEEP=0.0,
        PURGE_RETENTION={"succeeded": 1, "failed": 1, "cancelled": 1},
    )  # fmt: skip
    server = private_db.server
    before = {name: server.status(name) for name in ("Innodb_deadlocks", "Innodb_row_lock_waits")}
    acked = tmp_path / "acked"
    producers = [
        _producer(env, tmp_path, acked, "tests.reliability.tasks.record", rate=250, at_least=2500),
        _producer(env, tmp_path, acked, FLAKY, rate=50, at_least=500),
    ]
    args = ("--processes", "2", "--threads", "4", "--queues", "default")
    supervisors = [Supervisor(env, tmp_path / f"runworkers-{n}.log", *args) for n in range(2)]
    try:
        for producer in producers:
            assert producer.wait(240) == 0
        wait_for(lambda: _unfinished(private_db) == 0, 120)
        time.sleep(2.5)  # one more purge of what just finished
    finally:
        for supervisor in supervisors:
            supervisor.stop(signum=15)
    after = {name: server.status(name) for name in before}

    ids = [int(line) for line in acked.read_text().split()]
    rows = private_db.query(
        "SELECT id, status, attempts, worker_ids, errors FROM skipqueue_job UNION ALL "
        "SELECT id, status, attempts, worker_ids, errors FROM skipqueue_job_archive"
    )
    archived = private_db.query("SELECT COUNT(*) FROM skipqueue_job_archive")[0][0]
    report = audit(job_rows(rows), private_db.ledger(), expected_ids=ids)
    figures.update(
        acked=len(ids), archived=archived,
        deadlocks=after["Innodb_deadlocks"] - before["Innodb_deadlocks"],
        row_lock_waits=after["Innodb_row_lock_waits"] - before["Innodb_row_lock_waits"],
        **report.as_dict(),
    )  # fmt: skip
    assert len(ids) >= 3000 and archived > 0
    assert report.problems == [] and report.lost == 0
    assert report.succeeded == len(rows) == len(set(ids))
    assert all(s.process.returncode == 0 for s in supervisors)


def _producer(env, tmp_path, acked, task: str, rate: float, at_least: int):
    import subprocess
    import sys

    with (tmp_path / f"producer-{task.rpartition('.')[2]}.log").open("w") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.producer", "stream", "--task", task,
             "--rate", str(rate), "--seconds", "20", "--at-least", str(at_least),
             "--acked", str(acked)],
            env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip


def _unfinished(db) -> int:
    try:
        rows = db.query(
            "SELECT COUNT(*) FROM skipqueue_job WHERE status IN ('ready', 'scheduled', 'claimed')"
        )
    except MySQLdb.OperationalError:
        return -1
    return int(rows[0][0])
