"""A Worker run in this process (burst mode): results, retries, exactly-once, cancel, timeouts."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connections

from django_skipqueue import transitions
from django_skipqueue.compat import TaskResultStatus, task_backends, task_finished, task_started
from django_skipqueue.models import Job, QueueMinute, WorkerProcess
from django_skipqueue.worker import claimer as claiming
from django_skipqueue.worker import recording as outcomes
from django_skipqueue.worker.executor import Executor, Outcome, Running
from django_skipqueue.worker.loop import Worker
from django_skipqueue.worker.options import RECYCLE_EXIT_CODE, WorkerOptions
from django_skipqueue.worker.owner import owner_id
from testproject.demo.models import LedgerEntry
from tests.support import worker_tasks as wt
from tests.support.tasks import echo, explode, whoami

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def no_burst_horizon(monkeypatch):
    """Nothing promotes scheduled jobs here: a burst worker must not wait for them."""
    monkeypatch.setattr(claiming, "BURST_HORIZON", 0.0)


def run_worker(**overrides: object) -> Worker:
    """Run a burst worker in this thread until the queue is drained; return it."""
    options = {"queues": ("default",), "threads": 2, "burst": True, "wakeup": False, "grace": 5}
    worker = Worker(WorkerOptions(**{**options, **overrides}), owner=owner_id())  # type: ignore[arg-type]
    worker.run()
    return worker


def job(result) -> Job:
    return Job.objects.get(pk=result.id)


def test_burst_worker_runs_sync_async_and_context_tasks(close_thread_connections):
    sync, coro, ctx = echo.enqueue(1, k="v"), wt.async_add.enqueue(2, 3), whoami.enqueue()
    worker = run_worker()
    assert worker.exit_code == 0 and worker.stop_reason == "drained"
    for result in (sync, coro, ctx):
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL, result.errors
    assert sync.return_value == {"args": [1], "kwargs": {"k": "v"}}
    assert coro.return_value == 5
    assert ctx.return_value == {"id": ctx.id, "attempt": 1}
    assert ctx.worker_ids == [worker.owner]


def test_failures_are_retried_then_fail_with_every_attempts_error(close_thread_connections):
    flaky, doomed = wt.fail_first.enqueue(), wt.always_fail.enqueue()
    run_worker()
    flaky.refresh()
    doomed.refresh()
    assert flaky.status == TaskResultStatus.SUCCESSFUL and flaky.return_value == 2
    assert [e.exception_class_path for e in flaky.errors] == ["builtins.RuntimeError"]
    assert doomed.status == TaskResultStatus.FAILED
    assert [e.exception_class for e in doomed.errors] == [ValueError, ValueError]
    assert "always" in doomed.errors[-1].traceback
    assert job(doomed).attempts == 2 and len(doomed.worker_ids) == 2


def test_an_async_task_that_raises_is_retried_then_fails(close_thread_connections):
    result = wt.async_fail.enqueue()
    run_worker()
    row = job(result)
    assert (row.status, row.attempts) == ("failed", 2)
    assert [e["exception_class_path"] for e in row.errors] == ["builtins.LookupError"] * 2


def test_a_retry_with_backoff_is_scheduled_with_jitter(close_thread_connections):
    result = wt.fail_with_backoff.enqueue()
    run_worker()
    row = job(result)
    assert row.status == "scheduled" and row.attempts == 1 and row.owner is None
    wait = (row.run_after - row.last_attempted_at).total_seconds()
    assert 2.0 - 0.2 <= wait <= 4.0 + 0.2  # backoff 4 s, "equal jitter": 2 to 4 s


def test_unknown_task_and_unserialisable_return_value_fail_cleanly(close_thread_connections):
    bad_return = wt.not_json.enqueue()
    gone = explode.enqueue("x")
    Job.objects.filter(pk=gone.id).update(
        task_path="tests.support.tasks.no_such_task", max_attempts=1
    )
    run_worker()
    assert job(bad_return).status == "failed"
    assert job(bad_return).errors[0]["exception_class_path"].endswith("InvalidReturnValue")
    assert job(gone).status == "failed"
    assert job(gone).errors[0]["exception_class_path"].endswith("TaskNotFound")


def test_signals_are_sent_for_each_attempt(close_thread_connections):
    seen: list[tuple[str, str]] = []

    def started(sender, task_result, **kwargs):
        seen.append(("started", task_result.status))

    def finished(sender, task_result, **kwargs):
        seen.append(("finished", task_result.status))

    task_started.connect(started)
    task_finished.connect(finished)
    try:
        wt.fail_first.enqueue()
        run_worker(threads=1)
    finally:
        task_started.disconnect(started)
        task_finished.disconnect(finished)
    assert seen == [
        ("started", TaskResultStatus.RUNNING),
        ("finished", TaskResultStatus.READY),  # a retry follows
        ("started", TaskResultStatus.RUNNING),
        ("finished", TaskResultStatus.SUCCESSFUL),
    ]


def _fields(result) -> dict[str, object]:
    """What a TaskResult says about an attempt (its own copy: the result is updated later)."""
    errors = [error.exception_class_path for error in result.errors]
    return {"status": result.status, "errors": errors, "worker_ids": list(result.worker_ids),
            "finished": result.finished_at is not None}  # fmt: skip


def test_task_finished_carries_the_attempt_result_as_the_row_holds_it(close_thread_connections):
    """task_finished gets task_started's TaskResult, brought up to date, never a stale one."""
    started: list[object] = []
    finished: list[tuple[object, dict[str, object], object]] = []

    def on_started(sender, task_result, **kwargs):
        started.append(task_result)

    def on_finished(sender, task_result, **kwargs):
        finished.append((task_result, _fields(task_result), task_result._return_value))

    task_started.connect(on_started)
    task_finished.connect(on_finished)
    try:
        flaky = wt.fail_first.enqueue()
        worker = run_worker(threads=1)
    finally:
        task_started.disconnect(on_started)
        task_finished.disconnect(on_finished)
    owner, error = worker.owner, "builtins.RuntimeError"
    assert len(finished) == len(started) == 2
    assert all(result is begun for (result, _, _), begun in zip(finished, started, strict=True))
    assert [fields for _, fields, _ in finished] == [
        {"status": TaskResultStatus.READY, "errors": [error], "worker_ids": [owner],
         "finished": False},
        {"status": TaskResultStatus.SUCCESSFUL, "errors": [error], "worker_ids": [owner] * 2,
         "finished": True},
    ]  # fmt: skip
    assert [value for _, _, value in finished] == [None, 2]
    stored = task_backends["default"].get_result(flaky.id)
    assert _fields(stored) == finished[-1][1] and stored.return_value == 2


