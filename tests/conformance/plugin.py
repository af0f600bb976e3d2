"""pytest plugin of the conformance run: Django's ``tests/tasks/`` against SkipQueueBackend.

The adaptation, kept to what the backend needs to be there at all:

- the backends the tests name are mapped to ours (see :mod:`tests.conformance.backends`);
- SimpleTestCase classes may use the ``default`` database, where the jobs live, and every job
  and worker row is deleted after each test (SimpleTestCase flushes nothing); a test that
  limits the installed apps (``available_apps``) keeps ``django_skipqueue``, whose table
  holds the jobs;
- each test's expected result comes from the table in docs/reference/conformance.md: ``n/a``
  skips it with the table's reason; ``failed`` reports its failures (subtests' included) as
  expected failures with the table's reason. The run fails on a failure the table does not
  list, on a listed failure that no longer fails (the table follows the code), on a test
  missing from the table and on a row that names no test.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "docs" / "reference" / "conformance.md"
ROW = re.compile(
    r"^\|\s*`(?P<test>\w+\.\w+)`\s*\|\s*(?P<result>passed|failed|n/a)\s*\|\s*(?P<reason>.*?)\s*\|$"
)


def read_table(path: Path = TABLE) -> dict[str, tuple[str, str]]:
    """Return {"Class.test_method": (result, reason)} from the table's rows."""
    rows = {}
    for line in path.read_text().splitlines():
        if found := ROW.match(line.strip()):
            rows[found["test"]] = (found["result"], found["reason"].strip())
    return rows


FIGURES = re.compile(r"Figures: (\d+) passed, (\d+) failed, (\d+) n/a, of (\d+) tests")


def figures_problem(table: dict[str, tuple[str, str]], path: Path = TABLE) -> str | None:
    """Say what is wrong with the page's "Figures:" line, if it does not count the rows."""
    results = [result for result, _ in table.values()]
    counts = (results.count("passed"), results.count("failed"), results.count("n/a"))
    wanted = f"Figures: {counts[0]} passed, {counts[1]} failed, {counts[2]} n/a, of {len(table)}"
    found = FIGURES.search(path.read_text())
    if found and tuple(map(int, found.groups())) == (*counts, len(table)):
        return None
    return f'{path.name} should say "{wanted} tests."'


def test_name(item: pytest.Item) -> str:
    return f"{item.cls.__name__}.{item.name}" if item.cls else item.name


def pytest_configure(config: pytest.Config) -> None:
    from django.utils.module_loading import import_string

    from django_skipqueue.compat import TaskBackendHandler
    from tests.conformance.backends import MAPPED

    original = TaskBackendHandler.create_connection

    def create_connection(self: TaskBackendHandler, alias: str) -> Any:
        mapped = MAPPED.get(self.settings[alias]["BACKEND"])
        if mapped is None:
            return original(self, alias)
        return import_string(mapped)(alias=alias, params=self.settings[alias])

    TaskBackendHandler.create_connection = create_connection  # type: ignore[method-assign]
    config.stash[TABLE_KEY] = read_table()
    config.stash[PROBLEMS_KEY] = []
    config.stash[FAILED_KEY] = set()


TABLE_KEY = pytest.StashKey[dict[str, tuple[str, str]]]()
PROBLEMS_KEY = pytest.StashKey[list[str]]()
FAILED_KEY = pytest.StashKey[set[str]]()
COLLECTED_KEY = pytest.StashKey[set[str]]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from django.test import SimpleTestCase, TransactionTestCase

    table, problems = config.stash[TABLE_KEY], config.stash[PROBLEMS_KEY]
    for item in items:
        cls = item.cls
        if cls and issubclass(cls, SimpleTestCase) and not issubclass(cls, TransactionTestCase):
            cls.databases = {"default"}
        apps = getattr(cls, "available_apps", None)
        if apps is not None and "django_skipqueue" not in apps:
            cls.available_apps = [*apps, "django_skipqueue"]
        expected = table.get(test_name(item))
        if expected is None:
            problems.append(f"{test_name(item)}: not in {TABLE.name}")
        elif expected[0] != "passed" and not expected[1]:
            problems.append(f"{test_name(item)}: {expected[0]} with no reason")
        if expected and expected[0] == "n/a":
            item.add_marker(pytest.mark.skip(reason=f"n/a: {expected[1]}"))
    config.stash[COLLECTED_KEY] = {test_name(item) for item in items}
    if problem := figures_problem(table):
        problems.append(problem)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Note each failing test; report a listed failure as an expected one, with its reason."""
    report = yield
    if report.failed:
        name = test_name(item)
        item.config.stash[FAILED_KEY].add(name)
        result, reason = item.config.stash[TABLE_KEY].get(name, ("", ""))
        if result == "failed" and call.when == "call":
            report.outcome, report.wasxfail = "skipped", reason
    return report


@pytest.fixture(autouse=True)
def empty_queue_tables(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """Delete every row of the queue's tables after each test."""
    yield
    from django.apps import apps

    with django_db_blocker.unblock():
        for model in apps.get_app_config("django_skipqueue").get_models():
            model._default_manager.all().delete()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    table = config.stash[TABLE_KEY]
    results = [result for result, _ in table.values()]
    terminalreporter.write_line(
        f"conformance table: {results.count('passed')} passed, {results.count('failed')} "
        f"failed, {results.count('n/a')} n/a, of {len(table)} upstream tests"
    )
    for problem in config.stash[PROBLEMS_KEY]:
        terminalreporter.write_line(f"conformance table problem: {problem}", red=True)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    problems, failed = config.stash[PROBLEMS_KEY], config.stash[FAILED_KEY]
    table = config.stash[TABLE_KEY]
    if not config.option.keyword and not config.option.markexpr:
        collected = config.stash[COLLECTED_KEY]
        problems += [f"{name}: in {TABLE.name}, no such test" for name in table.keys() - collected]
        problems += [
            f"{name}: listed as failed, it passed"
            for name, (result, _) in table.items()
            if result == "failed" and name not in failed
        ]
    if problems and session.exitstatus == 0:
        session.exitstatus = 1
