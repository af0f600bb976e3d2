"""One case per outbox message transition: each writes exactly what outbox/states.py declares.

As tests/states/test_transition_table.py does for jobs: every case puts a real message row in
the transition's source status, applies the transition through the code that does it in
production (publish, the relay's claim stamp and settlement, the admin's "send again") and
compares the whole row before and after. A column changed that the transition does not
declare fails the case, as does a status other than its target. The declarations are checked
against the table of docs/discussions/outbox-states.md, and a scan of the package checks that
no module but outbox/transitions.py writes a message status.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from django_skipqueue.outbox import partitions, publish, states, transitions
from django_skipqueue.outbox.models import OutboxMessage
from django_skipqueue.outbox.partitions import Row
from django_skipqueue.outbox.settle import Outcomes, mark_claimed, settle
from django_skipqueue.outbox.writing import partition_of
from tests.conftest import ROOT

pytestmark = pytest.mark.django_db

COLUMNS = {f.attname for f in OutboxMessage._meta.concrete_fields} - {"id"}
PARTITIONS = 16
TOKEN = "relay-a#1"


def fetched(pk: int) -> dict[str, Any] | None:
    return OutboxMessage.objects.filter(pk=pk).values(*COLUMNS, "status").first()


def as_row(message: OutboxMessage) -> Row:
    """The message as the relay holds it after its claim (what settle() is handed): the
    attempt counted, ``owner`` as read before the stamp (no earlier claim left a trace)."""
    message.refresh_from_db()
    return Row(
        message.pk,
        message.status,
        message.key,
        message.topic,
        message.message_id,
        "{}",
        message.headers,
        None,
        message.attempts,
        True,
    )


def published(**fields: Any) -> OutboxMessage:
    message = publish("orders", {"n": 1}, key="k")
    if fields:
        OutboxMessage.objects.filter(pk=message.pk).update(**fields)
    return message


def stamped(**fields: Any) -> OutboxMessage:
    """A message claimed by relay A (its token in owner, the attempt counted)."""
    message = published(**fields)
    number = partition_of("k", PARTITIONS)
    partitions.ensure_partitions("default", PARTITIONS)
    assert partitions.claim("default", "relay-a", [number], limit=1, lease=30) == [number]
    assert mark_claimed("default", [message.pk], TOKEN, "relay-a", number) == 1
    return message


def settled(**outcomes: Callable[[Row], Any]) -> Callable[[OutboxMessage | None], Any]:
    """Settle the claim with one outcome of the message, as the relay does after a round."""

    def act(message: OutboxMessage | None) -> Any:
        assert message is not None
        row = as_row(message)
        fates = {name: [fate(row)] for name, fate in outcomes.items()}
        return settle("default", TOKEN, Outcomes(**fates), backoff=1, cap=60, max_attempts=3)

    return act


def claim(message: OutboxMessage | None) -> int:
    assert message is not None
    number = partition_of("k", PARTITIONS)
    partitions.ensure_partitions("default", PARTITIONS)
    partitions.claim("default", "relay-a", [number], limit=1, lease=30)
    return mark_claimed("default", [message.pk], TOKEN, "relay-a", number)


def nothing() -> None:
    """Arrange nothing: the transition makes the row."""


@dataclass
class Case:
    transition: states.Transition
    who: str
    arrange: Callable[[], OutboxMessage | None]
    act: Callable[[OutboxMessage | None], Any]
    #: The exact columns the case changes besides ``status``, where that is checked too.
    changes: frozenset[str] | None = None

    @property
    def id(self) -> str:
        return f"{self.transition.number}-{self.transition.name}-{self.who}".replace(" ", "_")


REFUSED = "refused: no route"

CASES = [
    Case(states.PUBLISH, "publish", nothing, lambda _: publish("orders", {"n": 1}, key="k")),
    Case(states.CLAIM, "relay", published, claim, frozenset({"owner", "attempts"})),
    Case(states.CLAIM, "relay-retry", lambda: published(status="retry"), claim),
    Case(states.SEND, "relay", stamped, settled(sent=lambda row: row.pk)),
    Case(
        states.RETRY,
        "relay",
        stamped,
        settled(retry=lambda row: (row, REFUSED)),
        frozenset({"available_at", "last_error", "owner"}),
    ),
    Case(
        states.RETRY_UNANSWERED,
        "relay",
        stamped,
        settled(retry_unanswered=lambda row: (row, "no answer")),
        frozenset({"available_at", "last_error", "attempts"}),
    ),
    Case(
        states.DEAD_LETTER,
        "relay-attempts-spent",
        lambda: stamped(attempts=2),
        settled(retry=lambda row: (row, REFUSED)),
    ),
    Case(
        states.DEAD_LETTER,
        "relay-unroutable",
        stamped,
        settled(dead=lambda row: (row, "too large")),
        frozenset({"last_error", "owner"}),
    ),
    Case(
        states.LOSE_ANSWER,
        "relay",
        stamped,
        settled(unknown=lambda row: (row, "connection lost")),
        frozenset({"last_error", "attempts"}),
    ),
    Case(
        states.GIVE_BACK,
        "relay",
        stamped,
        settled(untried=lambda row: row),
        frozenset({"owner", "attempts"}),
    ),
    Case(
        states.SEND_AGAIN,
        "admin",
        lambda: published(status="dead", attempts=5, last_error=REFUSED),
        lambda message: transitions.send_again(OutboxMessage.objects.all()),
        frozenset({"attempts"}),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_each_transition_writes_what_it_declares_and_nothing_else(case):
    message = case.arrange()
    before = fetched(message.pk) if message is not None else None
    answer = case.act(message)
    if before is None:  # publish: a new row, every column written
        after = fetched(answer.pk)
        assert after is not None and after["status"] == case.transition.target
        assert case.transition.writes == {"*"}
        return
    assert message is not None
    after = fetched(message.pk)
    assert before["status"] in case.transition.sources
    if case.transition.deletes:
        assert after is None
        return
    assert after is not None
    assert after["status"] == (case.transition.target or before["status"])
    changed = {column for column in COLUMNS if before[column] != after[column]} - {"status"}
    undeclared = changed - case.transition.writes
    assert not undeclared, f"{case.transition.name} wrote {sorted(undeclared)} undeclared"
    if case.changes is not None:
        assert changed == case.changes


def test_every_transition_has_a_case():
    assert {case.transition for case in CASES} == set(states.TRANSITIONS)
    assert [t.number for t in states.TRANSITIONS] == list(range(1, len(states.TRANSITIONS) + 1))


def test_each_transition_declares_real_columns_only():
    for transition in states.TRANSITIONS:
        assert transition.writes == {"*"} or transition.writes <= COLUMNS, transition.name


def test_a_new_message_has_the_status_publish_declares():
    assert OutboxMessage._meta.get_field("status").default == states.PUBLISH.target


def documented_rows() -> dict[int, str]:
    """Return the rows of the transition table in outbox-states.md, by number."""
    page = (ROOT / "docs" / "discussions" / "outbox-states.md").read_text()
    rows = re.findall(r"^\| (\d+) \|(.*)\|$", page, re.M)
    return {int(number): rest for number, rest in rows}


def test_the_docs_table_names_each_transition_and_every_column_it_writes():
    rows = documented_rows()
    assert sorted(rows) == [t.number for t in states.TRANSITIONS]
    for transition in states.TRANSITIONS:
        cells = [cell.strip() for cell in rows[transition.number].split("|")]
        assert cells[2] == transition.name, transition.number
        for column in transition.writes - {"*"}:
            assert f"`{column}" in cells[-1], f"{transition.name}: {column} not documented"


# No other module writes a message status.

PACKAGE = ROOT / "django_skipqueue"
#: Calls that write the keyword arguments they are given.
WRITING_CALLS = {"update", "create", "bulk_create", "get_or_create", "update_or_create"}
MESSAGE_STATUSES = set(states.MessageStatus.values)


def names_a_message_status(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in MESSAGE_STATUSES
    return "MessageStatus" in ast.unparse(node)


def dict_statuses(mapping: ast.Dict) -> list[ast.expr]:
    """The values a dict literal gives to ``"status"``."""
    pairs = zip(mapping.keys, mapping.values, strict=True)
    return [v for k, v in pairs if isinstance(k, ast.Constant) and k.value == "status"]


def status_writes(source: str) -> list[int]:
    """Return the lines of ``source`` that write a message status: ``status=`` given to an
    UPDATE, an insert or the model, ``"status": ...`` unpacked into one, ``x.status = ...``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name not in WRITING_CALLS and name != "OutboxMessage":
                continue
            for keyword in node.keywords:
                values = [keyword.value] if keyword.arg == "status" else []
                if isinstance(keyword.value, ast.Dict):  # **{"status": ...}, defaults={...}
                    values += dict_statuses(keyword.value)
                if any(names_a_message_status(value) for value in values):
                    lines.append(node.lineno)
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            writes = any(isinstance(t, ast.Attribute) and t.attr == "status" for t in targets)
            if writes and node.value is not None and names_a_message_status(node.value):
                lines.append(node.lineno)
    return sorted(lines)


def test_the_scan_finds_each_way_of_writing_a_status():
    source = (
        "rows.update(status=MessageStatus.DEAD)\n"
        "rows.update(**{'status': 'retry'})\n"
        "OutboxMessage(status=states.MessageStatus.PENDING)\n"
        "message.status = MessageStatus.RETRY\n"
        "rows.filter(status=MessageStatus.DEAD).count()\n"
        "jobs.update(status=JobStatus.READY)\n"
    )
    assert status_writes(source) == [1, 2, 3, 4]


def test_only_the_outbox_transitions_module_writes_a_message_status():
    writers = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        lines = status_writes(path.read_text())
        if lines:
            writers[str(path.relative_to(PACKAGE))] = lines
    assert set(writers) == {str(Path("outbox", "transitions.py"))}, writers


def test_only_the_outbox_transitions_module_runs_the_compiled_writes():
    callers = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        if re.search(r"compiled\.(mark_claimed|delete_sent)\(", text):
            callers.add(str(path.relative_to(PACKAGE)))
    assert callers == {str(Path("outbox", "transitions.py"))}
