"""One case per documented transition: each writes exactly what states.py says it writes.

Every case puts a real row in the transition's source status, applies the transition through
the code that does it in production (enqueue, the manager's claim, the fenced UPDATEs of
transitions.py, the reaper, the supervisor's reclaim, the admin's operations, the purge) and
compares the whole row before and after. A column changed that the transition does not
declare fails the case, as does a status other than its target. The declarations are in turn
checked against the table of docs/discussions/job-states.md, so code, states.py and the page
cannot drift apart.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.db.models import GeneratedField
from django.utils import timezone

from django_skipqueue import states, transitions
from django_skipqueue.admin import operations
from django_skipqueue.db.clock import DatabaseNowPlus
from django_skipqueue.exceptions import message_record
from django_skipqueue.maintenance.promote import promote
from django_skipqueue.maintenance.purge import purge
from django_skipqueue.maintenance.reap import reap
from django_skipqueue.models import Job
from django_skipqueue.worker import recording
from tests.conftest import ROOT
from tests.support.tasks import (
    call_hourly,
    export_for,
    noop,
    refresh_for,
    reindex_user,
    sync_hourly,
)

pytestmark = pytest.mark.django_db

ERROR = message_record(ValueError, "boom")
GENERATED = {f.attname for f in Job._meta.concrete_fields if isinstance(f, GeneratedField)}
COLUMNS = {f.attname for f in Job._meta.concrete_fields} - GENERATED - {"id"}


def ready(**fields: Any) -> Job:
    job = Job.objects.get(pk=noop.enqueue().id)
    if fields:
        Job.objects.filter(pk=job.pk).update(**fields)
    return job


def claimed(**fields: Any) -> Job:
    job = ready(**fields)
    (mine,) = Job.objects.claim([job.queue_name], limit=1, owner="w1")
    return mine


def expired(**fields: Any) -> Job:
    job = claimed(**fields)
    Job.objects.filter(pk=job.pk).update(lease_until=DatabaseNowPlus(-5))
    return job


def failed() -> Job:
    job = claimed(max_attempts=1)
    assert transitions.fail(job, ERROR, retry_in=None)
    # A failed row as history leaves it: a cancellation asked too late, a deferred start.
    Job.objects.filter(pk=job.pk).update(cancel_requested=True, run_after=DatabaseNowPlus(-60))
    return job


def due() -> Job:
    job = Job.objects.get(pk=later().id)
    Job.objects.filter(pk=job.pk).update(run_after=DatabaseNowPlus(-1))
    return job


def nothing() -> None:
    """Arrange nothing: the transition makes the row."""


def keep(jobs: list[Job]) -> None:
    """The admin's recorder: the log entries are not what is under test."""


@dataclass
class Case:
    transition: states.Transition
    who: str
    arrange: Callable[[], Job | None]
    act: Callable[[Job | None], Any]
    #: The exact columns the case changes besides ``status``, where that is checked too.
    changes: frozenset[str] | None = None

    @property
    def id(self) -> str:
        return f"{self.transition.number}-{self.transition.name}-{self.who}".replace(" ", "_")


def later() -> Any:
    return noop.using(run_after=timezone.now() + timedelta(hours=1)).enqueue()


def slot_taken() -> Job:
    """A job of customer 7 that holds the key's one slot, claimed by w1."""
    holder = Job.objects.get(pk=export_for.enqueue(7).id)
    assert holder.status == "ready" and holder.flow_slot
    (mine,) = Job.objects.claim([holder.queue_name], limit=1, owner="w1")
    return mine


def blocked() -> Job:
    slot_taken()
    job = Job.objects.get(pk=export_for.enqueue(7).id)
    assert job.status == "blocked"
    return job


def admitted_by_the_end_of(job: Job | None) -> Any:
    key = f"{export_for.module_path}:customer:7"
    (holder,) = Job.objects.filter(status="claimed", flow_key=key)
    return transitions.succeed(holder, None)


