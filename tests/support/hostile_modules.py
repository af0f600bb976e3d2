"""Modules a task lookup must never import: ``this`` and a stand-in for ``antigravity``.

``this`` prints the Zen of Python when imported; the stand-in, written to a temporary directory
put first on ``sys.path`` (so that it shadows the standard library's, which opens a browser),
creates a marker file. A lookup that imports either leaves a trace a test can assert on.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: The Zen's first line: in a process's output, proof that ``this`` was imported.
ZEN = "Beautiful is better than ugly."
#: Task paths that name a module outside the project's packages.
HOSTILE_PATHS = ("this.x", "antigravity.x")


def plant(directory: Path, name: str = "antigravity") -> Path:
    """Write a stand-in module ``name`` into ``directory``; return the marker it would create."""
    marker = directory / f"{name}-was-imported"
    (directory / f"{name}.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    return marker


@contextmanager
def planted(directory: Path) -> Iterator[Path]:
    """Plant the stand-in and make both modules importable anew in this process."""
    marker = plant(directory)
    sys.path.insert(0, str(directory))
    importlib.invalidate_caches()
    names = [name for name in ("this", "antigravity") if name in sys.modules]
    saved = {name: sys.modules.pop(name) for name in names}
    try:
        yield marker
    finally:
        sys.path.remove(str(directory))
        sys.modules.pop("antigravity", None)
        sys.modules.update(saved)
