"""The inbox: a message id is processed once per consumer, in the consumer's transaction."""

from __future__ import annotations

import pytest

from django_skipqueue.outbox import inbox
from django_skipqueue.outbox.models import InboxMessage

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_redelivered_message_is_skipped_and_other_consumers_still_get_it():
    seen = []
    for consumer in ("billing", "billing", "shipping"):
        with inbox.receive("m-1", consumer=consumer) as fresh:
            seen.append((consumer, fresh))
    assert seen == [("billing", True), ("billing", False), ("shipping", True)]
    assert InboxMessage.objects.count() == 2


def test_a_failed_consumer_leaves_no_record_so_the_redelivery_is_processed():
    with pytest.raises(RuntimeError), inbox.receive("m-2") as fresh:
        assert fresh
        raise RuntimeError("the consumer's write failed")
    with inbox.receive("m-2") as fresh:
        assert fresh
    assert InboxMessage.objects.filter(message_id="m-2").count() == 1
