"""Create the project a how-to page's samples run in, from tests/support/howto_project.

The tutorial builds its project with ``startproject``; a how-to page starts from a project that
already has the modules its samples import but do not define (``orders.models``, ``orders.bus``,
``shop.models``, ...), as real apps with migrations. The page's own blocks then add its files.
"""

from __future__ import annotations

import importlib.util
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
    """Copy the project and the named apps to ``target``; None means a SQLite file there.

    An app that is not one of the template's must be an installed package (a page that
    migrates from another queue installs that queue's app too); it is only listed.
    """
    own = [app for app in apps if (TEMPLATE / app / "models.py").exists()]
    missing = [app for app in apps if app not in own and not importlib.util.find_spec(app)]
    assert not missing, f"no app {missing} in {TEMPLATE}, nor installed"
    target.mkdir(parents=True)
    shutil.copyfile(TEMPLATE / "manage.py", target / "manage.py")
    for name in ["mysite", "checks", *own]:
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
