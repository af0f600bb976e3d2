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

from django_skipqueue.apps import require_installed
from django_skipqueue.db.text import unstorable
from django_skipqueue.exceptions import InvalidMessage
from django_skipqueue.outbox.models import InboxMessage

#: The longest message id and consumer name the inbox stores (their columns' lengths).
MAX_MESSAGE_ID = 255
MAX_CONSUMER = 100


@contextmanager
def receive(message_id: str, *, consumer: str = "", using: str | None = None) -> Iterator[bool]:
    """Run the block in a transaction that records ``message_id``; yield whether it is new.

    ``with receive(message_id) as fresh: if fresh: ...``. An exception in the block rolls the
    record back with the consumer's writes, so the message counts as not received. An id or
    consumer that no column can hold as given raises ``InvalidMessage`` before any statement.
    """
    require_installed("django_skipqueue.outbox", "django_skipqueue.outbox.inbox.receive()")
    _check("message_id", message_id, MAX_MESSAGE_ID, allow_empty=False)
    _check("consumer", consumer, MAX_CONSUMER, allow_empty=True)
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


def _check(name: str, value: object, limit: int, *, allow_empty: bool) -> None:
    """Refuse what would be cut, refused or changed by the column: ids compare as stored."""
    if not isinstance(value, str) or len(value) > limit or (not value and not allow_empty):
        least = 0 if allow_empty else 1
        raise InvalidMessage(
            f"The inbox {name} must be a string of {least} to {limit} characters."
        )
    problem = unstorable(value)
    if problem:
        raise InvalidMessage(f"The inbox {name} holds {problem}: no database stores it as text.")
