"""The documentation as the tests read it: README.md (the front page) and every page
under docs/ (``docs/_front.md``, the template README.md is copied from, and
``docs/_sections.md``, the map of the old README, are left out, and ``docs/_intro/``,
which the pages hold). Tests that check what
the documentation says read it through here, so they hold wherever a section lives."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent
SKIPPED = {"_front.md", "_sections.md"}


def files() -> list[Path]:
    """README.md, then the docs pages in path order."""
    docs = ROOT / "docs"
    pages = sorted(
        p
        for p in docs.rglob("*.md")
        if p.name not in SKIPPED and p.relative_to(docs).parts[0] != "_intro"  # in its page
    )
    return [ROOT / "README.md", *pages]


def text() -> str:
    """All of it, one file after another."""
    return "\n".join(path.read_text(encoding="utf-8") for path in files())


def blocks(language: str) -> list[str]:
    """The distinct ```LANGUAGE blocks, in order (a block repeated, as the front page's
    example is, counts once)."""
    found: dict[str, None] = {}
    for path in files():
        pattern = rf"^```{re.escape(language)}\n(.*?)^```"
        for block in re.findall(pattern, path.read_text(encoding="utf-8"), re.DOTALL | re.M):
            found.setdefault(block, None)
    return list(found)
