"""Fixtures shared by the suite. Tests run on the database that DATABASE_URL names.

Markers: ``mysql`` (MySQL/MariaDB only: EXPLAIN, handler counters, server control),
``skip_locked`` (needs real row locks: not SQLite), ``slow``, ``browser``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection, connections

ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config: pytest.Config) -> None:
    """Draw the property tests' random seed once per run, before any xdist worker starts:
    each worker collects the same test ids (tests/properties/strategies.py)."""
    if not hasattr(config, "workerinput"):
        import secrets

        os.environ.setdefault("SKIPQUEUE_PROPERTY_SEED", str(secrets.randbelow(2**32)))


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Without the optional apps (SKIPQUEUE_TEST_CORE_ONLY=1), leave out the test modules that
    need one (tests/support/core_only.py); None lets pytest decide the rest."""
    from tests.support import core_only

    if collection_path.suffix == ".py" and core_only.enabled():
        return core_only.needs_an_app(collection_path) or None
    return None


def pytest_report_header(config: pytest.Config) -> str | None:
    """Say how much of the suite a core-only run leaves out, so that the log shows it."""
    from tests.support import core_only

    if not core_only.enabled():
        return None
    left_out = core_only.left_out_modules()
    return f"core only: the optional apps are not installed; {len(left_out)} test modules left out"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from tests.support.brokers import NATS_PORT, RABBITMQ_PORT, reachable

    vendor = connection.vendor
    # Every MySQL and MariaDB the project supports has it; Django before 6.0 would ask the
    # server, and collection may not touch the database.
    skip_locked = vendor == "mysql" or connection.features.has_select_for_update_skip_locked
    brokers = {"rabbitmq": RABBITMQ_PORT, "nats": NATS_PORT}
    down = {marker for marker, port in brokers.items() if not reachable(port)}
    for item in items:
        for marker in down & set(item.keywords):
            item.add_marker(pytest.mark.skip(reason=f"{marker} is not running"))
        if "mysql" in item.keywords and vendor != "mysql":
            item.add_marker(pytest.mark.skip(reason="MySQL/MariaDB only"))
        if "skip_locked" in item.keywords and not skip_locked:
            item.add_marker(pytest.mark.skip(reason="needs SELECT ... FOR UPDATE SKIP LOCKED"))
    if hasattr(config, "workerinput"):
        _slow_modules_first(items)


def _slow_modules_first(items: list[pytest.Item]) -> None:
    """Under pytest-xdist, hand out the modules with a ``slow`` test first: a two-minute
    module taken last would leave one process alone for its whole length. Every process sorts
    alike, so they still collect the same order."""
    slow = {_module(item) for item in items if "slow" in item.keywords}
    items.sort(key=lambda item: _module(item) not in slow)


def _module(item: pytest.Item) -> str:
    return getattr(getattr(item, "module", None), "__name__", "")


@pytest.fixture(autouse=True)
def forget_paused_queues() -> Iterator[None]:
    """Start each test with no cached list of paused queues (the database is flushed between
    tests, but a process keeps that list for about a second)."""
    from django_skipqueue import queues

    queues.forget()
    yield
    queues.forget()


@pytest.fixture(autouse=True)
def no_optional_app_imported() -> Iterator[None]:
    """Without the optional apps, fail the test after which a module of one was imported: a
    core module imported it (tests/support/core_only.py)."""
    from tests.support import core_only

    yield
    if core_only.enabled():
        imported = core_only.imported_apps()
        assert not imported, f"a core module imports an optional app: {', '.join(imported)}"


@pytest.fixture
def backend():
    """The configured SkipQueueBackend."""
    from django_skipqueue.compat import task_backends

    return task_backends["default"]


@pytest.fixture
def test_database_url(transactional_db: None) -> str:
    """A DATABASE_URL that points child processes at the current test database."""
    settings = connection.settings_dict
    name = settings["NAME"]
    if connection.vendor == "sqlite":
        return f"sqlite:///{name}"
    scheme = {"mysql": "mysql", "postgresql": "postgres"}[connection.vendor]
    user = settings["USER"] or "root"
    port = settings["PORT"] or {"mysql": 3306, "postgresql": 5432}[connection.vendor]
    return f"{scheme}://{user}@{settings['HOST'] or '127.0.0.1'}:{port}/{name}"


@pytest.fixture
def child_env(test_database_url: str) -> dict[str, str]:
    """Environment for a child process (manage.py, workers) on the test database."""
    env = dict(os.environ)
    env.update(
        DATABASE_URL=test_database_url,
        DJANGO_SETTINGS_MODULE="testproject.settings",
        PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]),
        PYTHONUNBUFFERED="1",
    )
    return env


@pytest.fixture
def manage_py() -> list[str]:
    """The command prefix that runs the test project's manage.py in this interpreter."""
    return [sys.executable, str(ROOT / "testproject" / "manage.py")]


@pytest.fixture
def close_thread_connections() -> Iterator[None]:
    """Close connections opened by helper threads so the test database can be flushed."""
    yield
    connections.close_all()
