"""Deadlocks and lock-wait timeouts retry the whole transaction, never half of it."""

from __future__ import annotations

import threading

import pytest
from django.db import OperationalError, connection, connections, transaction

from django_skipqueue.db.statements import is_retryable, retry_whole_transaction
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


def test_only_deadlocks_and_lock_waits_are_retryable():
    assert is_retryable(OperationalError(1213, "deadlock"))
    assert is_retryable(OperationalError(1205, "lock wait timeout"))
    assert not is_retryable(OperationalError(2006, "server has gone away"))
    assert not is_retryable(OperationalError(1062, "duplicate"))
