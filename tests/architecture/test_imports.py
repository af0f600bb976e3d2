"""Layering: a core module never imports an optional app; no import cycle in the package.

Read from the source with ast, imports inside functions included: a lazy import is still a
dependency, and a cycle hidden in functions still ties the modules together.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import django_skipqueue
from tests.architecture.imports import OPTIONAL_APPS, app_of, cycles, read_graph

pytestmark = pytest.mark.vendor_neutral

ROOT = Path(django_skipqueue.__file__).parent
#: Django's model and manager modules refer to each other by design (the model declares its
#: manager; the manager returns model instances): the one pair the package allows. Its edge
#: from the manager back to the models is left out of the cycle search.
ALLOWED_EDGE = ("django_skipqueue.managers", "django_skipqueue.models")


def test_core_modules_import_no_optional_app() -> None:
    graph = read_graph(ROOT)
    wrong = sorted(
        f"{module} imports {target}"
        for edges in (graph.runtime, graph.typing)
        for module, targets in edges.items()
        if app_of(module) is None
        for target in targets
        if app_of(target) is not None
    )
    assert not wrong, "core modules import optional apps:\n" + "\n".join(wrong)


def test_an_optional_app_imports_no_other_app() -> None:
    graph = read_graph(ROOT)
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in graph.runtime.items()
        if (app := app_of(module)) is not None
        for target in targets
        if app_of(target) not in (None, app)
    )
    assert not wrong, "\n".join(wrong)


def test_no_import_cycle() -> None:
    edges = read_graph(ROOT).runtime
    source, models = ALLOWED_EDGE
    edges[source] = {t for t in edges[source] if t != models and not t.startswith(models + ".")}
    found = cycles(edges)
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_graph_sees_imports_inside_functions_and_relative_ones() -> None:
    """The reader would pass everything if it missed lazy or relative imports: prove it sees
    both, on modules whose imports are known."""
    graph = read_graph(ROOT)
    for app in OPTIONAL_APPS:  # each app's hooks import its own modules, inside functions
        assert any(app_of(t) == app for t in graph.runtime[f"django_skipqueue.{app}.apps"])
    lazily = graph.runtime["django_skipqueue.scheduling.apps"]
    assert "django_skipqueue.scheduling.scheduler" in lazily  # inside maintenance_steps()


def test_the_graph_reads_relative_imports(tmp_path: Path) -> None:
    """The package uses absolute imports only (ruff's TID252): a relative one, should it come
    back, is still read as the module it names."""
    package = tmp_path / "django_skipqueue"  # the reader keeps the package's own modules
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from . import leaf\n")
    (package / "sub" / "leaf.py").write_text("def f():\n    from ..base import x\n")
    graph = read_graph(package)
    assert graph.runtime["django_skipqueue.sub"] == {"django_skipqueue.sub.leaf"}
    assert graph.runtime["django_skipqueue.sub.leaf"] == {"django_skipqueue.base"}


def test_the_checks_name_the_backend_class_that_exists() -> None:
    """checks.py names the backend class rather than importing it (the backend runs the
    checks): the name must stay the class's."""
    from django_skipqueue.backend import SkipQueueBackend
    from django_skipqueue.checks import BACKEND_CLASS, is_skipqueue_backend

    assert (SkipQueueBackend.__module__, SkipQueueBackend.__qualname__) == BACKEND_CLASS
    subclass = type("Custom", (SkipQueueBackend,), {})
    assert is_skipqueue_backend(subclass.__new__(subclass))
    assert not is_skipqueue_backend(object())


def test_cycles_finds_a_cycle_and_nothing_else() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [["a", "b", "c"]]