def replace_held() -> Job:
    """A scheduled refresh of customer 7 while another refresh holds the key's one slot."""
    refresh_for.enqueue(7, "a", 1)
    Job.objects.claim(["default"], limit=1, owner="w1")
    later = timezone.now() + timedelta(hours=1)
    return Job.objects.get(pk=refresh_for.using(run_after=later).enqueue(7, "b", 1).id)


def blocked_due() -> Job:
    slot_taken()
    job = Job.objects.get(
        pk=export_for.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(7).id
    )
    Job.objects.filter(pk=job.pk).update(run_after=DatabaseNowPlus(-1))
    return job


def failed_keyed() -> Job:
    first = slot_taken()
    assert transitions.fail(first, ERROR, retry_in=None)
    slot_taken()
    return first


def rate_spent(*, expire: bool = False, **fields: Any) -> Job:
    """A claimed job of an API whose one start an hour it has spent (call_hourly)."""
    job = Job.objects.get(pk=call_hourly.enqueue("maps").id)
    assert job.status == "ready" and job.flow_key and not job.flow_slot
    if fields:
        Job.objects.filter(pk=job.pk).update(**fields)
    (mine,) = Job.objects.claim([job.queue_name], limit=1, owner="w1")
    if expire:
        Job.objects.filter(pk=mine.pk).update(lease_until=DatabaseNowPlus(-5))
    return mine


def holder_spent(*, expire: bool = False) -> Job:
    """A claimed job of an ordered API that holds its key's slot and has spent its one start
    an hour (sync_hourly): a retry keeps the slot and waits for the next window."""
    job = Job.objects.get(pk=sync_hourly.enqueue("maps").id)
    assert job.status == "ready" and job.flow_slot
    (mine,) = Job.objects.claim([job.queue_name], limit=1, owner="w1")
    if expire:
        Job.objects.filter(pk=mine.pk).update(lease_until=DatabaseNowPlus(-5))
    return mine


def holder_due() -> Job:
    """A slot holder of sync_hourly retried after a backoff, due now."""
    job = holder_spent()
    assert transitions.fail(job, ERROR, retry_in=30)
    Job.objects.filter(pk=job.pk).update(run_after=DatabaseNowPlus(-1))
    return job


def holder_blocked() -> Job:
    """A slot holder of sync_hourly retried at once, blocked for the next window."""
    job = holder_spent()
    assert transitions.fail(job, ERROR, retry_in=0)
    return job


def holder_failed() -> Job:
    """A job of an ordered API that failed for good and kept its key's slot ("block")."""
    job = Job.objects.get(
        pk=sync_hourly.using(ordered_failure="block", max_attempts=1).enqueue("maps").id
    )
    (mine,) = Job.objects.claim([job.queue_name], limit=1, owner="w1")
    assert transitions.fail(mine, ERROR, retry_in=None)
    return mine


#: What a retry at once writes (7, 21): the error, the owner gone into the history.
RETRIED = frozenset({"errors", "owner", "worker_ids", "lease_until"})

