"""Create the project a how-to page's samples run in, from tests/howto_project.

The tutorial builds its project with ``startproject``; a how-to page starts from a project that
already has the modules its samples import but do not define (``orders.models``, ``orders.bus``,
``shop.models``, ...), as real apps with migrations. The page's own blocks then add its files.
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


def create(target: Path, apps: list[str], database: dict[str, Any] | None) -> Path:
    """Copy the project and the named apps to ``target``; None means a SQLite file there."""
    missing = [app for app in apps if not (TEMPLATE / app / "models.py").exists()]
    assert not missing, f"no app {missing} in {TEMPLATE}"
    target.mkdir(parents=True)
    shutil.copyfile(TEMPLATE / "manage.py", target / "manage.py")
    for name in ["mysite", "checks", *apps]:
        shutil.copytree(TEMPLATE / name, target / name, ignore=IGNORE)
    if database is None:
        database = {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(target / "db.sqlite3"),
            "OPTIONS": SQLITE_OPTIONS,
        }
    project = {"apps": apps, "database": database}
    (target / "project.json").write_text(json.dumps(project, indent=2))
    return target
