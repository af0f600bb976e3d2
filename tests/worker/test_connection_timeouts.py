"""The worker's own connection gets network timeouts; job code's connections keep OPTIONS.

The partition tests (tests/reliability/multihost) show what the timeouts are for; these check
which connection gets them, in threads of their own so the test process's connection is left
as it was.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connections
from django.test import override_settings

from django_skipqueue.worker.heartbeat import bound_network_waits

pytestmark = pytest.mark.mysql


def in_thread(work: Callable[[], Any]) -> Any:
    found: list[Any] = []
    thread = threading.Thread(target=lambda: found.append(work()))
    thread.start()
    thread.join(30)
    connections.close_all()
    return found[0]


def params_after(bound: bool) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        if bound:
            bound_network_waits("default")
        try:
            return connections["default"].get_connection_params()
        finally:
            connections["default"].close()

    return in_thread(work)


@override_settings(SKIPQUEUE_DATABASE_TIMEOUT=2.5)
def test_the_loop_connection_gets_the_timeouts_and_other_threads_do_not():
    bounded = params_after(bound=True)
    assert {name: bounded.get(name) for name in ("connect_timeout", "read_timeout")} == {
        "connect_timeout": 3,
        "read_timeout": 3,
    }
    assert bounded["write_timeout"] == 3
    plain = params_after(bound=False)
    assert "read_timeout" not in plain


@override_settings(SKIPQUEUE_DATABASE_TIMEOUT=None)
def test_none_keeps_the_driver_defaults():
    assert "read_timeout" not in params_after(bound=True)


def test_options_set_in_databases_win():
    options = connections.settings["default"].setdefault("OPTIONS", {})
    options["read_timeout"] = 600
    try:
        params = params_after(bound=True)
    finally:
        del options["read_timeout"]
    assert (params["read_timeout"], params["connect_timeout"]) == (600, 30)
