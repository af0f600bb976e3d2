"""Which test modules are the core's own: those a project without the optional apps can run.

``SKIPQUEUE_TEST_CORE_ONLY=1`` leaves the optional apps out of ``INSTALLED_APPS``
(testproject/settings.py), and tests/conftest.py leaves out the test modules that need one. A
module needs an app when it lives in the app's folder of tests, or when it imports the app,
itself or through a module of ``tests`` (imports inside functions included), read with ast, so
that a new test is classified without a list. What is left is the core's own suite, and after
each of its tests no module of an app may have been imported: the apps' models name their
``app_label``, so a core module importing one would load without an error and go unnoticed.
"""

from __future__ import annotations

import ast
import sys
from functools import cache
from pathlib import Path

import environ

from tests.architecture.imports import OPTIONAL_APPS

ROOT = Path(__file__).resolve().parent.parent.parent
TESTS = ROOT / "tests"
SWITCH = "SKIPQUEUE_TEST_CORE_ONLY"
_APP_MODULES = tuple(f"django_skipqueue.{app}" for app in OPTIONAL_APPS)


def enabled() -> bool:
    """Whether this run leaves the optional apps out (read by testproject/settings.py too)."""
    return environ.Env().bool(SWITCH, default=False)


def needs_an_app(path: Path) -> bool:
    """Whether the test module at ``path`` needs an optional app installed."""
    path = path.resolve()
    if path.is_relative_to(TESTS) and path.relative_to(TESTS).parts[0] in OPTIONAL_APPS:
        return True
    return _imports_an_app(path)


def left_out_modules() -> list[Path]:
    """Every test module of the suite that a core-only run leaves out."""
    return sorted(path for path in TESTS.rglob("test_*.py") if needs_an_app(path))


def imported_apps() -> list[str]:
    """The modules of the optional apps that this process has imported."""
    return sorted(name for name in sys.modules if name.split(".")[:2] in _APP_PARTS)


_APP_PARTS = [["django_skipqueue", app] for app in OPTIONAL_APPS]


@cache
def _imports_an_app(path: Path) -> bool:
    for name in _imported_names(path):
        if name == "django_skipqueue" or not name.startswith(("django_skipqueue.", "tests.")):
            continue
        if name.startswith(_APP_MODULES) and name.split(".")[1] in OPTIONAL_APPS:
            return True
        found = _module_path(name)
        if found is not None and found != path and _imports_an_app(found):
            return True
    return False


def _imported_names(path: Path) -> set[str]:
    """The dotted names a module imports: ``from a import b`` yields ``a`` and ``a.b``."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _module_path(name: str) -> Path | None:
    """The file of a module of ``tests`` (None for the package and anything else)."""
    if not name.startswith("tests."):
        return None
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None
