"""The package's layout, as docs/discussions/architecture.md and issues 13 and 36 describe it.

The number of modules at the top of ``django_skipqueue/`` is a measure the architecture page
reports (``tests/support/measures.py``), no longer a cap; every folder's ``__init__.py`` has a
docstring that says what the folder must not import; the top-level modules import no folder
of a process role or of an optional app (only ``db``, ``models`` and ``monitoring``, which the
web process reads through).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "django_skipqueue"
#: Folders that the top-level modules (what runs in every process) must not import.
ROLE_FOLDERS = (
    "worker",
    "maintenance",
    "management",
    "admin",
    "outbox",
    "reservations",
    "scheduling",
    "workflows",
)
#: Documented ways in, as (top-level module, imported name): none since the workflows app
#: counts its batches through an outcome listener (hooks.py).
HOOKS: set[tuple[str, str]] = set()
#: Test helpers run the worker's own code in the test's process: they import it by design.
TEST_HELPERS = {"testing.py"}
FOLDERS = sorted(path.parent for path in PACKAGE.rglob("__init__.py"))


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda folder: str(folder.relative_to(PACKAGE)))
def test_each_folder_says_what_it_must_not_import(folder):
    docstring = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
    assert docstring, f"{folder}/__init__.py has no docstring"
    assert re.search(r"must not import|\bnever\b", docstring, re.IGNORECASE), docstring


@pytest.mark.parametrize("module", sorted(PACKAGE.glob("*.py")), ids=lambda path: path.name)
def test_top_level_modules_import_no_role_folder(module):
    if module.name in TEST_HELPERS:
        pytest.skip("a test helper: it runs the worker's code in the test's process")
    imported: list[str] = []
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            name = node.module if node.level == 0 else f"django_skipqueue.{node.module}"
            imported.append(name)
            imported += [f"{name}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            imported += [alias.name for alias in node.names]
    forbidden = tuple(f"django_skipqueue.{folder}" for folder in ROLE_FOLDERS)
    wrong = [
        name
        for name in imported
        if name.startswith(forbidden)
        and not any((module.name, hook) in HOOKS for hook in (name, name.rpartition(".")[0]))
    ]
    assert not wrong, f"{module.name} imports {wrong}"
