"""The job threads (executor.JobThreads): lazy threads, take-backs, shutdown, failing calls."""

from __future__ import annotations

import threading
import time

import pytest

from django_skipqueue.worker.executor import JobThreads

pytestmark = pytest.mark.vendor_neutral


def wait_for(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_one_call_at_a_time_keeps_one_thread():
    pool = JobThreads(8, "test-job")
    names: list[str] = []
    for _ in range(20):
        ticket = pool.submit(lambda: names.append(threading.current_thread().name))
        wait_for(lambda ticket=ticket: ticket.finished)
    pool.shutdown()
    assert len(names) == 20
    assert set(names) == {"test-job_0"}
    assert pool.threads == 1


def test_calls_that_wait_together_get_threads_up_to_the_size():
    pool = JobThreads(3, "test-job")
    gate = threading.Event()
    running: list[str] = []

    def held() -> None:
        running.append(threading.current_thread().name)
        gate.wait(10)

    tickets = [pool.submit(held) for _ in range(5)]
    wait_for(lambda: len(running) == 3)
    assert pool.threads == 3  # never more than the size
    assert sorted(running) == ["test-job_0", "test-job_1", "test-job_2"]
    gate.set()
    wait_for(lambda: all(ticket.finished for ticket in tickets))
    pool.shutdown()
    assert len(running) == 5


def test_a_call_taken_back_before_a_thread_is_free_never_runs():
    pool = JobThreads(1, "test-job")
    gate = threading.Event()
    ran: list[str] = []
    begun = threading.Event()

    def hold() -> None:
        begun.set()
        gate.wait(10)

    first = pool.submit(hold)
    assert begun.wait(10)
    assert not first.cancel()  # begun: cannot be taken back
    second = pool.submit(ran.append, "second")
    third = pool.submit(ran.append, "third")
    assert second.cancel()
    assert not second.cancel()  # taken once
    gate.set()
    wait_for(lambda: third.finished)
    assert ran == ["third"]
    assert not third.cancel()  # it ran: too late
    pool.shutdown()


def test_shutdown_takes_back_waiting_calls_and_refuses_new_ones():
    pool = JobThreads(1, "test-job")
    gate = threading.Event()
    ran: list[int] = []
    busy = pool.submit(gate.wait, 10)
    waiting = [pool.submit(ran.append, n) for n in range(3)]
    pool.shutdown()
    assert all(ticket.finished for ticket in waiting)  # taken back
    assert not any(ticket.cancel() for ticket in waiting)
    gate.set()
    wait_for(lambda: busy.finished)
    time.sleep(0.05)
    assert ran == []
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(ran.append, 9)


def test_a_call_that_raises_is_logged_and_the_thread_serves_on(caplog):
    pool = JobThreads(1, "test-job")

    def broken() -> None:
        raise ValueError("a bug")

    failed = pool.submit(broken)
    done: list[bool] = []
    after = pool.submit(done.append, True)
    wait_for(lambda: after.finished)
    pool.shutdown()
    assert failed.finished and done == [True]
    assert pool.threads == 1
    assert any("a job thread's call raised" in r.getMessage() for r in caplog.records)
