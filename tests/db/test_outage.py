"""An outage is logged as a start, a summary now and then, and an end; one traceback at DEBUG."""

from __future__ import annotations

import logging
import re
import time
from types import SimpleNamespace

import pytest
from django.db import OperationalError

from django_skipqueue.db import outage as outage_module
from django_skipqueue.db.outage import Outage, is_unreachable


def refused() -> OperationalError:
    """Return the error Django raises on connecting to a port where nothing listens."""
    mysqldb = pytest.importorskip("MySQLdb")
    try:
        mysqldb.connect(host="127.0.0.1", port=9, user="root", connect_timeout=5)
    except mysqldb.OperationalError as cause:
        error = OperationalError(*cause.args)  # as django.db.utils.DatabaseErrorWrapper does
        error.__cause__ = cause
        return error
    raise AssertionError("port 9 answered")


def test_an_outage_logs_its_start_summaries_and_end_only(caplog, monkeypatch):
    monkeypatch.setattr(outage_module, "SUMMARY_SECONDS", 0.2)
    error, tracker = refused(), Outage("default")
    assert is_unreachable(error)
    with caplog.at_level(logging.DEBUG, logger="django_skipqueue.database"):
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            tracker.failed(error)
            time.sleep(0.01)
        tracker.recovered()
        tracker.recovered()  # nothing more: the outage is over
    lines = [record.getMessage() for record in caplog.records]
    assert lines[0].startswith("database unreachable, retrying database=default error=")
    assert 2 <= sum("still unreachable" in line for line in lines) <= 3, lines
    ended = re.match(r"database reachable again database=default after_s=([\d.]+) ", lines[-1])
    assert ended and float(ended[1]) >= 0.5, lines[-1]
    assert len(lines) <= 6, lines
    tracebacks = [record for record in caplog.records if record.exc_info]
    assert [record.levelno for record in tracebacks] == [logging.DEBUG]


def test_deadlocks_are_not_outages():
    assert not is_unreachable(OperationalError(1213, "Deadlock found"))
    assert is_unreachable(OperationalError(2013, "Lost connection to server during query"))


def test_a_refusal_at_max_connections_says_so(caplog):
    """The server is up but full: the line names max_connections (what to change)."""
    error = OperationalError(1040, "Too many connections")
    with caplog.at_level(logging.WARNING, logger="django_skipqueue.database"):
        Outage("default").failed(error)
        Outage("default").failed(refused())
    full, away = (record.getMessage() for record in caplog.records)
    assert "cause=max_connections" in full and "SKIPQUEUE_RELEASE_JOB_CONNECTIONS" in full
    assert "cause=" not in away


def test_outages_of_one_refusal_each_log_a_line_a_minute(caplog, monkeypatch):
    # A server at its connection limit refuses now and then: each refusal is an outage that
    # the next attempt ends. The first is logged (start and end), the next ones within
    # SUMMARY_SECONDS of that line only counted; the first after it is logged with the count.
    # Any other outage is logged as it starts.
    # The tracker's clock is the test's: a loaded machine cannot stretch the first five
    # outages past the summary window.
    now = [1000.0]
    monkeypatch.setattr(outage_module, "time", SimpleNamespace(monotonic=lambda: now[0]))
    full, tracker = OperationalError(1040, "Too many connections"), Outage("default")
    with caplog.at_level(logging.DEBUG, logger="django_skipqueue.database"):
        for _ in range(5):
            tracker.failed(full)
            now[0] += 1.0
            tracker.recovered()
        now[0] += outage_module.SUMMARY_SECONDS
        tracker.failed(full)
        tracker.recovered()
        for _ in range(2):  # a server down: every outage logged, however close together
            tracker.failed(refused())
            tracker.recovered()
    starts = [r.getMessage() for r in caplog.records if "unreachable, retrying" in r.getMessage()]
    ends = [r for r in caplog.records if "reachable again" in r.getMessage()]
    assert len(starts) == 4, starts
    assert "unlogged_outages_before" not in starts[0]
    assert "unlogged_outages_before=4 " in starts[1] and "1040" in starts[1]
    assert all("1040" not in line and "cause=" not in line for line in starts[2:]), starts
    assert [r.levelno for r in ends] == [logging.INFO, *[logging.DEBUG] * 4, *[logging.INFO] * 3]
