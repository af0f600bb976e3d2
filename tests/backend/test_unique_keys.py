"""Uniqueness from the arguments: a derived key, replace mode (debounce), keyed bulk enqueue."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from django_skipqueue import transitions
from django_skipqueue.db.bulkinsert import insert_rows_keyed
from django_skipqueue.enqueue import build_job
from django_skipqueue.models import Job
from django_skipqueue.tasks import KEY_LENGTH, call_key
from tests.support.tasks import (
    daily_report,
    export_waiting_once,
    import_feed,
    noop,
    refresh_for,
    reindex_user,
    sync_account,
)

pytestmark = pytest.mark.django_db


def test_the_key_comes_from_the_template_and_the_call_defaults_included():
    first = sync_account.enqueue(7)
    again = sync_account.enqueue(account_id=7, full=True)
    other = sync_account.enqueue(8)
    assert first.id == again.id != other.id
    job = Job.objects.get(pk=first.id)
    assert job.idempotency_key == "tests.support.tasks.sync_account:account-7"
    assert Job.objects.count() == 2


def test_the_key_comes_from_a_callable():
    first = daily_report.enqueue("EU", day="2026-12-04")
    again = daily_report.enqueue("eu", day="2026-12-04")
    assert first.id == again.id
    assert daily_report.enqueue("eu", day="2026-12-05").id != first.id


def test_an_explicit_key_wins_and_a_finished_holder_frees_the_key():
    explicit = sync_account.using(idempotency_key="mine").enqueue(7)
    assert Job.objects.get(pk=explicit.id).idempotency_key == "mine"
    derived = sync_account.enqueue(7)
    Job.objects.filter(pk=derived.id).update(status="failed")
    assert sync_account.enqueue(7).id != derived.id


def test_a_long_key_is_shortened_with_a_hash():
    key = call_key(sync_account, ["x" * 300], {})
    assert key is not None and len(key) == KEY_LENGTH
    assert key != call_key(sync_account, ["x" * 299 + "y"], {})


def test_replace_mode_keeps_one_waiting_job_with_the_latest_arguments():
    soon = timezone.now() + timedelta(seconds=30)
    later = timezone.now() + timedelta(minutes=5)
    first = reindex_user.using(run_after=soon).enqueue(1, ["name"])
    second = reindex_user.using(run_after=later).enqueue(1, ["name", "email"])
    third = reindex_user.enqueue(1, ["email"])
    assert first.id == second.id == third.id
    job = Job.objects.get()
    assert (job.args, job.status, job.run_after) == ([1, ["email"]], "ready", None)
    # A later run time makes it wait again.
    reindex_user.using(run_after=later).enqueue(1, ["bio"])
    job.refresh_from_db()
    assert (job.args, job.status, job.run_after) == ([1, ["bio"]], "scheduled", later)


def test_replace_mode_leaves_a_running_holder_alone():
    result = reindex_user.enqueue(2, ["name"])
    Job.objects.claim(["default"], limit=1, owner="w1")
    again = reindex_user.enqueue(2, ["email"])
    assert again.id == result.id
    job = Job.objects.get()
    assert (job.status, job.args) == ("claimed", [2, ["name"]])


def test_replace_mode_on_a_flow_key_waits_for_a_slot_instead_of_running_at_once():
    """A scheduled holder told to run now goes through its key's admission (22), as a due
    one does (19): without it, it would start beside the job that holds the key's slot."""
    running = refresh_for.enqueue(7, "a", 1)
    (claimed,) = Job.objects.claim(["default"], limit=1, owner="w1")
    assert claimed.pk == int(running.id) and claimed.flow_slot
    later = timezone.now() + timedelta(minutes=5)
    waiting = refresh_for.using(run_after=later).enqueue(7, "b", 1)
    assert Job.objects.get(pk=waiting.id).status == "scheduled"

    again = refresh_for.enqueue(7, "b", 2)

    assert again.id == waiting.id
    job = Job.objects.get(pk=waiting.id)
    assert (job.status, job.args, job.run_after, job.flow_slot) == (
        "blocked",
        [7, "b", 2],
        None,
        False,
    )
    assert transitions.succeed(claimed, None)
    job.refresh_from_db()
    assert (job.status, job.flow_slot) == ("ready", True)


