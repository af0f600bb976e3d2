"""Removing any one optional app from INSTALLED_APPS leaves the core working.

One child process per app left out (``without_app.py``): ``check``, ``skipqueue_status
--json``, ``skipqueue_health``, a ``runworkers --burst`` that runs a job through its
supervisor, the dashboard and the Prometheus view. The core reaches the apps only through
``django_skipqueue.extensions``, so what is left out must vanish from each, and nothing else.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.architecture.imports import OPTIONAL_APPS

pytestmark = [pytest.mark.vendor_neutral, pytest.mark.django_db(transaction=True)]

SCRIPT = Path(__file__).with_name("without_app.py")
#: What each app adds to the entry points: gone without it, present with it.
MARKS = {
    "outbox": ('"outbox"', "skipqueue_outbox_messages", 'id="skipqueue-outbox"'),
    "reservations": (None, "skipqueue_reservation_units", None),
    "scheduling": ('"schedules"', None, 'data-field="schedules-enabled"'),
    "workflows": (None, None, 'data-field="batches-running"'),
}
SETTINGS = """from testproject.settings import *  # noqa: F403

INSTALLED_APPS = [app for app in INSTALLED_APPS if app not in {left_out!r}]  # noqa: F405
# A project without an app does not configure it (check E104, E205, E305 would say so).
for _name in [name for name in dir() if name.startswith({prefixes!r})]:
    del globals()[_name]
"""
PREFIXES = {"outbox": ("SKIPQUEUE_OUTBOX_",), "reservations": ("SKIPQUEUE_RESERVATION_",)}


def run_without(apps: list[str], tmp_path: Path, child_env: dict[str, str]) -> dict:
    left_out = [f"django_skipqueue.{app}" for app in apps]
    settings = tmp_path / f"without_{'_'.join(apps)}.py"
    prefixes = tuple(prefix for app in apps for prefix in PREFIXES.get(app, ()))
    settings.write_text(SETTINGS.format(left_out=left_out, prefixes=prefixes))
    env = dict(child_env, DJANGO_SETTINGS_MODULE=settings.stem)
    env["PYTHONPATH"] = f"{tmp_path}:{env['PYTHONPATH']}"
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("app", OPTIONAL_APPS)
def test_the_core_works_without(app: str, tmp_path: Path, child_env: dict[str, str]) -> None:
    found = run_without([app], tmp_path, child_env)
    assert f"django_skipqueue.{app}" not in found["installed"]
    assert found["check"][0] == 0, found["check"][1]
    code, status = found["status"]
    assert code == 0 and "queues" in json.loads(status), status
    code, health = found["health"]
    assert code in (0, 3, 5) and "problems" in json.loads(health), health  # a verdict, no crash
    assert found["runworkers"][0] == 0, found["runworkers"][1]
    assert found["job"] == "SUCCESSFUL"
    assert found["dashboard"][0] == 200
    assert found["metrics"][0] == 200 and "skipqueue_jobs" in found["metrics"][1]
    in_status, in_metrics, in_dashboard = MARKS[app]
    if in_status:
        assert in_status not in status
    if in_metrics:
        assert in_metrics not in found["metrics"][1]
    if in_dashboard:
        assert in_dashboard not in found["dashboard"][1]
    for other in set(OPTIONAL_APPS) - {app}:  # the others still plug in
        other_status, other_metrics, other_dashboard = MARKS[other]
        if other_status:
            assert other_status in status
        if other_metrics:
            assert other_metrics in found["metrics"][1]
        if other_dashboard:
            assert other_dashboard in found["dashboard"][1]


def test_the_core_works_without_any_optional_app(tmp_path: Path, child_env: dict) -> None:
    found = run_without(list(OPTIONAL_APPS), tmp_path, child_env)
    assert not [name for name in found["installed"] if name.startswith("django_skipqueue.")]
    for entry in ("check", "status", "runworkers"):
        assert found[entry][0] == 0, found[entry][1]
    assert json.loads(found["health"][1])["problems"] is not None
    assert found["job"] == "SUCCESSFUL"
    assert found["dashboard"][0] == found["metrics"][0] == 200
    for marks in MARKS.values():
        for mark, page in zip(
            marks, (found["status"][1], found["metrics"][1], found["dashboard"][1]), strict=True
        ):
            assert mark is None or mark not in page
