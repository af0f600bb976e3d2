"""Read the docs' markdown the way the doc tests need: sections by heading, fenced code blocks."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
FENCE = re.compile(r"^(`{3,}|~{3,})\s*(\{[\w-]+\}\s*)?([\w+-]*)\s*(.*)$")
DIRECTIVE = re.compile(r"^<!-- tutorial-test: (.+?) -->$")


@dataclass(frozen=True)
class Block:
    """A fenced code block: its language, first line of info and body."""

    path: Path
    line: int
    language: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(DOCS.parent)}:{self.line}"


@dataclass(frozen=True)
class Directive:
    """An instruction to the test runner, written as ``<!-- tutorial-test: ... -->``."""

    path: Path
    line: int
    text: str


@dataclass(frozen=True)
class Section:
    """The text under one heading, up to the next heading of the same or a higher level."""

    path: Path
    level: int
    title: str
    text: str


def read(relative: str) -> str:
    return (DOCS / relative).read_text()


def pages(folder: str) -> list[Path]:
    return sorted((DOCS / folder).glob("*.md"))


def code_blocks(path: Path) -> list[Block]:
    """Return the fenced code blocks of a page in order (nested fences are not supported)."""
    return [item for item in items(path) if isinstance(item, Block)]


def items(path: Path) -> list[Block | Directive]:
    """Return the fenced code blocks and the test directives of a page, in page order."""
    blocks: list[Block | Directive] = []
    lines = path.read_text().splitlines()
    index = 0
    while index < len(lines):
        match = FENCE.match(lines[index].lstrip())
        if not match:
            directive = DIRECTIVE.match(lines[index].strip())
            if directive:
                blocks.append(Directive(path, index + 1, directive.group(1)))
            index += 1
            continue
        fence, start = match.group(1), index
        end = next(
            (i for i in range(index + 1, len(lines)) if lines[i].strip() == fence), len(lines)
        )
        indent = len(lines[start]) - len(lines[start].lstrip())
        body = "\n".join(line[indent:] for line in lines[start + 1 : end])
        # A MyST directive ({note}, {mermaid}) is named by the directive: it is prose, not code.
        language = match.group(3) or (match.group(2) or "").strip()
        blocks.append(Block(path, start + 1, language, body + "\n"))
        index = end + 1
    return blocks


def sections(path: Path) -> list[Section]:
    """Return every section of a page; a section's text includes its subsections."""
    lines = _outside_fences(path.read_text().splitlines())
    headings = [(i, HEADING.match(line)) for i, line in enumerate(lines)]
    found = [(i, len(m.group(1)), m.group(2)) for i, m in headings if m]
    result = []
    for number, (start, level, title) in enumerate(found):
        end = next((i for i, lvl, _ in found[number + 1 :] if lvl <= level), len(lines))
        result.append(Section(path, level, title, "\n".join(lines[start + 1 : end])))
    return result


def section_titled(folder: str, title: str) -> Section | None:
    """Return the first section in ``folder`` whose heading contains ``title``."""
    for path in pages(folder):
        for section in sections(path):
            if title in section.title:
                return section
    return None


def _outside_fences(lines: list[str]) -> list[str]:
    """Blank out fenced code so that '# comment' lines in samples are not read as headings."""
    result, fence = [], None
    for line in lines:
        match = FENCE.match(line.lstrip())
        if fence is None and match:
            fence = match.group(1)
            result.append("")
        elif fence is not None:
            if line.strip() == fence:
                fence = None
            result.append("")
        else:
            result.append(line)
    return result
