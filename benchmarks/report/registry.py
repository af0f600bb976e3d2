"""Sections of docs/benchmarks.md register themselves here; the page is their concatenation.

A section module under ``benchmarks/report/sections/`` decorates its renderer with
:func:`section`, giving its place on the page and the raw results (``docs/benchmarks/raw/
NAME.json``) it reads. :func:`sections` imports every such module, so adding a section is
adding a file: nothing else lists them.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Inputs:
    """What a section renders from: the raw results found, the plots drawn, quick or full."""

    results: dict[str, Any]
    figures: dict[str, str] = field(default_factory=dict)
    quick: bool = False


Render = Callable[[Inputs], str]


@dataclass(frozen=True)
class Section:
    """One part of the page: where it goes, what it reads, whether a quick run shows it."""

    name: str
    order: int
    raw: tuple[str, ...]
    render: Render
    full_only: bool

    def shown(self, inputs: Inputs) -> bool:
        """Shown when any of its results exists (always, if it reads none)."""
        if self.full_only and inputs.quick:
            return False
        return not self.raw or any(inputs.results.get(name) for name in self.raw)


_REGISTERED: dict[str, Section] = {}


def section(order: int, *raw: str, full_only: bool = False) -> Callable[[Render], Render]:
    """Register the decorated ``render(inputs) -> markdown`` at ``order`` on the page."""

    def register(render: Render) -> Render:
        name = f"{render.__module__.rsplit('.', 1)[-1]}.{render.__name__}"
        taken = [s.name for s in _REGISTERED.values() if s.order == order and s.name != name]
        if taken:
            raise ValueError(f"section {name}: order {order} is {taken[0]}'s")
        _REGISTERED[name] = Section(name, order, raw, render, full_only)
        return render

    return register


def registered() -> list[Section]:
    """Every registered section in page order (importing the sections package registers them)."""
    package = importlib.import_module("benchmarks.report.sections")
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{module.name}")
    return sorted(_REGISTERED.values(), key=lambda s: s.order)


def raw_names() -> list[str]:
    """The raw result names the registered sections read, once each, in page order."""
    return list(dict.fromkeys(name for s in registered() for name in s.raw))
