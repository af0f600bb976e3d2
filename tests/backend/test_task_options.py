"""The options of issue 20 are checked when @task builds the task: InvalidTaskOption, at import."""

from __future__ import annotations

import pytest

from django_skipqueue.exceptions import InvalidTaskOption, Snooze
from django_skipqueue.tasks import task
from tests.support.tasks import noop


def plain() -> None:
    """A module-level function for the decorator (a local one fails an earlier check)."""


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
]


@pytest.mark.parametrize(
    ("options", "message"),
    [case[1:] for case in BAD_OPTIONS],
    ids=[case[0] for case in BAD_OPTIONS],
)
def test_a_bad_option_is_refused_when_the_task_is_defined(options, message):
    with pytest.raises(InvalidTaskOption, match=message):
        task(**options)(plain)


def test_good_options_are_accepted():
    defined = task(retry_on=ValueError, discard_on=[KeyError], backoff=backoff, max_snoozes=0)(
        plain
    )
    assert defined.retry_on is ValueError


@pytest.mark.parametrize("option", ["retry_on", "discard_on", "backoff", "max_snoozes"])
def test_the_worker_reads_them_from_the_decorator_only(option):
    with pytest.raises(InvalidTaskOption, match="decorator"):
        noop.using(**{option: None})


@pytest.mark.parametrize("seconds", [-1, "5", True, None])
def test_snooze_takes_seconds(seconds):
    with pytest.raises(ValueError, match="Snooze takes seconds"):
        Snooze(seconds)
