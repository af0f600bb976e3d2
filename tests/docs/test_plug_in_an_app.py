"""docs/howto/plug-in-an-app.md: the page's app, written from its blocks, plugs into the core.

The app's files come from the page's blocks that start with their path; a project is the test
project with the app added. Its commands run there, and the app shows where the page says.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.support import docpages

pytestmark = [pytest.mark.vendor_neutral, pytest.mark.django_db(transaction=True)]

PAGE = docpages.DOCS / "howto" / "plug-in-an-app.md"
PATH_LINE = re.compile(r"^(?:# |\{# )([\w/.]+\.(?:py|html))(?: #\})?\n")
#: The dashboard, the metrics view and the maintenance loop, seen from the project's shell.
PAGES = """
from django.contrib.auth.models import User
from django.test import Client
from django_skipqueue.maintenance.loop import app_timers
client = Client()
client.force_login(User.objects.create_superuser("page", "page@example.com", "x"))
board = client.get("/admin/django_skipqueue/job/dashboard/").content.decode()
scraped = client.get("/skipqueue/metrics").content.decode()
print('data-field="failwatch-failed">0<' in board, "failwatch_failed_jobs 0.0" in scraped,
      [timer.name for timer in app_timers("default")])
"""
SETTINGS = """from testproject.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "failwatch"]  # noqa: F405
"""


def write_app(root: Path) -> list[str]:
    """Write the page's files under ``root``; return the commands of its shell sessions."""
    (root / "failwatch").mkdir()
    (root / "failwatch" / "__init__.py").write_text("")
    commands = []
    for block in docpages.code_blocks(PAGE):
        match = PATH_LINE.match(block.text)
        if match:
            target = root / match.group(1)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text[match.end() :])
        elif block.language == "shell-session":
            commands += [line[2:] for line in block.text.splitlines() if line.startswith("$ ")]
    (root / "with_failwatch.py").write_text(SETTINGS)
    return commands


def test_the_pages_app_plugs_in(tmp_path: Path, manage_py: list[str], child_env: dict) -> None:
    commands = write_app(tmp_path)
    assert len(commands) == 2, commands
    env = dict(child_env, DJANGO_SETTINGS_MODULE="with_failwatch")
    env["PYTHONPATH"] = f"{tmp_path}:{env['PYTHONPATH']}"

    def run(*words: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*manage_py, *words], env=env, capture_output=True, text=True, timeout=120
        )

    status = run(*shlex.split(commands[0])[2:])
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["failwatch"] == {"failed": 0}
    health = run(*shlex.split(commands[1])[2:])
    assert health.returncode in (0, 3, 5), health.stderr  # no worker runs: the core's verdict
    assert "failed jobs" not in health.stderr
    text = run("skipqueue_status")
    assert "failwatch: 0 failed" in text.stdout
    help_text = run("skipqueue_health", "--help").stdout
    assert "20 too many failed jobs" in " ".join(help_text.split())
    assert "--max-failed" in help_text
    seen = run("shell", "--command", PAGES)
    assert seen.stdout.split("\n")[-2].startswith("True True ["), seen.stdout + seen.stderr
    assert "'failwatch'" in seen.stdout
    unhealthy = run("skipqueue_health", "--json", "--max-failed", "-1")
    verdict = json.loads(unhealthy.stdout)
    assert {"status": 20, "check": "TOO_MANY_FAILED", "reason": "0 failed jobs (limit -1)"} in (
        verdict["problems"]
    )
