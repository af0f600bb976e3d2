"""Message ids are bytes: ids differing only in case, accents or trailing spaces are distinct.

With the table's utf8mb4_general_ci, ``publish()`` refused ``order-a`` as a duplicate of
``Order-A`` and ``inbox.receive()`` took a distinct message for a redelivery and dropped it.
PostgreSQL and SQLite already compare text byte for byte; the tests run there too.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.urls import reverse

from django_skipqueue.outbox import Message, inbox, publish, publish_many
from django_skipqueue.outbox.models import InboxMessage, OutboxMessage

pytestmark = pytest.mark.django_db

#: Pairs of distinct ids that a case-, accent- or pad-insensitive comparison takes as one.
PAIRS = [("Order-A", "order-a"), ("k", "k "), ("café", "cafe")]
PAIR_IDS = ["case", "trailing-space", "accent"]
#: publish() may refuse blanks in ids (brokers' rules); these pairs hold none.
PUBLISHABLE = [("Order-A", "order-a"), ("café", "cafe")]


@pytest.mark.parametrize("pair", PUBLISHABLE, ids=["case", "accent"])
def test_publish_stores_messages_whose_ids_differ_only_in_case_or_accents(pair):
    rows = [publish("orders", {"n": n}, key="same", message_id=mid) for n, mid in enumerate(pair)]
    stored = dict(OutboxMessage.objects.values_list("message_id", "payload"))
    assert stored == {pair[0]: {"n": 0}, pair[1]: {"n": 1}}
    assert rows[0].pk != rows[1].pk


@pytest.mark.parametrize("pair", PUBLISHABLE, ids=["case", "accent"])
def test_publish_many_stores_messages_whose_ids_differ_only_in_case_or_accents(pair):
    publish_many([Message("orders", {"n": n}, message_id=mid) for n, mid in enumerate(pair)])
    assert sorted(OutboxMessage.objects.values_list("message_id", flat=True)) == sorted(pair)


@pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
def test_the_outbox_columns_keep_distinct_ids_and_keys(pair):
    """Below publish()'s own checks: the unique message_id and the key column themselves."""
    for n, value in enumerate(pair):
        OutboxMessage.objects.create(
            partition=0, topic="orders", key=value, message_id=value, payload={"n": n}
        )
    for n, value in enumerate(pair):
        assert OutboxMessage.objects.get(message_id=value).payload == {"n": n}
        assert OutboxMessage.objects.get(key=value).message_id == value


@pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
def test_inbox_receives_ids_that_differ_only_in_case_accents_or_trailing_spaces(pair):
    seen = []
    for message_id in (*pair, pair[0]):
        with inbox.receive(message_id, consumer="billing") as fresh:
            seen.append(fresh)
    assert seen == [True, True, False]
    assert sorted(InboxMessage.objects.values_list("message_id", flat=True)) == sorted(pair)


@pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
def test_inbox_consumers_that_differ_only_so_are_distinct_consumers(pair):
    seen = []
    for consumer in pair:
        with inbox.receive("m-1", consumer=consumer) as fresh:
            seen.append(fresh)
    assert seen == [True, True]


@pytest.mark.parametrize("pair", PUBLISHABLE, ids=["case", "accent"])
def test_the_admin_search_finds_a_message_id_as_typed(admin_client, pair):
    """Found as typed everywhere; on MySQL and MariaDB only that id (the admin's ``=`` search
    is ``iexact``, which PostgreSQL and SQLite answer without regard to case)."""
    rows = {mid: publish("orders", {}, message_id=mid) for mid in pair}
    url = reverse("admin:skipqueue_outbox_outboxmessage_changelist")
    for mid in pair:
        found = [row.pk for row in admin_client.get(url, {"q": mid}).context["cl"].result_list]
        assert rows[mid].pk in found
        if connection.vendor == "mysql":
            assert found == [rows[mid].pk]