def test_replace_mode_on_a_free_flow_key_is_admitted_at_once():
    later = timezone.now() + timedelta(minutes=5)
    waiting = refresh_for.using(run_after=later).enqueue(8, "a", 1)
    again = refresh_for.enqueue(8, "a", 2)
    assert again.id == waiting.id
    job = Job.objects.get(pk=waiting.id)
    assert (job.status, job.args, job.flow_slot) == ("ready", [8, "a", 2], True)


def test_a_blocked_job_holds_a_key_that_blocks_while_ready():
    """unique_while=("scheduled", "ready") on a flow task: the blocked job waits to be ready,
    so it holds the key (no twin that its admission would then collide with)."""
    first = export_waiting_once.enqueue(7)
    (running,) = Job.objects.claim(["default"], limit=1, owner="w1")
    assert running.pk == int(first.id)
    waiting = export_waiting_once.enqueue(7)
    again = export_waiting_once.enqueue(7)
    assert again.id == waiting.id != first.id
    assert transitions.succeed(running, None)
    assert list(Job.objects.order_by("pk").values_list("status", flat=True)) == [
        "succeeded",
        "ready",
    ]


def test_bulk_inserts_the_rest_and_reports_the_duplicates(backend):
    holder = sync_account.enqueue(1)
    calls = [
        (sync_account, [1], {}),  # held by an existing job
        (sync_account, [2], {}),
        (noop, [], {}),
        (sync_account, [2], {"full": True}),  # held by the call before it in this bulk
        (sync_account, [3], {}),
    ]
    results = backend.enqueue_many(calls)
    assert sorted(results.duplicates) == [0, 3]
    assert results[0].id == results.duplicates[0].id == holder.id
    assert results[3].id == results[1].id
    assert len({r.id for r in results}) == 4
    keys = sorted(k for k in Job.objects.values_list("idempotency_key", flat=True) if k)
    assert [k.rpartition(":")[2] for k in keys] == ["account-1", "account-2", "account-3"]
    assert Job.objects.count() == 4


@pytest.mark.mysql
@pytest.mark.parametrize("returning", [True, False], ids=["RETURNING", "LAST_INSERT_ID"])
def test_keyed_insert_tells_inserted_rows_from_holders(returning):
    if returning and not connection.features.can_return_rows_from_bulk_insert:
        pytest.skip("MySQL has no INSERT ... RETURNING")
    held = [sync_account.enqueue(n).id for n in (2, 5)]
    jobs = [build_job(sync_account, [n], {}) for n in range(1, 7)]
    insert_rows_keyed(jobs, "default", returning=returning)
    inserted = [job.pk is not None for job in jobs]
    assert inserted == [True, False, True, True, False, True]
    stored = dict(Job.objects.values_list("pk", "args"))
    for job in jobs:
        if job.pk is not None:
            assert stored[job.pk] == job.args
    assert set(stored) == {job.pk for job in jobs if job.pk} | set(map(int, held))


def test_unique_while_names_the_statuses_in_which_the_key_blocks():
    first = import_feed.enqueue("prices")
    assert import_feed.enqueue("prices").id == first.id, "waiting: blocks"
    Job.objects.claim(["default"], limit=1, owner="w1")
    second = import_feed.enqueue("prices")
    assert second.id != first.id, "claimed: not in unique_while, a new job may wait"
    assert import_feed.enqueue("prices").id == second.id
    Job.objects.filter(pk=first.id).update(status="succeeded")
    assert Job.objects.get(pk=first.id).active_key is None
    # scheduled (1) and ready (2), and blocked (64) with ready: a job of a flow key waits
    # blocked on its way to ready.
    assert Job.objects.get(pk=second.id).key_statuses == 1 + 2 + 64


def test_the_default_statuses_are_those_of_idempotency_keys():
    result = sync_account.enqueue(9)
    Job.objects.filter(pk=result.id).update(status="succeeded")
    assert sync_account.enqueue(9).id == result.id
    Job.objects.filter(pk=result.id).update(status="failed")
    assert sync_account.enqueue(9).id != result.id
