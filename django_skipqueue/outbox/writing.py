"""publish() and publish_many(): check every message, then write them all in one INSERT."""

from __future__ import annotations

import json
import random
import uuid
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Any

from django.db import IntegrityError, connections, models, router, transaction
from django.db.models import AutoField, Field
from django.db.models.expressions import DatabaseDefault
from django.db.models.sql import InsertQuery

from django_skipqueue.conf import get_settings
from django_skipqueue.db import packets
from django_skipqueue.exceptions import (
    DuplicateMessage,
    InvalidMessage,
    MessageTooLarge,
    UnknownTopic,
)
from django_skipqueue.outbox.models import CompactJSONEncoder, OutboxMessage
from django_skipqueue.outbox.transports import names
from django_skipqueue.payload import unstorable_json

MAX_FIELD = 255


@dataclass(frozen=True, slots=True)
class Message:
    """One message for publish_many(), with the same meaning as publish()'s arguments."""

    topic: str
    payload: Any
    key: str = ""
    message_id: str | None = None
    headers: Mapping[str, str] | None = field(default=None)


def publish_messages(messages: Iterable[Message], using: str | None) -> list[OutboxMessage]:
    """Check ``messages`` and insert them in the current transaction, all or none."""
    rows = [_row(message) for message in messages]
    _refuse_repeated_ids(rows)
    if not rows:
        return []
    alias = using or router.db_for_write(OutboxMessage)
    try:
        created = _insert_cut(rows, alias)
    except IntegrityError as error:
        raise DuplicateMessage(
            f"An outbox message with one of these ids exists: {error}"
        ) from error
    from django_skipqueue.outbox.relays import after_commit  # the wake-up reads the relays table

    after_commit(alias, {row.partition for row in rows})
    return created


def _insert_cut(rows: list[OutboxMessage], alias: str) -> list[OutboxMessage]:
    """Insert ``rows`` with one INSERT, or with several, all or none, where one would pass
    the server's ``max_allowed_packet`` (see :mod:`django_skipqueue.db.packets`)."""
    runs = _runs(rows, connections[alias])
    if len(runs) == 1:
        return _insert(rows, alias)
    with transaction.atomic(using=alias):
        return [row for run in runs for row in _insert(rows[run.start : run.stop], alias)]


def _runs(rows: list[OutboxMessage], connection: Any) -> list[range]:
    """Runs of rows that fit one statement each: from the payload limit, or where that bound
    is past the packet limit, from each payload's length (encoded once more)."""
    budget = packets.packet_budget(connection) if len(rows) > 1 else None
    if budget is None:
        return [range(len(rows))]
    sizes = [_text_bytes(row) + 2 * _payload_bytes(row) + 2 for row in rows]
    if sum(sizes) <= budget:
        return [range(len(rows))]
    return packets.cut(sizes, budget)


def _payload_bytes(row: OutboxMessage) -> int:
    """The bytes of the row's payload as compact JSON: measured by publish()'s check (no
    second encoding), or measured here for a row built elsewhere."""
    size: int | None = getattr(row, "payload_bytes", None)
    return size if size is not None else len(CompactJSONEncoder().encode(row.payload))


def _text_bytes(row: OutboxMessage) -> int:
    """An upper bound of the bytes of the row's values besides its payload, quoted."""
    headers = [*row.headers, *row.headers.values()]
    texts = (row.topic, row.key, row.message_id)
    return sum(map(packets.quoted_bytes, texts)) + sum(map(packets.in_json_bytes, headers)) + 256


def _insert(rows: list[OutboxMessage], alias: str) -> list[OutboxMessage]:
    """Insert ``rows`` with one statement; a duplicate id leaves the caller's transaction usable.

    MySQL/MariaDB and SQLite undo just the statement that failed, so one INSERT needs no
    savepoint (two more round trips, most of what publish() cost beyond enqueue()). It runs
    outside any ``atomic`` block of its own: one that failed would mark the caller's
    transaction for rollback. PostgreSQL aborts the whole transaction on an error, and rows
    that take more than one statement must go in all or none: those take a savepoint.
    """
    connection = connections[alias]
    meta = OutboxMessage._meta
    fields = [
        column
        for column in meta.concrete_fields
        if not isinstance(column, AutoField)
        and not column.generated
        # Left out when no row sets it: the database writes its default.
        and not all(isinstance(getattr(row, column.attname), DatabaseDefault) for row in rows)
    ]
    if connection.vendor not in ("mysql", "sqlite") or len(rows) > max(
        connection.ops.bulk_batch_size(fields, rows), 1
    ):
        with transaction.atomic(using=alias):
            return OutboxMessage.objects.using(alias).bulk_create(rows)
    query = InsertQuery(OutboxMessage)
    query.insert_values(fields, list[models.Model](rows))
    returning: list[Field[Any, Any]] | None = None
    if connection.features.can_return_rows_from_bulk_insert:
        returning = list(meta.db_returning_fields)
    elif len(rows) == 1:
        returning = [meta.pk] if meta.pk is not None else None
    answers = query.get_compiler(using=alias).execute_sql(returning)
    for row, values in zip_longest(rows, answers or ()):
        for column, value in zip(returning or (), values or (), strict=False):
            setattr(row, column.attname, value)
        row._state.adding = False
        row._state.db = alias
    return rows