CASES = [
    Case(states.ENQUEUE, "enqueue", nothing, lambda _: noop.enqueue()),
    Case(states.ENQUEUE_DEFERRED, "enqueue", nothing, lambda _: later()),
    Case(states.PROMOTE, "maintenance", due, lambda job: promote()),
    Case(
        states.CLAIM,
        "worker",
        ready,
        lambda job: Job.objects.claim(["default"], limit=1, owner="w"),
    ),
    Case(states.SUCCEED, "worker", claimed, lambda job: transitions.succeed(job, {"ok": 1})),
    Case(
        states.SUCCEED,
        "worker-batched",
        claimed,
        lambda job: transitions.succeed_many([job], [{"ok": 1}]),
    ),
    Case(
        states.RETRY_LATER,
        "worker",
        lambda: claimed(max_attempts=3),
        lambda job: transitions.fail(job, ERROR, retry_in=30),
    ),
    Case(
        states.RETRY_LATER,
        "reaper",
        lambda: expired(max_attempts=3),
        lambda job: reap(runner="r"),
    ),
    Case(
        states.RETRY_NOW,
        "worker",
        lambda: claimed(max_attempts=3),
        lambda job: transitions.fail(job, ERROR, retry_in=0),
    ),
    Case(
        states.RETRY_NOW,
        "supervisor",
        lambda: claimed(max_attempts=3),
        lambda job: recording.reclaim("w1", "default", "signal SIGKILL"),
    ),
    Case(states.RELEASE, "worker", claimed, lambda job: transitions.release(job)),
    Case(
        states.FAIL,
        "worker",
        lambda: claimed(max_attempts=1),
        lambda job: transitions.fail(job, ERROR, retry_in=None),
    ),
    Case(states.FAIL, "reaper", lambda: expired(max_attempts=1), lambda job: reap(runner="r")),
    Case(
        states.FAIL,
        "supervisor",
        lambda: claimed(max_attempts=1),
        lambda job: recording.reclaim("w1", "default", "signal SIGKILL"),
    ),
    Case(
        states.CANCEL_RUNNING,
        "worker",
        claimed,
        lambda job: transitions.cancel_running(job, ERROR),
    ),
    Case(
        states.CANCEL_RUNNING,
        "reaper",
        lambda: expired(max_attempts=3, cancel_requested=True),
        lambda job: reap(runner="r"),
    ),
    Case(
        states.CANCEL,
        "admin",
        ready,
        lambda job: operations.cancel_waiting(Job.objects.filter(pk=job.pk), keep, "no longer"),
    ),
    Case(
        states.RETRY,
        "admin",
        failed,
        lambda job: operations.retry_failed(Job.objects.filter(pk=job.pk), keep),
    ),
    Case(states.SNOOZE, "worker", claimed, lambda job: transitions.snooze(job, 30)),
    Case(
        states.REPLACE,
        "enqueue",
        lambda: Job.objects.get(pk=reindex_user.enqueue(1, ["a"]).id),
        lambda job: reindex_user.enqueue(1, ["b"]),
    ),
    Case(
        states.REPLACE_DEFERRED,
        "enqueue",
        lambda: Job.objects.get(pk=reindex_user.enqueue(1, ["a"]).id),
        lambda job: reindex_user.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(
            1, ["b"]
        ),
    ),
    Case(
        states.REPLACE_BLOCKED,
        "enqueue",
        replace_held,
        lambda job: refresh_for.enqueue(7, "b", 2),
        frozenset({"args", "run_after"}),
    ),
    Case(
        states.ENQUEUE_BLOCKED,
        "enqueue",
        nothing,
        lambda _: (slot_taken(), export_for.enqueue(7))[1],
    ),
    Case(states.ADMIT, "worker", blocked, admitted_by_the_end_of),
    Case(states.PROMOTE_BLOCKED, "maintenance", blocked_due, lambda job: promote()),
    Case(
        states.RETRY_BLOCKED,
        "admin",
        failed_keyed,
        lambda job: operations.retry_failed(Job.objects.filter(pk=job.pk), keep),
    ),
    Case(
        states.RETRY_NOW_BLOCKED,
        "worker",
        rate_spent,
        lambda job: transitions.fail(job, ERROR, retry_in=0),
        RETRIED,
    ),
    Case(
        states.RETRY_NOW_BLOCKED,
        "reaper",
        lambda: rate_spent(expire=True),
        lambda job: reap(runner="r"),
        RETRIED,
    ),
    Case(
        states.RETRY_NOW_BLOCKED,
        "supervisor",
        rate_spent,
        lambda job: recording.reclaim("w1", "default", "signal SIGKILL"),
        RETRIED,
    ),
    Case(
        states.RETRY_NOW_BLOCKED,
        "worker-stopping",
        lambda: rate_spent(max_attempts=1),
        lambda job: recording.interrupt([job], "default", "immediate stop, SIGTERM"),
        RETRIED | {"max_attempts"},
    ),
    # A slot holder of a key with a rate: it keeps its slot (flow_slot) while it waits.
    Case(
        states.RETRY_NOW_BLOCKED,
        "worker-holder",
        holder_spent,
        lambda job: transitions.fail(job, ERROR, retry_in=0),
        RETRIED,
    ),
    Case(
        states.RETRY_NOW_BLOCKED,
        "reaper-holder",
        lambda: holder_spent(expire=True),
        lambda job: reap(runner="r"),
        RETRIED,
    ),
    Case(
        states.PROMOTE_BLOCKED,
        "maintenance-holder",
        holder_due,
        lambda job: promote(),
        frozenset(),
    ),
    Case(
        states.RETRY_BLOCKED,
        "admin-holder",
        holder_failed,
        lambda job: operations.retry_failed(Job.objects.filter(pk=job.pk), keep),
    ),
    Case(
        states.CANCEL,
        "admin-blocked-holder",
        holder_blocked,
        lambda job: operations.cancel_waiting(Job.objects.filter(pk=job.pk), keep, "no longer"),
        frozenset({"errors", "finished_at", "flow_slot"}),
    ),
    Case(
        states.CANCEL,
        "admin-blocked",
        blocked,
        lambda job: operations.cancel_waiting(Job.objects.filter(pk=job.pk), keep, "no longer"),
    ),
    Case(
        states.PURGE,
        "purge",
        failed,
        lambda job: purge(older_than=timedelta(0), sleep=0),
    ),
]


