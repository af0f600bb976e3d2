"""Byte limits against the server's max_allowed_packet: a setting one statement cannot carry
is named by check W005 (``manage.py check --database``), for results and for payloads."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import override_settings

from django_skipqueue.checks import check_result_bound

pytestmark = [pytest.mark.django_db, pytest.mark.mysql]


def packet() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@max_allowed_packet")
        return int(cursor.fetchone()[0])


def test_the_defaults_fit_the_server():
    assert check_result_bound(databases=["default"]) == []


@pytest.mark.parametrize(
    "setting",
    [
        "SKIPQUEUE_MAX_RESULT_BYTES",
        "SKIPQUEUE_MAX_PAYLOAD_BYTES",
        "SKIPQUEUE_OUTBOX_MAX_PAYLOAD_BYTES",
    ],
)
def test_a_byte_limit_one_statement_cannot_carry_is_named(setting):
    with override_settings(**{setting: packet()}):
        found = check_result_bound(databases=["default"])
    assert [message.id for message in found] == ["django_skipqueue.W005"]
    assert f"{setting} ({packet():,})" in found[0].msg
    assert "max_allowed_packet" in found[0].msg
