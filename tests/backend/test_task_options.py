"""The options of issue 20 are checked when @task builds the task: InvalidTaskOption, at import."""

from __future__ import annotations

import pytest

from django_skipqueue.exceptions import InvalidTaskOption, Snooze
from django_skipqueue.tasks import task
from tests.support.tasks import noop


def plain() -> None:
    """A module-level function for the decorator (a local one fails an earlier check)."""


def keyed(order_id: int, note: str = "") -> None:
    """A module-level function with parameters, for unique_key templates."""


def backoff(error: BaseException, attempt: int) -> float:
    return 1.0


BAD_OPTIONS = [
    ("retry_on not a class", {"retry_on": "ValueError"}, "retry_on must be an exception class"),
    ("retry_on not an exception", {"retry_on": (ValueError, int)}, "retry_on must be"),
    ("retry_on empty", {"retry_on": []}, "retry_on must be"),
    ("discard_on an instance", {"discard_on": ValueError("x")}, "discard_on must be"),
    ("backoff a number", {"backoff": 5}, "backoff must be a callable"),
    ("both backoffs", {"backoff": backoff, "retry_backoff": 2}, "not both"),
    ("max_snoozes negative", {"max_snoozes": -1}, "max_snoozes must be a whole number"),
    ("max_snoozes a float", {"max_snoozes": 1.5}, "max_snoozes must be a whole number"),
    ("unique_key a number", {"unique_key": 5}, "unique_key must be a template string"),
    ("unique_key unknown name", {"unique_key": "o-{order}"}, "unknown: \\['order'\\]"),
    ("unique_key empty braces", {"unique_key": "o-{}"}, "an empty"),
    ("unique_key bad template", {"unique_key": "o-{order_id"}, "not a valid template"),
    (
        "unique_replace unknown",
        {"unique_key": "{order_id}", "unique_replace": ("kwargs",)},
        "'args'",
    ),
    ("unique_replace a string", {"unique_key": "{order_id}", "unique_replace": "args"}, "tuple"),
    ("unique_while unknown", {"unique_while": ("waiting",)}, "unique_while must be"),
    ("unique_while empty", {"unique_while": ()}, "unique_while must be"),
    ("unique_while a string", {"unique_while": "ready"}, "unique_while must be"),
    ("unique_replace without key", {"unique_replace": ("args",)}, "needs a unique_key"),
]


@pytest.mark.parametrize(
    ("options", "message"),
    [case[1:] for case in BAD_OPTIONS],
    ids=[case[0] for case in BAD_OPTIONS],
)
def test_a_bad_option_is_refused_when_the_task_is_defined(options, message):
    with pytest.raises(InvalidTaskOption, match=message):
        task(**options)(keyed)


def test_good_options_are_accepted():
    defined = task(retry_on=ValueError, discard_on=[KeyError], backoff=backoff, max_snoozes=0)(
        plain
    )
    assert defined.retry_on is ValueError
    keyed_task = task(unique_key="o-{order_id}-{note}", unique_replace=["run_after"])(keyed)
    assert keyed_task.unique_key == "o-{order_id}-{note}"


def test_a_call_the_key_cannot_be_derived_from_is_refused_at_enqueue():
    keyed_task = task(unique_key=lambda order_id, note="": None)(keyed)
    with pytest.raises(InvalidTaskOption, match="must give a non-empty string"):
        keyed_task.enqueue(1)


@pytest.mark.parametrize("option", ["retry_on", "discard_on", "backoff", "max_snoozes"])
def test_the_worker_reads_them_from_the_decorator_only(option):
    with pytest.raises(InvalidTaskOption, match="decorator"):
        noop.using(**{option: None})


@pytest.mark.parametrize("seconds", [-1, "5", True, None])
def test_snooze_takes_seconds(seconds):
    with pytest.raises(ValueError, match="Snooze takes seconds"):
        Snooze(seconds)
