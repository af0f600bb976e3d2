"""A ``measures`` directive: the layout's measures, computed from the code at each build.

Generated, so the architecture page cannot go stale: the figures come from
``tests/support/measures.py`` (the package's modules and functions, read with ``ast``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.support.measures import rows


class Measures(SphinxDirective):
    """Render the measures as a two-column table."""

    def run(self) -> list[nodes.Node]:
        table = nodes.table()
        group = nodes.tgroup(cols=2)
        table += group
        group += [nodes.colspec(colwidth=1), nodes.colspec(colwidth=3)]
        body = nodes.tbody()
        for name, value in [("Measure", "Value"), *rows()]:
            row = nodes.row()
            for text in (name, value):
                entry = nodes.entry()
                entry += nodes.paragraph(text=text)
                row += entry
            body += row
        group += body
        return [table]


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("measures", Measures)
    return {"parallel_read_safe": True, "version": "1"}