def row(pk: int) -> dict[str, Any] | None:
    return Job.objects.filter(pk=pk).values(*COLUMNS, "status").first()


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_each_transition_writes_what_it_declares_and_nothing_else(case):
    job = case.arrange()
    before = row(job.pk) if job is not None else None
    answer = case.act(job)
    if before is None:  # enqueue: a new row, every column written
        after = row(answer.id)
        assert after is not None and after["status"] == case.transition.target
        assert case.transition.writes == {"*"}
        return
    after = row(job.pk)
    if case.transition.target is None:  # purge: the row is gone
        assert after is None
        return
    assert after is not None
    assert before["status"] in case.transition.sources
    assert after["status"] == case.transition.target
    changed = {column for column in COLUMNS if before[column] != after[column]} - {"status"}
    undeclared = changed - case.transition.writes
    assert not undeclared, f"{case.transition.name} wrote {sorted(undeclared)} undeclared"
    if case.changes is not None:
        assert changed == case.changes


def test_every_documented_transition_has_a_case():
    assert {case.transition for case in CASES} == set(states.TRANSITIONS)
    assert [t.number for t in states.TRANSITIONS] == list(range(1, 23))


def test_each_transition_declares_real_columns_only():
    for transition in states.TRANSITIONS:
        assert transition.writes == {"*"} or transition.writes <= COLUMNS, transition.name


def documented_rows() -> dict[int, str]:
    """Return the rows of the transition table in job-states.md, by number."""
    page = (ROOT / "docs" / "discussions" / "job-states.md").read_text()
    rows = re.findall(r"^\| (\d+) \|(.*)\|$", page, re.M)
    return {int(number): rest for number, rest in rows}


def test_the_docs_table_names_each_transition_and_every_column_it_writes():
    rows = documented_rows()
    assert sorted(rows) == [t.number for t in states.TRANSITIONS]
    for transition in states.TRANSITIONS:
        cells = [cell.strip() for cell in rows[transition.number].split("|")]
        assert cells[2] == transition.name, transition.number
        written = cells[-1]
        for column in transition.writes - {"*"}:
            assert f"`{column}" in written, f"{transition.name}: {column} not documented"
