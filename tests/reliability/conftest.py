"""Fixtures of the fault-injection suite: child environments, a private server, figures.

Tests that stop, restart or count server-wide events (deadlocks) use ``private_db``: a
``mariadbd`` of their own (started once per session, about 3 s, plus one migrate), never the
shared server. The others run on the ordinary test database (``child_env``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from tests.reliability.audit import JobRow, job_rows
from tests.reliability.procs import Supervisor
from tests.reliability.procs import child_env as make_env
from tests.reliability.proxy import FaultProxy
from tests.reliability.server import PrivateMariaDB

PRIVATE_DATABASE = "reliability"


@pytest.fixture(autouse=True)
def no_worker_left_behind() -> Iterator[None]:
    yield
    Supervisor.stop_all()


@pytest.fixture
def rel_env(test_database_url: str) -> Callable[..., dict[str, str]]:
    """Build a child environment on the test database with SKIPQUEUE_* overrides.

    ``port``: connect through a fault proxy listening there instead of to the server.
    """

    def build(*, port: int | None = None, **settings: Any) -> dict[str, str]:
        url = test_database_url
        if port is not None:
            server_port = connection.settings_dict["PORT"] or 3306
            url = url.replace(f":{server_port}/", f":{port}/")
        return make_env(url, **settings)

    return build


@pytest.fixture
def proxy(transactional_db: None) -> Iterator[FaultProxy]:
    """A fault proxy in front of the test database's server."""
    settings = connection.settings_dict
    relay = FaultProxy(int(settings["PORT"] or 3306), settings["HOST"] or "127.0.0.1")
    yield relay
    relay.close()


class PrivateDatabase:
    """The database of the private server, read and written with plain SQL."""

    def __init__(self, server: PrivateMariaDB, name: str) -> None:
        self.server, self.name = server, name

    @property
    def url(self) -> str:
        return self.server.url(self.name)

    def env(self, *, port: int | None = None, **settings: Any) -> dict[str, str]:
        return make_env(self.server.url(self.name, port), **settings)

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple]:
        """Run one statement on a fresh connection (the server may have restarted since)."""
        conn = self.server.connect(self.name)
        try:
            cursor = conn.cursor()
            cursor.execute(sql, params or [])
            return list(cursor.fetchall())
        finally:
            conn.close()

    def jobs(self) -> list[JobRow]:
        return job_rows(
            self.query("SELECT id, status, attempts, worker_ids, errors FROM skipqueue_job")
        )

    def ledger(self) -> list[tuple[int, int, str]]:
        return self.query("SELECT job_id, attempt, worker FROM demo_ledgerentry")

    def statuses(self) -> dict[str, int]:
        rows = self.query("SELECT status, COUNT(*) FROM skipqueue_job GROUP BY status")
        return {status: int(count) for status, count in rows}


@pytest.fixture(scope="session")
def private_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateMariaDB]:
    if connection.vendor != "mysql":
        pytest.skip("a private MariaDB is only started for runs on MariaDB/MySQL")
    server = PrivateMariaDB(tmp_path_factory.mktemp("mariadb")).start()
    try:
        server.create_database(PRIVATE_DATABASE, make_env(server.url(PRIVATE_DATABASE)))
        yield server
    finally:
        server.destroy()


@pytest.fixture
def private_db(private_server: PrivateMariaDB) -> PrivateDatabase:
    """The private server's database, emptied; the server restarted if a test left it down."""
    if private_server.process is None:
        private_server.start()
    private_server.truncate(PRIVATE_DATABASE)
    return PrivateDatabase(private_server, PRIVATE_DATABASE)


@pytest.fixture
def figures(request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]) -> Iterator[dict]:
    """Collect a test's measured figures; print them and append them to RELIABILITY_FIGURES."""
    measured: dict[str, Any] = {}
    began = time.monotonic()
    yield measured
    if not measured:
        return
    measured.setdefault("seconds", round(time.monotonic() - began, 1))
    line = json.dumps({"test": request.node.name, **measured}, default=str)
    with capsys.disabled():
        print(f"\nFIGURES {line}")
    target = os.environ.get("RELIABILITY_FIGURES")
    if target:
        with Path(target).open("a") as handle:
            handle.write(line + "\n")
