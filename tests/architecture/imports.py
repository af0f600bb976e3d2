"""The package's import graph, read with ast: every import, those inside functions included.

Imports under ``if TYPE_CHECKING:`` are edges for the layering (a core module must not even
name an app's types) but not for cycles (they never run).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "django_skipqueue"
#: The optional apps: each plugs in through django_skipqueue.extensions.
OPTIONAL_APPS = ("outbox", "reservations", "scheduling", "workflows")


@dataclass
class Graph:
    """Module -> modules it imports (at run time, and under TYPE_CHECKING)."""

    runtime: dict[str, set[str]] = field(default_factory=dict)
    typing: dict[str, set[str]] = field(default_factory=dict)


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def read_graph(root: Path) -> Graph:
    """The graph of every module under ``root`` (the package's folder)."""
    paths = {module_name(root, path): path for path in root.rglob("*.py")}
    graph = Graph()
    for name, path in paths.items():
        runtime, typing = _imports(name, path, set(paths))
        graph.runtime[name], graph.typing[name] = runtime, typing
    return graph


def _imports(name: str, path: Path, modules: set[str]) -> tuple[set[str], set[str]]:
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    hidden = {id(node) for node in _type_checking_nodes(tree)}
    runtime: set[str] = set()
    typing: set[str] = set()
    for node in ast.walk(tree):
        targets = set(_targets(node, name, is_package, modules))
        (typing if id(node) in hidden else runtime).update(targets)
    runtime.discard(name)
    typing.discard(name)
    return runtime, typing - runtime


def _type_checking_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                yield from ast.walk(child)


def _targets(node: ast.AST, name: str, is_package: bool, modules: set[str]) -> Iterator[str]:
    """The package's modules that ``node`` imports (a name imported from a module: the module)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield from _known(alias.name, modules)
    elif isinstance(node, ast.ImportFrom):
        base = _absolute(node, name, is_package)
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            yield from _known(submodule if submodule in modules else base, modules)


def _absolute(node: ast.ImportFrom, name: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = name.split(".")
    if not is_package:
        parts.pop()
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, node.module] if node.module else parts)


def _known(target: str, modules: set[str]) -> Iterator[str]:
    while target and target not in modules:  # "a.b.c" where c is a name in a.b
        target = target.rpartition(".")[0]
    if target.startswith(PACKAGE):
        yield target


def app_of(module: str) -> str | None:
    """The optional app that ``module`` belongs to, or None for a core module."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in OPTIONAL_APPS else None


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)
