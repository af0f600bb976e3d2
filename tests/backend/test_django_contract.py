"""Django's documented Tasks contract, where the conformance run found ours departing from it."""

from __future__ import annotations

import asyncio
import logging
import threading
from datetime import datetime

import pytest
from asgiref.sync import sync_to_async
from django.db import connections, transaction

from django_skipqueue.backend import SkipQueueBackend
from django_skipqueue.compat import (
    TASKS_MODULE,
    InvalidTask,
    TaskResultStatus,
    task_enqueued,
    task_finished,
    task_started,
)
from django_skipqueue.exceptions import InvalidPayload
from django_skipqueue.models import Job
from django_skipqueue.worker import recording
from django_skipqueue.worker.loop import Worker
from django_skipqueue.worker.options import WorkerOptions
from django_skipqueue.worker.owner import owner_id
from tests.support.tasks import echo, explode
from tests.support.workers import Runworkers

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_non_json_argument_raises_a_type_error_that_is_an_invalid_task(backend):
    """topics/tasks, "Enqueueing Tasks": a non-JSON argument raises TypeError."""
    for enqueue in (
        lambda: echo.enqueue(datetime.now()),
        lambda: backend.enqueue_many([(echo, [], {"when": datetime.now()})]),
    ):
        with pytest.raises(TypeError, match="Unsupported type") as raised:
            enqueue()
        assert isinstance(raised.value, InvalidTask | InvalidPayload)
    assert not Job.objects.exists()


def test_aenqueue_of_a_non_json_argument_raises_a_type_error():
    async def scenario():
        try:
            await echo.aenqueue({"at": datetime.now()})
        finally:
            await sync_to_async(connections.close_all)()

    with pytest.raises(TypeError, match="Unsupported type"):
        asyncio.run(scenario())


@pytest.fixture
def any_queue(settings, child_env):
    """QUEUES = [] here and in the worker processes this test starts."""
    settings.TASKS = {"default": {**settings.TASKS["default"], "QUEUES": []}}
    return {**child_env, "DJANGO_SETTINGS_MODULE": "tests.support.settings_any_queue"}


def test_with_queues_empty_runworkers_serves_every_queue(any_queue, manage_py, tmp_path):
    """Django: a queue name "must match a queue defined in QUEUES, unless QUEUES is set to []"."""
    results = [echo.using(queue_name=name).enqueue(name) for name in ("zeta", "alpha", "default")]
    workers = Runworkers(manage_py, any_queue, tmp_path / "all.log", "--burst", "--threads", "1")
    try:
        assert workers.wait(timeout=60) == 0, workers.log()[-3000:]
    finally:
        workers.stop()
    assert all(job.status == "succeeded" for job in Job.objects.all()), workers.log()[-3000:]
    assert len(results) == Job.objects.count() == 3
    assert "queues=*" in workers.log() and "died" not in workers.log()


def test_with_queues_empty_runworkers_serves_the_queues_named(any_queue, manage_py, tmp_path):
    mine, other = echo.using(queue_name="mine").enqueue(), echo.using(queue_name="other").enqueue()
    workers = Runworkers(manage_py, any_queue, tmp_path / "m.log", "--burst", "--queues", "mine")
    try:
        assert workers.wait(timeout=60) == 0, workers.log()[-3000:]
    finally:
        workers.stop()
    statuses = dict(Job.objects.values_list("pk", "status"))
    assert (statuses[int(mine.id)], statuses[int(other.id)]) == ("succeeded", "ready")

    refused = Runworkers(manage_py, any_queue, tmp_path / "bad.log", "--queues", "no good")
    try:
        assert refused.wait(timeout=60) != 0
    finally:
        refused.stop()
    assert "Unknown queue(s) no good" in refused.log()


class ProjectBackend(SkipQueueBackend):
    """A project's own subclass, as TASKS may name one."""


def run_burst_worker() -> None:
    options = WorkerOptions(queues=("default",), threads=1, burst=True, wakeup=False, grace=5)
    Worker(options, owner=owner_id()).run()