def test_workers_table_and_minute_rows_are_written(close_thread_connections):
    for _ in range(5):
        echo.enqueue()
    worker = run_worker()
    row = WorkerProcess.objects.get(owner=worker.owner)
    assert (row.role, row.claimed, row.succeeded, row.failed) == ("worker", 5, 5, 0)
    assert row.stopped_at is not None and row.claim_p50_ms is not None
    minutes = QueueMinute.objects.filter(owner=worker.owner, queue_name="default")
    assert sum(m.claimed for m in minutes) == 5
    assert sum(m.claim_queries for m in minutes) >= 2  # a full claim, then the empty one
    assert sum(sum(m.claim_latency_histogram) for m in minutes) == sum(
        m.claim_queries for m in minutes
    )


def test_max_jobs_recycles_the_process_and_leaves_the_rest(close_thread_connections):
    for _ in range(5):
        echo.enqueue()
    worker = run_worker(max_jobs=3, threads=1, burst=False)
    assert worker.exit_code == RECYCLE_EXIT_CODE
    assert Job.objects.filter(status="succeeded").count() == 3
    assert Job.objects.filter(status="ready").count() == 2


def test_max_memory_recycles_the_process(close_thread_connections):
    echo.enqueue()
    worker = run_worker(max_memory_mb=1, burst=False)  # any Python process is bigger
    assert worker.exit_code == RECYCLE_EXIT_CODE
    assert worker.stop_reason.startswith("memory ")


def test_a_sync_job_past_its_timeout_fails_and_recycles_the_process(close_thread_connections):
    result = wt.overrun.enqueue(12)
    began = time.monotonic()
    worker = run_worker(threads=1)
    # The timeout is 1 s; the thread sleeps 12 s: far below that, it did not wait for it.
    assert time.monotonic() - began < 9
    assert worker.exit_code == RECYCLE_EXIT_CODE
    row = job(result)
    assert row.status == "failed"
    assert row.errors[0]["exception_class_path"].endswith("JobTimedOut")


def test_an_async_job_past_its_timeout_is_cancelled_without_recycling(close_thread_connections):
    result = wt.async_overrun.enqueue(5)
    worker = run_worker(threads=1)
    assert worker.exit_code == 0
    assert job(result).errors[0]["exception_class_path"].endswith("JobTimedOut")


def test_cancellation_reaches_the_running_task_through_its_context(close_thread_connections):
    result = wt.wait_for_cancel.enqueue()

    def cancel_once_running() -> None:
        deadline = time.monotonic() + 60
        while not Job.objects.filter(pk=result.id, status="claimed").exists():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        Job.objects.filter(pk=result.id).update(cancel_requested=True)
        connections.close_all()

    helper = threading.Thread(target=cancel_once_running)
    helper.start()
    began = time.monotonic()
    run_worker(threads=1)
    helper.join()
    row = job(result)
    assert row.status == "cancelled"
    assert row.errors[-1]["exception_class_path"].endswith("JobCancelled")
    # Seen at the next lease renewal (lease 2 s), long before the task's own 20 s limit.
    assert time.monotonic() - began < 12


def test_a_job_cancelled_before_it_starts_never_runs(close_thread_connections):
    result = wt.slow_record.enqueue()
    Job.objects.filter(pk=result.id).update(cancel_requested=True)
    run_worker()
    assert job(result).status == "cancelled"
    assert not LedgerEntry.objects.exists()


def claimed_by(owner: str, result) -> Running:
    [claimed] = Job.objects.claim(["default"], limit=1, owner=owner)
    assert str(claimed.pk) == result.id
    return Running(claimed)