def partition_of(key: str, partitions: int) -> int:
    """Return the partition of ``key``; messages without a key go to any partition."""
    if not key:
        return random.randrange(partitions)
    return zlib.crc32(key.encode()) % partitions


def _row(message: Message) -> OutboxMessage:
    settings = get_settings()
    if message.topic not in settings.OUTBOX_TOPICS:
        raise UnknownTopic(
            f"The outbox topic {message.topic!r} is not in SKIPQUEUE_OUTBOX_TOPICS."
        )
    _check_destination(message.topic, settings.OUTBOX_TOPICS[message.topic])
    _check_text("key", message.key, allow_empty=True)
    _check_name("key", message.key, names.subject_problem)
    message_id = message.message_id if message.message_id is not None else uuid.uuid4().hex
    _check_text("message_id", message_id, allow_empty=False)
    _check_name("message_id", message_id, _id_problem)
    payload, size = _checked_payload(message.payload, settings.OUTBOX_MAX_PAYLOAD_BYTES)
    row = OutboxMessage(
        partition=partition_of(message.key, settings.OUTBOX_PARTITIONS),
        topic=message.topic,
        key=message.key,
        message_id=message_id,
        payload=payload,
        headers=_checked_headers(_traced(message.headers)),
    )
    row.payload_bytes = size  # type: ignore[attr-defined]  # what _runs() cuts bulks by
    return row


def _traced(headers: Any) -> Any:
    """The headers plus the current trace context, with SKIPQUEUE_TRACING on."""
    from django_skipqueue.monitoring import tracing

    return tracing.with_context(headers) if tracing.enabled() else headers


def _checked_payload(payload: Any, limit: int) -> tuple[Any, int]:
    """Return ``payload`` and its size as compact JSON, if JSON carries it unchanged, every
    database stores it alike and it fits ``limit`` bytes."""
    if payload is None:
        raise InvalidMessage(
            "The outbox payload is None, which the outbox column cannot tell from no payload: "
            "publish a JSON value other than null (a dict, say)."
        )
    try:
        encoded = json.dumps(payload, allow_nan=False, separators=(",", ":"))
    except RecursionError as error:
        raise InvalidMessage(f"The outbox payload nests too deep to encode: {error}.") from error
    except (TypeError, ValueError) as error:
        raise InvalidMessage(f"The outbox payload is not JSON: {error}") from error
    if json.loads(encoded) != payload or isinstance(payload, tuple):
        raise InvalidMessage(
            "The outbox payload would change on its way through JSON (tuples, non-string "
            "keys): pass plain dicts, lists, strings, numbers, booleans and None."
        )
    problem = unstorable_json(payload, encoded)
    if problem:
        raise InvalidMessage(f"The outbox payload {problem}.")
    if len(encoded) > limit:
        raise MessageTooLarge(
            f"The outbox payload is {len(encoded)} bytes of JSON, over the {limit} byte limit "
            "(SKIPQUEUE_OUTBOX_MAX_PAYLOAD_BYTES). Publish a reference to the data instead."
        )
    return payload, len(encoded)


def _checked_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    headers = dict(headers or {})
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str) or not name:
            raise InvalidMessage(f"Outbox headers map names to strings: {name!r}: {value!r}.")
        _check_name(f"header name {name!r}", name, names.header_name_problem)
        _check_name(f"header {name!r}", value, names.header_value_problem)
    return headers


def _check_destination(topic: str, destination: str | None) -> None:
    """Refuse a topic whose exchange or subject would break the subject of every message
    (the system check django_skipqueue.E204 names it at start-up too)."""
    problem = names.subject_problem(destination or topic)
    if problem is not None:
        raise InvalidMessage(
            f"The destination of the outbox topic {topic!r} in SKIPQUEUE_OUTBOX_TOPICS "
            f"{problem}: an exchange or subject takes no blanks, control characters, '*' or '>'."
        )


def _check_name(what: str, value: str, problem_of: Callable[[str], str | None]) -> None:
    """Refuse ``value`` if a broker would refuse it, cut it or read it as protocol."""
    problem = problem_of(value)
    if problem is not None:
        raise InvalidMessage(
            f"The outbox {what} {problem}: keys and ids go on the wire as AMQP short strings "
            "(255 bytes) and NATS subjects and headers (no blanks, control characters, '*' or "
            "'>' in a key)."
        )


def _id_problem(message_id: str) -> str | None:
    """A message id is an AMQP short string and NATS's Nats-Msg-Id header value."""
    return names.header_value_problem(message_id) or names.length_problem(message_id)


def _check_text(name: str, value: object, *, allow_empty: bool) -> None:
    if not isinstance(value, str) or len(value) > MAX_FIELD or (not value and not allow_empty):
        raise InvalidMessage(f"The outbox {name} must be a string of 1 to {MAX_FIELD} characters.")


def _refuse_repeated_ids(rows: list[OutboxMessage]) -> None:
    seen: set[str] = set()
    for row in rows:
        if row.message_id in seen:
            raise DuplicateMessage(f"The message id {row.message_id!r} is given twice.")
        seen.add(row.message_id)