def test_signals_are_sent_by_the_configured_backend_class(settings, close_thread_connections):
    """ref/signals: "sender: The backend class which the Task was enqueued on to"."""
    settings.TASKS = {
        "default": {**settings.TASKS["default"], "BACKEND": f"{__name__}.ProjectBackend"}
    }
    senders: list[tuple[str, type]] = []
    receivers = {
        name: (lambda sender, name=name, **kwargs: senders.append((name, sender)))
        for name in ("enqueued", "started", "finished")
    }
    signals = {"enqueued": task_enqueued, "started": task_started, "finished": task_finished}
    for name, signal in signals.items():
        signal.connect(receivers[name])
    try:
        echo.enqueue()
        run_burst_worker()
    finally:
        for name, signal in signals.items():
            signal.disconnect(receivers[name])
    assert senders == [
        ("enqueued", ProjectBackend),
        ("started", ProjectBackend),
        ("finished", ProjectBackend),
    ]


def test_a_failed_tasks_log_line_carries_its_exception(caplog, close_thread_connections):
    """Django's receiver logs sys.exc_info(): "Signal is sent inside exception handlers"."""
    result, fine = explode.enqueue("the cause of it all"), echo.enqueue()
    with caplog.at_level(logging.INFO, logger=TASKS_MODULE):
        run_burst_worker()
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    [failed] = [
        r for r in caplog.records if r.name == TASKS_MODULE and "state=FAILED" in r.getMessage()
    ]
    assert failed.levelno == logging.ERROR and failed.exc_info is not None
    assert failed.exc_info[0] is ValueError and str(failed.exc_info[1]) == "the cause of it all"
    assert "ValueError: the cause of it all" in caplog.text
    [succeeded] = [
        r
        for r in caplog.records
        if f"id={fine.id} " in r.getMessage() and "state=SUCCESSFUL" in r.getMessage()
    ]
    assert succeeded.exc_info is None


@pytest.mark.skip_locked
def test_a_burst_worker_does_not_stop_while_a_job_it_serves_is_ready(close_thread_connections):
    """A claim that finds nothing while a job is ready (its row locked by another claim, or
    promoted just after the claim) must not end a burst: the job would be left behind."""
    result = echo.enqueue("left behind?")
    locked, release = threading.Event(), threading.Event()

    def hold_the_row() -> None:
        try:
            with transaction.atomic():
                Job.objects.select_for_update().get(pk=result.id)
                locked.set()
                release.wait(30)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold_the_row)
    holder.start()
    locked.wait(10)
    threading.Timer(1.0, release.set).start()
    try:
        run_burst_worker()
    finally:
        release.set()
        holder.join()
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL


def test_an_interrupted_last_attempt_counts_and_gets_one_more():
    result = explode.enqueue("stopped mid-way")  # max_attempts=1
    [claimed] = Job.objects.claim(["default"], limit=1, owner="w1")
    assert recording.interrupt([claimed], "default", "immediate stop, SIGTERM") == 1
    row = Job.objects.get(pk=result.id)
    assert (row.status, row.attempts, row.max_attempts, row.owner) == ("ready", 1, 2, None)
    assert row.started_at == claimed.started_at and row.worker_ids == ["w1"]
    assert row.errors[-1]["exception_class_path"].endswith("WorkerStopped")
    assert "w1 stopped (immediate stop, SIGTERM) during attempt 1" in row.errors[-1]["traceback"]
    assert recording.interrupt([claimed], "default", "again") == 0  # fenced: it is not held


def test_a_worker_of_every_queue_hears_wake_ups_for_any_queue():
    from django_skipqueue import wakeup
    from django_skipqueue.db.clock import read_db_now
    from django_skipqueue.models import WorkerProcess
    from django_skipqueue.monitoring.metrics import Metrics
    from django_skipqueue.worker.claimer import Claimer

    wakeup.forget_addresses()
    waker, now = wakeup.Waker("127.0.0.1"), read_db_now("default")
    try:
        WorkerProcess.objects.create(
            owner="host:1:any", role="worker", hostname="host", pid=1, queues=[],
            wakeup_address=waker.address, started_at=now, last_heartbeat_at=now,
        )  # fmt: skip
        assert wakeup.notify("default", frozenset({"zeta"})) == 1
        heard = waker.wait(1.0, listen=True)
    finally:
        waker.close()
        wakeup.forget_addresses()
    assert heard == {"zeta"}
    claimer = Claimer(WorkerOptions(queues=()), "host:1:any", Metrics())
    claimer.wake(heard)
    assert claimer.woken_for == {"zeta"}


def test_with_queues_empty_any_valid_queue_can_be_paused(any_queue):
    from django_skipqueue import queues
    from django_skipqueue.exceptions import InvalidQueueName

    assert queues.pause("zeta", reason="maintenance")
    assert "zeta" in queues.paused_queues()
    with pytest.raises(InvalidQueueName):
        queues.pause("no good")
