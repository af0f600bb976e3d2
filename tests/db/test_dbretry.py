"""Deadlocks and lock-wait timeouts retry the whole transaction, never half of it."""

from __future__ import annotations

import threading

import pytest
from django.db import OperationalError, connection, connections, transaction

from django_skipqueue.db.statements import (
    is_retryable,
    retry_whole_transaction,
    short_transaction,
)
from testproject.demo.models import LedgerEntry

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql]


def test_a_real_deadlock_is_retried_whole(close_thread_connections):
    """Two transactions lock two rows in opposite orders; the victim is re-run entirely."""
    first = LedgerEntry.objects.create(job_id=1, attempt=1, worker="a")
    second = LedgerEntry.objects.create(job_id=2, attempt=1, worker="b")
    both_hold_one = threading.Barrier(2, timeout=20)
    runs = {"left": 0, "right": 0}
    errors: list[BaseException] = []

    def transfer(name: str, lock_first: int, lock_second: int) -> None:
        def work() -> None:
            runs[name] += 1
            with transaction.atomic():
                LedgerEntry.objects.create(job_id=100, attempt=runs[name], worker=name)
                list(LedgerEntry.objects.select_for_update().filter(pk=lock_first))
                if runs[name] == 1:
                    both_hold_one.wait()
                list(LedgerEntry.objects.select_for_update().filter(pk=lock_second))

        try:
            retry_whole_transaction("default", work)
        except BaseException as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [
        threading.Thread(target=transfer, args=("left", first.pk, second.pk)),
        threading.Thread(target=transfer, args=("right", second.pk, first.pk)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert sorted(runs.values()) == [1, 2], "exactly one side was the deadlock victim, re-run"
    # The victim's first run rolled back entirely: one marker row per side, none doubled.
    markers = LedgerEntry.objects.filter(job_id=100)
    assert sorted(markers.values_list("worker", flat=True)) == ["left", "right"]


def test_a_lock_wait_timeout_is_retried_whole(close_thread_connections):
    row = LedgerEntry.objects.create(job_id=1, attempt=1, worker="held")
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with transaction.atomic():
            list(LedgerEntry.objects.select_for_update().filter(pk=row.pk))
            holding.set()
            release.wait(20)
        connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(10)
    with connection.cursor() as cursor:
        cursor.execute("SET SESSION innodb_lock_wait_timeout = 1")
    attempts = []

    def work() -> None:
        attempts.append(1)
        if len(attempts) == 2:
            release.set()
        with transaction.atomic():
            LedgerEntry.objects.create(job_id=200, attempt=len(attempts), worker="waiter")
            list(LedgerEntry.objects.select_for_update().filter(pk=row.pk))

    try:
        retry_whole_transaction("default", work)
    finally:
        release.set()
        holder.join()
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION innodb_lock_wait_timeout = DEFAULT")
    assert len(attempts) >= 2
    # 1205 rolls back only the statement; the whole transaction was rolled back and re-run.
    assert list(LedgerEntry.objects.filter(job_id=200).values_list("attempt", flat=True)) == [
        len(attempts)
    ]


def test_inside_a_callers_transaction_errors_are_not_retried():
    calls = []

    def work() -> None:
        calls.append(1)
        raise OperationalError(1213, "Deadlock found when trying to get lock")

    with pytest.raises(OperationalError), transaction.atomic():
        retry_whole_transaction("default", work)
    assert calls == [1]


def test_inside_a_short_transaction_errors_are_not_retried():
    """A short transaction is the caller's transaction too, though Django sees no atomic block."""
    calls = []

    def work() -> None:
        calls.append(1)
        raise OperationalError(1213, "Deadlock found when trying to get lock")

    with pytest.raises(OperationalError), short_transaction("default"):
        retry_whole_transaction("default", work)
    assert calls == [1]


def test_a_deadlock_inside_a_short_transaction_reruns_all_of_it(close_thread_connections):
    """The worker claims inside the short transaction that records its finished jobs.

    A deadlock there rolls back the whole transaction, outcomes included. Retried on its own,
    the claim ran again in autocommit, the block went on and "committed": the outcomes were
    lost yet reported written, and their jobs stayed claimed until the reaper took them back
    (one more attempt each). The error must reach the retry around the whole transaction.
    """
    first = LedgerEntry.objects.create(job_id=1, attempt=1, worker="a")
    second = LedgerEntry.objects.create(job_id=2, attempt=1, worker="b")
    both_hold_one = threading.Barrier(2, timeout=20)
    errors: list[BaseException] = []
    outer_runs = []

    def heavier() -> None:
        try:
            with transaction.atomic():
                list(LedgerEntry.objects.select_for_update().filter(pk=second.pk))
                # InnoDB rolls back the transaction that wrote less: the short one.
                heavy = [LedgerEntry(job_id=400, attempt=1, worker="heavy") for _ in range(50)]
                LedgerEntry.objects.bulk_create(heavy)
                both_hold_one.wait()
                list(LedgerEntry.objects.select_for_update().filter(pk=first.pk))
        except BaseException as error:
            errors.append(error)
        finally:
            connections.close_all()

    def claim_like() -> None:
        list(LedgerEntry.objects.select_for_update().filter(pk=second.pk))

    def record_and_claim() -> None:
        outer_runs.append(1)
        with short_transaction("default"):
            LedgerEntry.objects.create(job_id=300, attempt=len(outer_runs), worker="outer")
            list(LedgerEntry.objects.select_for_update().filter(pk=first.pk))
            if len(outer_runs) == 1:
                both_hold_one.wait()
            retry_whole_transaction("default", claim_like)

    thread = threading.Thread(target=heavier)
    thread.start()
    try:
        retry_whole_transaction("default", record_and_claim)
    finally:
        thread.join()
    assert errors == [], "the heavier transaction was not the victim"
    assert len(outer_runs) == 2, "the deadlock reached the retry of the whole transaction"
    # The write made before the deadlock was rolled back, and made again by the second run.
    assert list(LedgerEntry.objects.filter(job_id=300).values_list("attempt", flat=True)) == [2]


def test_only_deadlocks_and_lock_waits_are_retryable():
    assert is_retryable(OperationalError(1213, "deadlock"))
    assert is_retryable(OperationalError(1205, "lock wait timeout"))
    assert not is_retryable(OperationalError(2006, "server has gone away"))
    assert not is_retryable(OperationalError(1062, "duplicate"))