def steal(running: Running) -> None:
    """Let another worker take the job over, as after an expired lease."""
    Job.objects.filter(pk=running.job.pk).update(owner="thief", attempts=running.job.attempts + 1)


def run_in_executor(running: Running, task) -> Outcome:
    done: list[Outcome] = []
    executor = Executor(1, "default", "default", lambda r, o: done.append(o))
    executor.submit(running, task)
    assert running.future is not None
    deadline = time.monotonic() + 10
    while not done and time.monotonic() < deadline:
        time.sleep(0.01)
    executor.shutdown()
    return done[0]


def test_a_transactional_task_commits_its_writes_with_its_completion(close_thread_connections):
    result = wt.slow_record_tx.enqueue(label="once")
    running = claimed_by("w1", result)
    outcome = run_in_executor(running, wt.slow_record_tx)
    assert outcome.recorded and not outcome.lost
    assert job(result).status == "succeeded"
    assert list(LedgerEntry.objects.values_list("label", flat=True)) == ["once"]


def test_a_transactional_task_that_lost_its_lease_writes_nothing(close_thread_connections):
    result = wt.slow_record_tx.enqueue(label="stale")
    running = claimed_by("w1", result)
    steal(running)
    outcome = run_in_executor(running, wt.slow_record_tx)
    assert outcome.lost
    assert not LedgerEntry.objects.exists()  # rolled back with the rejected completion
    assert job(result).owner == "thief" and job(result).status == "claimed"


def test_batched_completions_are_fenced_one_by_one():
    first, second = echo.enqueue(), echo.enqueue()
    kept, stolen = claimed_by("w1", first), claimed_by("w1", second)
    steal(stolen)
    batch = [Outcome(kept, "succeeded", {"ok": 1}), Outcome(stolen, "succeeded", {"ok": 2})]
    outcomes.record(batch, "default")
    assert [o.lost for o in batch] == [False, True]
    assert job(first).status == "succeeded" and job(first).return_value == {"ok": 1}
    assert job(second).status == "claimed" and job(second).owner == "thief"


def test_a_write_whose_commit_was_lost_is_recognised_as_our_own():
    """The connection broke during COMMIT, which went through: the retry finds our outcome."""
    won, failed, reaped = echo.enqueue(), echo.enqueue(), echo.enqueue()
    runs = {r.id: claimed_by("w1", r) for r in (won, failed, reaped)}
    error = {"exception_class_path": "builtins.ValueError", "traceback": "boom"}
    first = [
        Outcome(runs[won.id], "succeeded", {"ok": 1}),
        Outcome(runs[failed.id], "retry", error=error, retry_in=0),
    ]
    outcomes.record(first, "default")  # committed; pretend its answer never arrived
    outcomes.reclaim("w1", "default", "test")  # the third: taken over, not ours
    again = [Outcome(o.running, o.status, o.return_value, o.error, o.retry_in) for o in first]
    again.append(Outcome(runs[reaped.id], "succeeded", None))
    outcomes.record(again, "default")
    # A success already written under this owner reads as written (transitions.succeed_many); the
    # other two are rejected by the fence, and only the first of them is ours.
    assert [o.lost for o in again] == [False, True, True]
    assert outcomes.already_written(again[1:]) == [True, False]


def test_reclaim_spends_the_dead_workers_attempt():
    spare, last = echo.enqueue(), explode.using(max_attempts=1).enqueue("x")
    Job.objects.claim(["default"], limit=2, owner="dead")
    Job.objects.claim(["default"], limit=2, owner="alive")  # nothing left: both held by "dead"
    taken = outcomes.reclaim("dead", "default", "signal SIGKILL")
    assert {str(j.pk) for j in taken} == {spare.id, last.id}
    assert (job(spare).status, job(spare).attempts) == ("ready", 1)
    assert job(spare).errors[0]["exception_class_path"].endswith("WorkerDied")
    assert job(last).status == "failed" and job(last).worker_ids == ["dead"]


def test_heartbeat_renews_held_leases_and_reads_cancel_requests():
    a, b, c = echo.enqueue(), echo.enqueue(), echo.enqueue()
    claimed = Job.objects.claim(["default"], limit=3, owner="w1", lease=5)
    Job.objects.filter(pk=a.id).update(cancel_requested=True)
    Job.objects.filter(pk=c.id).update(owner="thief")
    flags = transitions.renew("w1", "default", [j.pk for j in claimed], lease=300)
    assert flags == {int(a.id): True, int(b.id): False}
    renewed = job(b).lease_until - claimed[1].lease_until
    assert renewed.total_seconds() > 250


def test_release_gives_back_claims_without_spending_attempts():
    result = echo.enqueue()
    [claimed] = Job.objects.claim(["default"], limit=1, owner="w1")
    assert outcomes.release([claimed], "default") == 1
    row = job(result)
    assert (row.status, row.attempts, row.owner, row.started_at) == ("ready", 0, None, None)


def test_the_backend_knows_its_queues():
    backend = task_backends["default"]
    assert "default" in backend.queue_names
