"""Every public entry point against generated hostile input, on the real database.

The property, the same for each: what a call is given either comes back byte for byte from
the stored row, or the call refuses it with its documented exception and changes nothing.
An IntegrityError, a DataError, a UnicodeEncodeError or a RecursionError from the depths is a
failure: the caller cannot tell it from a fault of the database.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection, transaction
from hypothesis import strategies as st

from django_skipqueue.compat import InvalidTask, task_backends
from django_skipqueue.exceptions import (
    DuplicateMessage,
    InvalidMessage,
    InvalidPayload,
    InvalidSchedule,
)
from django_skipqueue.models import Job
from django_skipqueue.outbox import Message, publish, publish_many
from django_skipqueue.outbox.inbox import receive
from django_skipqueue.outbox.models import InboxMessage, OutboxMessage
from django_skipqueue.scheduling.definition import from_setting
from tests.properties.strategies import hostile_text, json_values, run, seeded
from tests.support.tasks import echo

pytestmark = pytest.mark.django_db


class _Undo(Exception):
    """Raised to roll back one example's savepoint."""


@contextmanager
def example() -> Iterator[None]:
    """Run one example in a savepoint that is always rolled back: examples stay independent."""
    try:
        with transaction.atomic():
            yield
            raise _Undo
    except _Undo:
        pass


def as_json(value: Any) -> Any:
    """``value`` as JSON gives it back: tuples are lists (the contract of django.tasks)."""
    if isinstance(value, list | tuple):
        return [as_json(item) for item in value]
    if isinstance(value, dict):
        return {key: as_json(item) for key, item in value.items()}
    return value


def same(stored: Any, given: Any) -> bool:
    """Equal, and of the same JSON type all the way down (1 and 1.0 and True differ).

    PostgreSQL's jsonb keeps numbers as ``numeric``: a whole float that JSON writes with an
    exponent (1e+16) comes back without a fraction, as an int: the same float once read back
    as one (docs/reference/limits.md)."""
    if isinstance(given, float) and isinstance(stored, float):
        return stored == given or (math.isnan(stored) and math.isnan(given))
    if isinstance(given, float) and type(stored) is int and connection.vendor == "postgresql":
        return "e" in repr(given) and float(stored) == given
    if type(stored) is not type(given):
        return False
    if isinstance(given, list):
        return len(stored) == len(given) and all(map(same, stored, given))
    if isinstance(given, dict):
        return stored.keys() == given.keys() and all(same(stored[k], given[k]) for k in given)
    return bool(stored == given)


@seeded
def test_enqueue_stores_what_it_is_given_or_refuses_it(seed_value):
    def body(args: list[Any], kwargs: dict[str, Any], key: str | None) -> None:
        with example():
            try:
                task = echo if key is None else echo.using(idempotency_key=key)
                result = task.enqueue(*args, **kwargs)
            except (InvalidTask, InvalidPayload):
                assert not Job.objects.exists()
                return
            job = Job.objects.get(pk=result.id)
            assert same(job.args, as_json(args)) and same(job.kwargs, as_json(kwargs))
            assert job.idempotency_key == key

    run(
        seed_value,
        body,
        st.lists(json_values, max_size=3),
        st.dictionaries(hostile_text, json_values, max_size=2),
        st.none() | hostile_text,
    )


@seeded
def test_enqueue_many_stores_every_call_or_none(seed_value):
    def body(calls: list[tuple[list[Any], str | None]]) -> None:
        with example():
            try:
                tasks = [echo if k is None else echo.using(idempotency_key=k) for _, k in calls]
                results = task_backends["default"].enqueue_many(
                    [(task, args, {}) for task, (args, _) in zip(tasks, calls, strict=True)]
                )
            except (InvalidTask, InvalidPayload):
                assert not Job.objects.exists()
                return
            # A key given twice in one bulk: the later call gets the first call's job.
            first = {key: args for args, key in reversed(calls) if key is not None}
            for result, (args, key) in zip(results, calls, strict=True):
                expected = args if key is None else first[key]
                assert same(Job.objects.get(pk=result.id).args, as_json(expected))
            assert Job.objects.count() == sum(key is None for _, key in calls) + len(first)

    run(seed_value, body, st.lists(st.tuples(st.lists(json_values, max_size=2),
                                             st.none() | hostile_text), max_size=5))  # fmt: skip


@seeded
def test_publish_stores_what_it_is_given_or_refuses_it(seed_value):
    def body(payload: Any, key: str, message_id: str, headers: dict[str, str]) -> None:
        with example():
            try:
                row = publish("orders", payload, key=key, message_id=message_id, headers=headers)
            except InvalidMessage:
                assert not OutboxMessage.objects.exists()
                return
            stored = OutboxMessage.objects.get(pk=row.pk)
            assert (stored.key, stored.message_id) == (key, message_id)
            assert same(stored.payload, payload)
            assert {k: v for k, v in stored.headers.items() if k in headers} == headers

    run(
        seed_value,
        body,
        json_values,
        hostile_text,
        hostile_text,
        st.dictionaries(hostile_text, hostile_text, max_size=2),
    )


@seeded
def test_publish_many_stores_every_message_or_none(seed_value):
    def body(messages: list[tuple[str, str]]) -> None:
        with example():
            try:
                rows = publish_many(
                    [
                        Message("orders", {"n": n}, key=k, message_id=m)
                        for n, (k, m) in enumerate(messages)
                    ]
                )
            except (InvalidMessage, DuplicateMessage):
                assert not OutboxMessage.objects.exists()
                return
            stored = OutboxMessage.objects.in_bulk([row.pk for row in rows])
            assert [(stored[row.pk].key, stored[row.pk].message_id) for row in rows] == messages

    run(seed_value, body, st.lists(st.tuples(hostile_text, hostile_text), max_size=5))


@seeded
def test_the_inbox_records_each_distinct_id_once(seed_value):
    def body(first: str, second: str) -> None:
        with example():
            try:
                with receive(first, consumer="c") as fresh:
                    assert fresh
                with receive(first, consumer="c") as again:
                    assert not again, "the same id twice is a redelivery"
                with receive(second, consumer="c") as other:
                    assert other == (second != first), "a distinct id is a distinct message"
            except InvalidMessage:
                return
            stored = set(InboxMessage.objects.values_list("message_id", flat=True))
            assert stored == {first, second}

    run(seed_value, body, hostile_text, hostile_text)


@seeded
def test_a_schedule_definition_is_read_or_refused_with_invalid_schedule(seed_value):
    def body(name: Any, entry: Any) -> None:
        try:
            definition = from_setting(name, entry)
        except InvalidSchedule:
            return
        assert definition.name == name

    entries = st.fixed_dictionaries(
        {"task": st.sampled_from(["tests.support.tasks.noop", "this.x"]) | hostile_text},
        optional={
            "cron": hostile_text | st.sampled_from(["*/5 * * * *", "0 0 31 2 *", "@daily"]),
            "interval": st.integers(-5, 10**12) | hostile_text,
            "time_zone": hostile_text | st.sampled_from(["UTC", "Europe/Paris", "../etc"]),
            "args": st.lists(json_values, max_size=2) | hostile_text,
            "queue": hostile_text,
        },
    )
    run(seed_value, body, hostile_text | st.sampled_from(["nightly", "a" * 100]), entries)
