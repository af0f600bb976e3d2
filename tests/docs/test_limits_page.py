"""docs/reference/limits.md states the limits the code enforces: each figure on the page is
read from the constant or the default it describes, so that a change of one fails here until
the page follows."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from django_skipqueue import exceptions, payload
from django_skipqueue.conf import SkipQueueSettings
from django_skipqueue.outbox import inbox
from django_skipqueue.outbox.transports import names
from django_skipqueue.reservations import inputs
from django_skipqueue.tasks import KEY_LENGTH

PAGE = (Path(__file__).parents[2] / "docs" / "reference" / "limits.md").read_text()


def row(starting: str) -> str:
    """The table row whose first cell starts with ``starting``."""
    found = [line for line in PAGE.splitlines() if line.startswith(f"| {starting}")]
    assert len(found) == 1, f"one row for {starting!r}: {found}"
    return found[0]


DEFAULTS = {field.name: field.default for field in dataclasses.fields(SkipQueueSettings)}


def kib(value: int) -> str:
    return f"{value // 1024} KiB" if value < 1024 * 1024 else f"{value // (1024 * 1024)} MiB"


@pytest.mark.parametrize(
    ("first_cell", "figure"),
    [
        ("Task arguments (", kib(DEFAULTS["MAX_PAYLOAD_BYTES"])),
        ("Nesting of lists", str(payload.MAX_DEPTH)),
        ("`idempotency_key`", f"1 to {KEY_LENGTH} characters"),
        ("A key derived", f"({KEY_LENGTH} characters)"),
        ("A task's return value", kib(DEFAULTS["MAX_RESULT_BYTES"])),
        ("Payload (compact JSON)", kib(DEFAULTS["OUTBOX_MAX_PAYLOAD_BYTES"])),
        ("Payload values", f"nested at most {payload.MAX_DEPTH} deep"),
        ("`key`", f"{names.MAX_SHORT_STRING_BYTES} bytes"),
        ("`message_id`", f"{names.MAX_SHORT_STRING_BYTES} bytes"),
        ("Inbox `message_id`", f"1-{inbox.MAX_MESSAGE_ID} / 0-{inbox.MAX_CONSUMER}"),
        ("`holder` / `reference`", f"1-{inputs.MAX_LABEL} / 0-{inputs.MAX_LABEL}"),
    ],
)
def test_each_figure_on_the_page_is_the_codes(first_cell, figure):
    assert figure in row(first_cell)


def test_each_exception_the_page_names_exists():
    named = set(re.findall(r"`([A-Z][a-z]+(?:[A-Z][a-z]+)+)`", PAGE))
    assert {"PayloadTooLarge", "ResultTooLarge", "InvalidMessage"} <= named
    assert not {name for name in named if not hasattr(exceptions, name)}
