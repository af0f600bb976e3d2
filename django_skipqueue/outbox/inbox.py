"""The consumer side: record each message id in the consumer's own transaction, once.

At-least-once delivery means a consumer sees some messages twice. Recording the id under a
UNIQUE index in the same transaction as the consumer's writes makes the second delivery find
the record, and a crash before the commit loses both the writes and the record, so the
redelivery does the work again: effectively once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import IntegrityError, router, transaction

from .models import InboxMessage


@contextmanager
def receive(message_id: str, *, consumer: str = "", using: str | None = None) -> Iterator[bool]:
    """Run the block in a transaction that records ``message_id``; yield whether it is new.

    ``with receive(message_id) as fresh: if fresh: ...``. An exception in the block rolls the
    record back with the consumer's writes, so the message counts as not received.
    """
    alias = using or router.db_for_write(InboxMessage)
    with transaction.atomic(using=alias):
        yield _record(alias, consumer, message_id)


def _record(alias: str, consumer: str, message_id: str) -> bool:
    try:
        # A savepoint: the duplicate's error must not break the consumer's transaction.
        with transaction.atomic(using=alias):
            InboxMessage.objects.using(alias).create(consumer=consumer, message_id=message_id)
    except IntegrityError:
        return False
    return True
