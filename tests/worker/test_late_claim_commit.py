"""A killed worker's claim that commits after the supervisor took its jobs back.

A worker killed while its claim's COMMIT is on its way leaves a transaction the server commits
all the same: its jobs may become ``claimed`` by the dead owner only after the supervisor
looked for them. A fresh-clone CI run of the random ``kill -9`` test met it: a ``--burst`` run
exited with 17 such jobs still claimed. The supervisor looks once more RECHECK_AFTER seconds
later, and once more as it ends; a burst run then drains what that took back.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from django_skipqueue.models import Job
from django_skipqueue.worker.options import WorkerOptions
from django_skipqueue.worker.supervisor import Supervisor
from tests.support.tasks import noop

pytestmark = pytest.mark.django_db(transaction=True)

DEAD = "host:4242:deadbeef"


def late_claim(count: int) -> list[int]:
    """Jobs claimed by the dead owner, as its late COMMIT leaves them."""
    ids = [int(noop.enqueue().id) for _ in range(count)]
    claimed = Job.objects.claim(["default"], limit=count, owner=DEAD)
    assert sorted(job.pk for job in claimed) == sorted(ids)
    return ids


@pytest.fixture
def sup() -> Iterator[Supervisor]:
    """A supervisor of one burst worker, in this process (its children are the test's)."""
    options = WorkerOptions(queues=("default",), threads=1, burst=True, wakeup=False)
    supervisor = Supervisor(options, processes=1, maintenance=None)
    yield supervisor
    supervisor.waker.close()


def test_jobs_claimed_after_the_first_look_are_taken_back_by_the_second(sup):
    sup.dead.append((DEAD, "signal SIGKILL"))
    sup._reclaim()  # the first look: the claim has not committed yet, nothing is held
    assert DEAD in sup.rechecks
    ids = late_claim(3)  # ... then its COMMIT lands
    assert sup._recheck() is False, "not due yet: RECHECK_AFTER has not passed"
    assert sup._recheck(final=True) is True
    statuses = sorted(Job.objects.filter(pk__in=ids).values_list("status", flat=True))
    assert statuses == ["ready"] * 3
    assert all(len(job.errors) == 1 for job in Job.objects.filter(pk__in=ids))
    assert sup.rechecks == {} and sup.dead == []
    # A second look is the last: the same owner is not looked at a third time.
    sup._reclaim()
    assert sup.rechecks == {}


def test_a_burst_run_drains_what_the_last_look_took_back(sup, monkeypatch):
    spawned: list[int] = []
    ids: list[int] = []

    def spawn(slot: int) -> None:
        # No child process here: the first spawn stands for the killed worker (its late
        # claim lands after the first look), the second for the one that drains.
        spawned.append(slot)
        if len(spawned) == 1:
            sup.dead.append((DEAD, "signal SIGKILL"))
            sup._reclaim()
            ids.extend(late_claim(2))

    monkeypatch.setattr(sup, "_spawn", spawn)
    assert sup.run() == 0
    assert spawned == [0, 0], "the burst run started a worker again for the jobs taken back"
    assert sorted(Job.objects.filter(pk__in=ids).values_list("status", flat=True)) == [
        "ready",
        "ready",
    ]
