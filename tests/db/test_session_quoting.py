"""Values quoted by the driver follow the session: its sql_mode and its character set.

A single enqueue keeps the quoted text of values that repeat (queue, task path, options); a
key from the caller's arguments, quoted in one session state and sent in another, would end
its string early. Bulks write shared values as literals in the connection's character set.
Run on the real MariaDB/MySQL: the quoting is the driver's, the parsing the server's.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection

from django_skipqueue.exceptions import InvalidTaskOption
from django_skipqueue.models import Job
from django_skipqueue.states import KEYED_MASK
from tests.support.flow_tasks import limited
from tests.support.tasks import echo, sync_account

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.mysql]

PREFIX = "tests.support.flow_tasks.limited:customer:"
#: Each breaks out of a string quoted in one sql_mode and read in the other.
HOSTILE = ["x', 1, 0) -- ", "x\\', 1, 0) -- ", "表'\\\n\r\x1a\"%s"]  # (arguments hold no NUL)


def _set_backslash_escapes(on: bool) -> None:
    mode = "REPLACE(@@sql_mode, 'NO_BACKSLASH_ESCAPES', '')"
    if not on:
        mode = "CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')"
    with connection.cursor() as cursor:
        cursor.execute(f"SET SESSION sql_mode = {mode}")


def _rows() -> list[tuple]:
    columns = ("flow_key", "flow_slot", "key_statuses", "status", "queue_name", "task_path")
    return list(Job.objects.order_by("pk").values_list(*columns, "args"))


@pytest.mark.parametrize("first_mode_escapes", [True, False], ids=["default-first", "nbe-first"])
def test_a_key_stays_a_string_when_the_session_changes_its_sql_mode(first_mode_escapes):
    try:
        for round_ in range(2):
            _set_backslash_escapes(first_mode_escapes if round_ == 0 else not first_mode_escapes)
            for seq, key in enumerate(HOSTILE):
                limited.enqueue(key, seq, 0.0)
    finally:
        _set_backslash_escapes(True)
    rows = _rows()
    assert len(rows) == 2 * len(HOSTILE)
    expected = [
        (PREFIX + key, True, KEYED_MASK, "ready", "default", "tests.support.flow_tasks.limited")
        for key in HOSTILE
    ]
    # Two slots per key: both of each key's jobs are admitted, every column as written.
    assert [row[:6] for row in rows] == expected * 2
    assert [row[6] for row in rows] == [[key, seq, 0.0] for seq, key in enumerate(HOSTILE)] * 2


def test_a_key_stays_a_string_when_the_session_changes_its_character_set():
    connection.ensure_connection()
    raw = connection.connection
    try:
        for charset in ("utf8mb4", "cp932", "gbk", "utf8mb4"):
            raw.set_character_set(charset)
            limited.enqueue(HOSTILE[2], 0, 0.0)
    finally:
        connection.close()
    assert [row[0] for row in _rows()] == [PREFIX + HOSTILE[2]] * 4


@pytest.fixture(params=["latin1", "gbk", "cp932"])
def charset(request) -> Iterator[str]:
    """The default connection reopened with DATABASES OPTIONS charset = the parameter."""
    connection.close()
    options = connection.settings_dict.setdefault("OPTIONS", {})
    before = dict(options)
    options["charset"] = request.param
    try:
        yield request.param
    finally:
        connection.close()
        options.clear()
        options.update(before)


#: Keys each character set can carry; cp932 and gbk have characters whose second byte is a
#: backslash (表, 縗), which the driver must not escape as one.
KEYS = {
    "latin1": ["café", "naïve'\\", "plain"],
    "gbk": ["表", "縗'\\", "é中"],
    "cp932": ["表", "ソ'\\", "能"],
}


def test_keyed_bulks_work_on_a_connection_of_another_character_set(backend, charset):
    keys = KEYS[charset]
    for key in keys:  # alone in its bulk: every value of the row is written as a literal
        backend.enqueue_many([(sync_account, [key], {})])
    results = backend.enqueue_many([(sync_account, [key], {"full": True}) for key in keys])
    assert sorted(results.duplicates) == [0, 1, 2]
    plain = backend.enqueue_many([(sync_account.using(queue_name="high"), [k], {}) for k in "ab"])
    assert not plain.duplicates
    stored = list(Job.objects.order_by("pk").values_list("idempotency_key", "args"))
    assert stored == [
        *[(f"tests.support.tasks.sync_account:account-{key}", [key]) for key in keys],
        *[(f"tests.support.tasks.sync_account:account-{key}", [key]) for key in "ab"],
    ]


#: A character each character set lacks.
MISSING = {"latin1": "表", "gbk": "😀", "cp932": "é"}


def test_a_key_the_character_set_cannot_carry_is_refused_clearly(backend, charset):
    key = f"a{MISSING[charset]}"
    calls = [
        lambda: sync_account.enqueue(key),
        lambda: echo.using(idempotency_key=key).enqueue(),
        lambda: limited.enqueue(key, 0, 0.0),  # a flow key
        lambda: backend.enqueue_many([(sync_account, [key], {})]),
        lambda: backend.enqueue_many([(sync_account, [k], {}) for k in ("b", key)]),
    ]
    for call in calls:
        with pytest.raises(InvalidTaskOption, match=f"character set '{charset}'.*cannot carry"):
            call()
    assert not Job.objects.exists()
    assert backend.enqueue_many([(sync_account, ["b"], {})])[0].id, "the connection still works"
