"""Input every database would refuse is refused at the call, the same on every database.

Arguments nested deeper than MariaDB's JSON depth, or holding a lone surrogate (or a NUL,
which PostgreSQL's JSON cannot hold), used to pass the payload check and fail in the INSERT
(IntegrityError, DataError, RecursionError), or be stored on some databases only. A queue
name with a trailing newline passed the pattern's ``$``. A row whose args are not a JSON
array (written behind the backend's back) was retried ``max_attempts`` times. Runs on
MariaDB, PostgreSQL and SQLite.
"""

from __future__ import annotations

import pytest
from django.db.models import JSONField, Value

from django_skipqueue.backend import QUEUE_NAME_PATTERN
from django_skipqueue.exceptions import InvalidPayload, InvalidQueueName, InvalidStoredPayload
from django_skipqueue.models import Job, JobStatus
from django_skipqueue.payload import MAX_DEPTH
from django_skipqueue.queues import check_queue
from django_skipqueue.testing import run_jobs
from tests.support.tasks import echo

pytestmark = pytest.mark.django_db


def nested(levels: int, inner: object = 1) -> object:
    """``inner`` inside ``levels`` lists, built without recursion."""
    value = inner
    for _ in range(levels):
        value = [value]
    return value


def _enqueue_each_way(backend, args: list, kwargs: dict) -> list[BaseException | str]:
    """Enqueue the call alone, in a plain bulk and in a keyed bulk; what each did."""
    outcomes: list[BaseException | str] = []
    for call in (
        lambda: echo.enqueue(*args, **kwargs),
        lambda: backend.enqueue_many([(echo, args, kwargs)] * 2),
        lambda: backend.enqueue_many([(echo.using(idempotency_key="k"), args, kwargs)]),
    ):
        try:
            call()
            outcomes.append("stored")
        except Exception as error:
            outcomes.append(error)
    return outcomes


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ([nested(MAX_DEPTH)], {}),  # args array + 31 lists = 32 levels: MariaDB refuses
        ([nested(MAX_DEPTH - 1, [])], {}),  # an empty list is a level too
        ([], {"deep": nested(MAX_DEPTH)}),
        ([{"a": nested(MAX_DEPTH - 1, {})}], {}),
        ([nested(100_000)], {}),  # past Python's recursion limit
        (["\ud800"], {}),
        (["ok", "a\udc00b"], {}),
        ([], {"\udfff": 1}),
        ([["\U0001f600", "\ud83d"]], {}),  # a pair's first half alone, next to a real pair
        (["a\x00b"], {}),  # PostgreSQL's JSON has no NUL
        ([], {"k\\\x00": 1}),
    ],
    ids=lambda value: None,  # numbered: the arguments are too long to name the tests
)
def test_arguments_no_database_stores_are_refused_at_the_call(backend, args, kwargs):
    outcomes = _enqueue_each_way(backend, args, kwargs)
    assert all(isinstance(outcome, InvalidPayload) for outcome in outcomes), outcomes
    assert Job.objects.count() == 0, "nothing else is changed"


def test_the_deepest_and_widest_unicode_arguments_are_stored_as_written(backend):
    deepest = [nested(MAX_DEPTH - 1), {"k": nested(MAX_DEPTH - 3, {})}]  # 31 levels each
    text = "".join(map(chr, (1, 0x7F, 0xE9, 0xFFFD, 0xD7FF, 0xE000, 0x10000, 0x1F600, 0x10FFFF)))
    text += "\\u0000 \\ud800"  # escapes' look-alikes: backslashes written by the caller
    args, kwargs = [*deepest, text], {text: text}
    assert _enqueue_each_way(backend, args, kwargs) == ["stored"] * 3
    stored = list(Job.objects.order_by("pk").values_list("args", "kwargs"))
    assert stored == [(args, kwargs)] * 4


def test_the_refusal_says_why(backend):
    with pytest.raises(InvalidPayload, match=r"args\[0\]\[0\].* nested deeper than 31 levels"):
        echo.enqueue(nested(100_000))
    with pytest.raises(InvalidPayload, match=r"lone surrogate '\\udc00'"):
        echo.enqueue("text", "a\udc00b")


@pytest.mark.parametrize("name", ["default\n", "default\n\n", "\ndefault", "high\r"])
def test_a_queue_name_with_a_newline_is_invalid(backend, name):
    assert QUEUE_NAME_PATTERN.fullmatch(name) is None
    with pytest.raises(InvalidQueueName):
        echo.using(queue_name=name).enqueue()
    with pytest.raises(InvalidQueueName):
        backend.enqueue_many([(echo.using(queue_name=name), [], {})])
    with pytest.raises(InvalidQueueName):
        check_queue("default", name)
    assert Job.objects.count() == 0


@pytest.mark.django_db(transaction=True)  # the job runs on the executor's own thread
@pytest.mark.parametrize("stored", [{"a": 1}, "text", 7, None], ids=repr)
def test_a_row_whose_args_are_not_an_array_fails_once_and_is_not_retried(stored):
    bad = echo.using(priority=20).enqueue(1)  # claimed first
    good = echo.enqueue(2)
    # Value(None, JSONField()) is JSON null, not SQL NULL.
    Job.objects.filter(pk=bad.id).update(args=Value(stored, JSONField()), max_attempts=3)
    run = run_jobs(scheduled=True)
    job = Job.objects.get(pk=bad.id)
    assert (job.status, job.attempts) == (JobStatus.FAILED, 1)
    [error] = job.errors
    assert error["exception_class_path"] == (
        f"{InvalidStoredPayload.__module__}.{InvalidStoredPayload.__qualname__}"
    )
    assert "a JSON array and a JSON object are expected. Not retried" in error["traceback"]
    assert Job.objects.get(pk=good.id).status == JobStatus.SUCCEEDED, "the next job ran"
    assert run.job_ids == [int(bad.id), int(good.id)]
