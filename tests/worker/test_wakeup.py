"""Wake-ups: who gets them (fan-out in turn), what sends them, and how a worker relies on them."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator

import pytest
from django.core.management import call_command
from django.db.models import Sum

from django_skipqueue import wakeup
from django_skipqueue.admin import operations
from django_skipqueue.checks import check_wakeup_fanout
from django_skipqueue.db.clock import DatabaseNowPlus, read_db_now
from django_skipqueue.maintenance import reap as reaper
from django_skipqueue.maintenance.promote import promote
from django_skipqueue.models import Job, JobStatus, QueueMinute, WorkerProcess
from django_skipqueue.monitoring.metrics import Metrics
from django_skipqueue.worker.claimer import FIRST_IDLE_PAUSE, Claimer, IdleBackoff
from django_skipqueue.worker.options import WorkerOptions
from tests.support import worker_tasks as wt
from tests.support.tasks import noop
from tests.support.workers import Runworkers, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fresh_addresses() -> Iterator[None]:
    wakeup.forget_addresses()
    yield
    wakeup.forget_addresses()


@pytest.fixture
def listeners() -> Iterator[list[wakeup.Waker]]:
    """Three registered, live workers of the default queue, each with its own socket."""
    wakers = [wakeup.Waker("127.0.0.1") for _ in range(3)]
    now = read_db_now("default")
    for number, waker in enumerate(wakers):
        WorkerProcess.objects.create(
            owner=f"host:{number}:abc", role="worker", hostname="host", pid=number,
            queues=["default"], wakeup_address=waker.address, started_at=now,
            last_heartbeat_at=now,
        )  # fmt: skip
    yield wakers
    for waker in wakers:
        waker.close()


def heard(waker: wakeup.Waker, within: float = 1.0) -> set[str]:
    return waker.wait(within, listen=True)


# Who gets a wake-up.


def test_in_turn_walks_round_the_list_so_each_gets_its_share():
    items = list("abcde")
    chosen = Counter(item for turn in range(5) for item in wakeup.in_turn(items, 2, turn))
    assert chosen == dict.fromkeys(items, 2)
    assert wakeup.in_turn(items, 2, 0) == ["a", "b"]
    assert wakeup.in_turn(items, 2, 2) == ["e", "a"]
    assert wakeup.in_turn(items, None, 3) == items
    assert wakeup.in_turn(items, 9, 3) == items
    assert wakeup.in_turn([], 2, 3) == []


def test_each_enqueue_wakes_fanout_workers_taking_turns(listeners, settings):
    settings.SKIPQUEUE_WAKEUP_FANOUT = 1
    for _ in range(3):
        noop.enqueue()
    received = [len(heard(waker, 0.5)) for waker in listeners]
    assert received == [1, 1, 1], "one datagram each, not three to one of them"


def test_without_a_fanout_every_live_worker_is_woken(listeners, settings):
    settings.SKIPQUEUE_WAKEUP_FANOUT = None
    assert wakeup.notify("default", frozenset({"default"})) == 3
    assert all(heard(waker) == {"default"} for waker in listeners)


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_a_fanout_that_is_not_a_positive_integer_fails_the_checks(settings, bad):
    settings.SKIPQUEUE_WAKEUP_FANOUT = bad
    assert [message.id for message in check_wakeup_fanout()] == ["django_skipqueue.E005"]
    settings.SKIPQUEUE_WAKEUP_FANOUT = 2
    assert check_wakeup_fanout() == []


# What else sends one: every path that makes a job ready.


def test_promotion_of_due_jobs_wakes_workers(listeners, settings):
    settings.SKIPQUEUE_WAKEUP_FANOUT = None
    job = noop.using(run_after=read_db_now("default")).enqueue()
    Job.objects.filter(pk=job.id).update(status=JobStatus.SCHEDULED, run_after=DatabaseNowPlus(-1))
    for waker in listeners:
        heard(waker, 0.2)  # the enqueue's own wake-up
    assert promote("default") == 1
    assert heard(listeners[0]) == {"default"}


@pytest.mark.parametrize(
    ("task", "after_reap", "wakes"),
    [
        (wt.fail_first, JobStatus.READY, {"default"}),  # retry_backoff=0: ready again at once
        (noop, JobStatus.SCHEDULED, set()),  # a backoff: promotion will wake, later
    ],
)
def test_the_reaper_wakes_workers_only_for_a_job_ready_again_at_once(
    listeners, settings, task, after_reap, wakes
):
    settings.SKIPQUEUE_WAKEUP_FANOUT = None
    task.enqueue()
    [job] = Job.objects.claim(["default"], limit=1, owner="gone", lease=60)
    Job.objects.filter(pk=job.pk).update(lease_until=DatabaseNowPlus(-1))
    for waker in listeners:
        heard(waker, 0.2)  # the enqueue's own wake-up
    assert reaper.reap(runner="r").retried == 1
    assert Job.objects.get(pk=job.pk).status == after_reap
    assert heard(listeners[0], 0.5) == wakes


def test_the_admin_retry_wakes_workers(listeners, settings):
    settings.SKIPQUEUE_WAKEUP_FANOUT = None
    job = noop.enqueue()
    Job.objects.filter(pk=job.id).update(status=JobStatus.FAILED, attempts=1)
    for waker in listeners:
        heard(waker, 0.2)
    outcome = operations.retry_failed(Job.objects.filter(pk=job.id), lambda jobs: None)
    assert outcome.changed == 1
    assert heard(listeners[0]) == {"default"}


# How a worker relies on them.


def test_a_worker_that_hears_wake_ups_waits_the_idle_cap_once_the_queue_is_empty():
    polling = IdleBackoff(cap=1.0)
    polling.claimed(1, 4)
    assert polling.pause == FIRST_IDLE_PAUSE  # polling alone: look again soon
    woken = IdleBackoff(cap=1.0)
    woken.claimed(1, 4, woken_reliably=True)
    assert woken.pause == 1.0
    woken.claimed(4, 4, woken_reliably=True)
    assert woken.pause == 0.0  # a full claim: more may be waiting, claim again at once


def test_only_wake_ups_that_arrived_lately_are_relied_on():
    claimer = Claimer(WorkerOptions(queues=("default",)), "w", Metrics())
    assert not claimer.woken_reliably
    claimer.wake({"emails"})  # another queue's: still proof that datagrams reach us
    assert claimer.woken_reliably
    claimer.heard_at -= 61
    assert not claimer.woken_reliably
    deaf = Claimer(WorkerOptions(queues=("default",), wakeup=False), "w", Metrics())
    deaf.wake({"default"})
    assert not deaf.woken_reliably


def test_a_wake_up_claim_asks_only_the_queues_it_named_and_leaves_the_poll_alone():
    metrics = Metrics()
    options = WorkerOptions(queues=("emails", "default"), poll_max=3600)
    claimer = Claimer(options, "w", metrics)
    claimer.wake({"elsewhere"})  # wake-ups reach it: an empty poll waits the whole cap
    assert claimer.claim(4) == []  # the poll: both queues, empty
    assert metrics.totals["claim_queries"] == 2
    poll_at = claimer.next_claim_at
    assert poll_at > time.monotonic() + 3000, "the next poll is an hour off, not a moment"

    claimer.wake({"default"})
    assert claimer.due() and claimer.next_claim_at == 0.0
    assert claimer.claim(4) == []
    assert metrics.totals["claim_queries"] == 3, "one query: the named queue only"
    assert claimer.next_claim_at == poll_at, "an empty wake-up claim does not delay the poll"

    noop.using(queue_name="emails").enqueue()
    claimer.wake({"default"})
    assert claimer.claim(4) == []  # emails waits for the poll
    assert not claimer.due()
    claimer.idle.next_claim_at = time.monotonic()  # the hour has passed: the poll is due
    assert claimer.due()
    assert [job.queue_name for job in claimer.claim(4)] == ["emails"]


# End to end, in real worker processes.


def test_an_immediate_retry_wakes_the_workers_too(child_env, manage_py, tmp_path):
    # With --poll-max 30 the worker, which relies on wake-ups once it has heard one, would
    # not look at the queue again for half a minute: only a wake-up brings the retry in.
    workers = Runworkers(
        manage_py, child_env, tmp_path / "retry.log",
        "--processes", "1", "--queues", "default", "--poll-max", "30",
    )  # fmt: skip
    try:
        wait_for(lambda: WorkerProcess.objects.filter(role="worker").exists(), 60)
        time.sleep(2)
        result = wt.fail_first.enqueue()
        done = Job.objects.filter(pk=result.id, status="succeeded")
        # Well within the 30 s poll: only a wake-up can have brought it (a loaded machine
        # delays it by seconds, never by the poll's half minute).
        wait_for(done.exists, 20, what="the retry within 20 s")
        assert Job.objects.get(pk=result.id).attempts == 2
        workers.signal(signal.SIGTERM)
        assert workers.wait(timeout=30) == 0
    finally:
        workers.stop()


def test_workers_that_hear_wake_ups_make_few_claim_queries_per_job(child_env, manage_py, tmp_path):
    # Polling alone ramps back up after every job (10, 20, 40, 80 ms...): about 7 claim
    # queries per job here. Relying on wake-ups: the claim that takes the job, the other
    # worker's wake-up claim, and the claim after the job (a full claim of 1) find the rest.
    jobs, processes = 20, 2
    workers = Runworkers(
        manage_py, child_env, tmp_path / "queries.log",
        "--processes", str(processes), "--threads", "1", "--queues", "default",
        "--poll-max", "30",
    )  # fmt: skip
    try:
        wait_for(lambda: WorkerProcess.objects.filter(role="worker").count() == processes, 60)
        time.sleep(2)
        enqueued = []
        for _ in range(jobs):
            enqueued.append(wt.stamp.enqueue().id)
            time.sleep(0.25)
        done = Job.objects.filter(pk__in=enqueued, status="succeeded")
        wait_for(lambda: done.count() == jobs, 60, what="every job run")
        workers.signal(signal.SIGTERM)
        assert workers.wait(timeout=30) == 0
    finally:
        workers.stop()
    queries = QueueMinute.objects.aggregate(n=Sum("claim_queries"))["n"]
    # Start-up ramp to the 30 s cap: at most 13 queries per process.
    assert queries <= 4 * jobs + 13 * processes, queries


def test_no_wake_up_reaches_a_worker_without_a_listener(settings):
    settings.SKIPQUEUE_WAKEUP_FANOUT = None
    call_command("check")  # the settings above are valid
    assert wakeup.notify("default", frozenset({"default"})) == 0


def test_a_producer_closes_its_wake_up_socket_when_it_exits(child_env, listeners):
    """A process that sent wake-ups leaves no unclosed socket behind (``-X dev`` reports one)."""
    address = wakeup.parse_address(str(listeners[0].address))
    send = (
        "import django; django.setup(); from django_skipqueue import wakeup; "
        f"wakeup._send(b'default', {address!r}); print(wakeup._socket is not None)"
    )
    command = [sys.executable, "-X", "dev", "-c", send]
    done = subprocess.run(command, env=child_env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True"]
    assert "ResourceWarning" not in done.stderr, done.stderr
    assert heard(listeners[0]) == {"default"}
