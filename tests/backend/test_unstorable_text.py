"""Text no database stores (NUL, a lone surrogate) is refused at the call, the same way on every
database, and the call changes nothing: keys, derived keys, inbox ids, reservation labels."""

from __future__ import annotations

import pytest

from django_skipqueue import reservations
from django_skipqueue.exceptions import (
    InvalidMessage,
    InvalidPayload,
    InvalidReservation,
    InvalidTaskOption,
)
from django_skipqueue.models import Job
from django_skipqueue.outbox.inbox import receive
from django_skipqueue.outbox.models import InboxMessage
from django_skipqueue.reservations.models import Reservation
from django_skipqueue.tasks import task
from tests.support.tasks import echo, sync_account

pytestmark = pytest.mark.django_db

UNSTORABLE = ["a\x00b", "\ud800", "x" * 10 + "\udfff"]


@pytest.mark.parametrize("key", UNSTORABLE)
def test_an_idempotency_key_no_database_stores_is_refused_and_the_next_call_goes_in(key):
    with pytest.raises(InvalidTaskOption, match="no database stores it"):
        echo.using(idempotency_key=key).enqueue(1)
    assert not Job.objects.exists()
    assert Job.objects.get(pk=echo.using(idempotency_key="fine").enqueue(2).id).args == [2]


def nul_key(account_id: int) -> str:
    return f"account\x00{account_id}"


@task(unique_key=nul_key)
def sync_with_nul_key(account_id: int) -> None:
    """A task whose key callable puts NUL into a key from clean arguments."""


def test_a_key_derived_from_arguments_no_database_stores_is_refused():
    with pytest.raises(InvalidTaskOption, match="NUL at 7"):
        sync_with_nul_key.enqueue(7)
    with pytest.raises(InvalidPayload, match="NUL"):  # the arguments are checked first
        sync_account.enqueue("7\x00")
    assert not Job.objects.exists()


@pytest.mark.parametrize("message_id", [*UNSTORABLE, "", "é" * 256])
def test_an_inbox_id_no_column_keeps_is_refused_before_any_statement(message_id):
    with pytest.raises(InvalidMessage), receive(message_id):
        pytest.fail("the block must not run")
    with receive("m-1") as fresh:
        assert fresh
    assert list(InboxMessage.objects.values_list("message_id", flat=True)) == ["m-1"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("holder", UNSTORABLE)
def test_a_holder_no_database_stores_holds_nothing(holder):
    reservations.restock(1, 1, 2)
    with pytest.raises(InvalidReservation, match="no database stores it"):
        reservations.reserve(1, 1, 1, holder=holder, ttl=60)
    assert not Reservation.objects.exists() and reservations.available(1, 1) == 2
    reservations.reserve(1, 1, 1, holder="cart-1", ttl=60)
    assert reservations.available(1, 1) == 1
