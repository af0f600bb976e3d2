"""Create the project a how-to page's samples run in, from tests/support/howto_project.

The tutorial builds its project with ``startproject``; a how-to page starts from a project as
docs/howto/install.md leaves it (its settings and ``manage.py``, no app of its own, not
migrated), and its own blocks add every module it uses. The project's ``checks/`` are the
scripts that drive the page's code and assert on the outcome.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

TEMPLATE = Path(__file__).resolve().parent / "howto_project"
IGNORE = shutil.ignore_patterns("__pycache__")
#: SQLite has no SKIP LOCKED: the same options as the tutorial's (check W002).
SQLITE_OPTIONS = {
    "transaction_mode": "IMMEDIATE",
    "init_command": "PRAGMA journal_mode=WAL",
    "timeout": 20,
}


def create(target: Path, database: dict[str, Any] | None) -> Path:
    """Copy the project to ``target``, on ``database`` (None: a SQLite file there)."""
    target.mkdir(parents=True)
    shutil.copyfile(TEMPLATE / "manage.py", target / "manage.py")
    for name in ["mysite", "checks"]:
        shutil.copytree(TEMPLATE / name, target / name, ignore=IGNORE)
    if database is None:
        database = {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(target / "db.sqlite3"),
            "OPTIONS": SQLITE_OPTIONS,
        }
    (target / "project.json").write_text(json.dumps({"database": database}, indent=2))
    return target
