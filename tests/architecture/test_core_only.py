"""The core-only run's choice of test modules (tests/support/core_only.py), read from imports."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.architecture.imports import OPTIONAL_APPS
from tests.support import core_only

pytestmark = pytest.mark.vendor_neutral


@pytest.mark.parametrize(
    ("source", "needs"),
    [
        ("from django_skipqueue.enqueue import enqueue_many\n", False),
        ("from tests.support.tasks import echo\n", False),
        ("from django_skipqueue.outbox.models import OutboxMessage\n", True),
        ("from django_skipqueue import queues, reservations\n", True),
        ("def test():\n    import django_skipqueue.scheduling.models\n", True),
        # Through a helper of tests/support that imports the app inside a function.
        ("from tests.support.reservation_race import main\n", True),
    ],
)
def test_a_module_needs_an_app_when_it_imports_one(source: str, needs: bool, tmp_path: Path):
    module = tmp_path / "test_sample.py"
    module.write_text(source)
    assert core_only.needs_an_app(module) is needs


def test_the_apps_folders_are_left_out_and_the_core_folders_mostly_kept():
    left_out = {path.relative_to(core_only.TESTS) for path in core_only.left_out_modules()}
    for app in OPTIONAL_APPS:
        for path in (core_only.TESTS / app).rglob("test_*.py"):
            assert path.relative_to(core_only.TESTS) in left_out
    assert Path("states/test_backoff.py") in left_out  # it reads the outbox's backoff
    kept = list((core_only.TESTS / "worker").rglob("test_*.py"))
    assert len([p for p in kept if p.relative_to(core_only.TESTS) not in left_out]) > 20
