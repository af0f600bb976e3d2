"""Links a reader follows: between docs pages (on GitHub and in Sphinx), and from check hints.

Pages link with plain relative Markdown links (``[text](page.md)``), which GitHub follows and
MyST turns into document references; a Sphinx role such as ``{doc}`` shows as raw text on
GitHub. System check hints name a page of docs/ that exists, never an unpublished address.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.support import docpages

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "django_skipqueue"
PAGES = sorted(
    [ROOT / "README.md", *(p for p in docpages.DOCS.rglob("*.md") if "_build" not in p.parts)]
)
#: A Sphinx/MyST role: ``{doc}`target```, ``{ref}`...```.
ROLE = re.compile(r"\{(doc|ref|any)\}`")
#: A relative Markdown link to a page, with an optional anchor.
PAGE_LINK = re.compile(r"\]\((?!https?://|mailto:)([^)\s#]+\.md)(#[^)\s]+)?\)")
DOCS_PATH = re.compile(r"\bdocs/[\w/.-]+\.md\b")


def _prose(path: Path) -> str:
    """The page without its fenced code blocks (samples may show any text)."""
    return re.sub(r"^(```|~~~).*?^\1", "", path.read_text(), flags=re.S | re.M)


def _anchors(path: Path) -> set[str]:
    """The heading anchors MyST makes (myst_heading_anchors = 3), GitHub-style."""
    headings = re.findall(r"^#{1,3} (.+)$", _prose(path), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_pages_link_with_markdown_links_that_resolve(page: Path):
    text = _prose(page)
    roles = ROLE.findall(text)
    assert not roles, f"{page.name}: {len(roles)} Sphinx roles show as raw text on GitHub"
    for target, anchor in PAGE_LINK.findall(text):
        linked = (page.parent / target).resolve()
        assert linked.is_file(), f"{page.name}: {target} does not exist"
        if anchor:
            assert anchor[1:] in _anchors(linked), f"{page.name}: no {anchor} in {target}"


def test_the_docs_link_to_each_other():
    """The scan above is not vacuous: the pages do link to each other."""
    links = sum(len(PAGE_LINK.findall(_prose(page))) for page in PAGES)
    assert links > 50


def _is_hint(node: ast.AST) -> bool:
    """A ``hint=`` argument, or an assignment to a ``...HINT`` name."""
    if isinstance(node, ast.keyword):
        return node.arg == "hint"
    names = node.targets if isinstance(node, ast.Assign) else []
    return any(isinstance(name, ast.Name) and name.id.endswith("HINT") for name in names)


def _hint_texts() -> list[tuple[str, str]]:
    """(module, source) of every ``hint=`` argument and ``HINT`` constant of the package.

    A hint made by a function of the same module (``hint=_hint(key)``) stands for that
    function's source.
    """
    found = []
    for module in PACKAGE.rglob("*.py"):
        tree = ast.parse(module.read_text())
        functions = {
            node.name: ast.unparse(node) for node in tree.body if isinstance(node, ast.FunctionDef)
        }
        for node in ast.walk(tree):
            if not _is_hint(node):
                continue
            value = node.value  # type: ignore[attr-defined]
            called = (
                value.func.id
                if isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                else None
            )
            found.append((module.name, functions.get(called or "", ast.unparse(value))))
    return found


def test_every_check_hint_points_at_a_docs_page_that_exists():
    hints = _hint_texts()
    assert len(hints) >= 10
    pages = set()
    for module, source in hints:
        assert "http" not in source, f"{module}: {source} points at an address that may not exist"
        assert "HINT" in source or DOCS_PATH.search(source), f"{module}: {source} names no page"
        pages.update(DOCS_PATH.findall(source))
    assert "docs/reference/checks.md" in pages
    for page in pages:
        assert (ROOT / page).is_file(), page


def test_readme_lists_every_how_to_page():
    """A reader scanning the README's documentation list finds every how-to guide there."""
    readme = (ROOT / "README.md").read_text()
    linked = {Path(target).name for target, _ in PAGE_LINK.findall(readme) if "howto/" in target}
    missing = sorted({page.name for page in (docpages.DOCS / "howto").glob("*.md")} - linked)
    assert not missing, f"README.md's how-to list lacks {missing}"
