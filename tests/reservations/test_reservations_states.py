"""A hold's states and the ledger's reasons are named in one module and spelled nowhere else.

Like the job's ``django_skipqueue.states``: the statements, the sweep, the admin and the
exporter write and compare states through ``reservations.states``; a literal ``state="held"``
in a statement would drift from the choices the column declares.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from django_skipqueue import reservations
from django_skipqueue.reservations.models import LedgerEntry
from django_skipqueue.reservations.states import (
    ENDED_STATES,
    ENDING_REASONS,
    RETURNING_STATES,
    HoldState,
    LedgerReason,
)

pytestmark = pytest.mark.vendor_neutral

PACKAGE = Path(reservations.__file__).parent
NAMES = {str(value) for value in (*HoldState, *LedgerReason)}


def literal_states(tree: ast.AST) -> list[str]:
    """Where a state or reason is written or compared as a string: keywords and comparisons."""
    found = []
    for node in ast.walk(tree):
        values: list[ast.expr] = []
        if isinstance(node, ast.keyword) and node.arg in {"state", "reason"}:
            values = [node.value]
        elif isinstance(node, ast.Compare):
            values = [node.left, *node.comparators]
        for value in values:
            if isinstance(value, ast.Constant) and value.value in NAMES:
                found.append(f"line {value.lineno}: {value.value!r}")
    return found


def test_no_module_of_the_app_spells_a_state_or_a_reason():
    modules = [
        path
        for path in PACKAGE.rglob("*.py")
        if path.name != "states.py" and "migrations" not in path.parts
    ]
    spelled = {
        str(path.relative_to(PACKAGE.parent)): found
        for path in modules
        if (found := literal_states(ast.parse(path.read_text())))
    }
    assert not spelled, spelled
    # The check finds what it looks for: the literal that reserve() used to insert.
    assert literal_states(ast.parse('Reservation(state="held")')) == ["line 1: 'held'"]


def test_every_ending_is_named_with_the_reason_it_writes():
    assert set(ENDED_STATES) == set(HoldState) - {HoldState.HELD}
    assert set(ENDING_REASONS) == set(ENDED_STATES)
    assert set(RETURNING_STATES) == {HoldState.RELEASED, HoldState.EXPIRED}


@pytest.mark.django_db(transaction=True)
def test_each_ending_writes_the_reason_the_table_names():
    reservations.restock(5, 1, 2)
    sold = reservations.reserve(5, 1, 1, holder="a", ttl=60)
    back = reservations.reserve(5, 1, 1, holder="b", ttl=60)
    endings = {
        reservations.confirm(sold).state: sold.pk,
        reservations.release(back).state: back.pk,
    }
    for state, pk in endings.items():
        reasons = LedgerEntry.objects.filter(reservation_id=pk).values_list("reason", flat=True)
        assert set(reasons) == {LedgerReason.HOLD, ENDING_REASONS[HoldState(state)]}
