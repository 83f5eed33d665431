"""Split the full README into the pages of ``docs/`` and make README.md the front page.

    python docs/split_readme.py README.md            # the full README in the checkout
    python docs/split_readme.py --from-git REV       # the full README as commit REV has it
    python docs/split_readme.py README.md --pages-only   # write docs/ only, README.md untouched

Each ``## `` / ``### `` heading of the source goes to the page ``SECTIONS`` names for
it; a heading not in the table (a section added after the table was written) goes to
the page of the section before it, with a warning on stderr. Links are rewritten for
their new place: ``(#anchor)`` becomes a link to the page that now holds the heading,
``(bench/README.md)`` the path from the page to that repository file. Every line of
the source is placed exactly once, or the script fails and writes nothing; the map of
old sections to pages goes to ``docs/_sections.md``. Text that is no README section
(``docs/_intro/PAGE``, written for the site) opens the page PAGE, after its title.
README.md becomes a copy of ``docs/_front.md``, whose set-up commands and Python
blocks must be the source's own.

The output depends on the source text only: running it again on the same source
writes the same files. Run on the front page itself, it refuses (the full text is
in git: ``--from-git REV``). Needs only the standard library.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FRONT = DOCS / "_front.md"
FRONT_MARK = "<!-- front page: docs/_front.md"

# page path under docs/ -> its title (the order is the site's navigation order)
PAGES: dict[str, str] = {
    "index.md": "Start here",
    "stops.md": "Why the model stopped",
    "agent-loop.md": "The agent loop",
    "cli.md": "The zett command",
    "tools.md": "Tools and approvals",
    "mcp.md": "MCP",
    "typed-results.md": "Typed results",
    "models.md": "Models",
    "images.md": "Images and documents",
    "serve.md": "zett serve and front ends",
    "durable.md": "Sessions and durable runs",
    "reliability.md": "Reliability",
    "performance.md": "Performance",
    "providers/index.md": "Providers",
    "providers/guide-gaps.md": "Where the provider guide leaves room",
}

# a README heading (its text after the #s, matched from its start) -> its page
SECTIONS: list[tuple[str, str]] = [
    ("Start here", "index.md"),
    ("The `zett` command", "cli.md"),
    ("`zett chat`", "cli.md"),
    ("Check how it ended", "stops.md"),
    ("A conformance suite for stop handling", "stops.md"),
    ("Typed results", "typed-results.md"),
    ("The sync API", "typed-results.md"),
    ("Models that keep a run going", "models.md"),
    ("Fallback chains", "models.md"),
    ("Rate limits and concurrency", "models.md"),
    ("Reasoning effort", "models.md"),
    ("Provider server tools", "models.md"),
    ("Prompt caching and usage", "models.md"),
    ("Cost and budgets", "models.md"),
    ("Guardrails", "models.md"),
    ("Images, documents and audio", "images.md"),
    ("`zett serve`", "serve.md"),
    ("Other front ends and other agents", "serve.md"),
    ("Providers", "providers/index.md"),
    ("Where the guide leaves room", "providers/guide-gaps.md"),
    ("The network: proxies", "providers/index.md"),
    ("MCP tools", "mcp.md"),
    ("Authorization, elicitation, sampling", "mcp.md"),
    ("Conformance", "mcp.md"),
    ("Approving tool calls", "tools.md"),
    ("What zett sends after a stop", "agent-loop.md"),
    ("Reliability", "reliability.md"),
    ("What zett does not trust", "reliability.md"),
    ("Time and size limits", "reliability.md"),
    ("Hostile input", "reliability.md"),
    ("Untrusted structure, tools and sessions", "reliability.md"),
    ("One gate for every tool call", "reliability.md"),
    ("Durable runs", "durable.md"),
    ("On Temporal", "durable.md"),
    ("Performance", "performance.md"),
    ("Many chats, the pool, start-up", "performance.md"),
    ("More", "index.md"),
]

HEADING = re.compile(r"^(#{2,3}) (.+?)\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"(\])\(([^)\s]+)\)")  # the text may begin on a line before
INLINE_CODE = re.compile(r"`[^`\n]*`")


class SplitError(Exception):
    """The source cannot be split without losing or breaking something."""


@dataclass
class Section:
    heading: str  # the heading's text ("" for the lines before the first heading)
    level: int
    page: str
    first: int  # 1-based line numbers in the source
    lines: list[str] = field(default_factory=list)
    known: bool = True


def github_slug(text: str) -> str:
    """The anchor GitHub gives a README heading."""
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def site_slug(text: str) -> str:
    """The anchor MkDocs' toc extension (its default slugify) gives the heading."""
    ascii_text = unicodedata.normalize("NFKD", text.replace("`", "")).encode("ascii", "ignore")
    value = re.sub(r"[^\w\s-]", "", ascii_text.decode("ascii")).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


def page_of(heading: str) -> str | None:
    for start, page in SECTIONS:
        if heading.startswith(start):
            return page
    return None


def split(source: str) -> list[Section]:
    """The source's sections, in order, each with its page; every line in one of them."""
    sections = [Section("", 1, "index.md", 1)]
    in_fence = False
    for number, line in enumerate(source.splitlines(), start=1):
        if FENCE.match(line):
            in_fence = not in_fence
        heading = None if in_fence else HEADING.match(line)
        if heading:
            text, level = heading.group(2), len(heading.group(1))
            page = page_of(text)
            known = page is not None
            if page is None:
                page = sections[-1].page
                print(
                    f"warning: README line {number}: section {text!r} is not in the table "
                    f"of docs/split_readme.py; it goes to docs/{page} with the one before it",
                    file=sys.stderr,
                )
            sections.append(Section(text, level, page, number, known=known))
        sections[-1].lines.append(line)
    if in_fence:
        raise SplitError("the source ends inside a code block")
    placed = sum(len(s.lines) for s in sections)
    if placed != len(source.splitlines()):
        raise SplitError(f"{placed} of {len(source.splitlines())} lines placed")
    return sections


def anchors(sections: list[Section]) -> dict[str, tuple[str, str]]:
    """GitHub's anchor of each heading -> (its page, its anchor on that page)."""
    found: dict[str, tuple[str, str]] = {}
    github_seen: dict[str, int] = {}
    site_seen: dict[tuple[str, str], int] = {}
    for section in sections:
        if not section.heading:
            continue
        slug = github_slug(section.heading)
        count = github_seen.get(slug, 0)
        github_seen[slug] = count + 1
        key = slug if count == 0 else f"{slug}-{count}"
        site = site_slug(section.heading)
        seen = site_seen.get((section.page, site), 0)
        site_seen[(section.page, site)] = seen + 1
        found[key] = (section.page, site if seen == 0 else f"{site}_{seen}")
    return found


def relative(target: str, page: str) -> str:
    """``target`` (a path from the repository root) as a link from docs/``page``."""
    return Path(os.path.relpath(ROOT / target, (DOCS / page).parent)).as_posix()


def fix_links(line: str, page: str, where: dict[str, tuple[str, str]], number: int) -> str:
    def fix(match: re.Match[str]) -> str:
        text, target = match.group(1), match.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            return match.group(0)
        path, _, anchor = target.partition("#")
        if not path:
            if anchor not in where:
                raise SplitError(f"README line {number}: no heading has the anchor #{anchor}")
            to_page, to_anchor = where[anchor]
            link = "" if to_page == page else Path(os.path.relpath(
                DOCS / to_page, (DOCS / page).parent)).as_posix()  # fmt: skip
            return f"{text}({link}#{to_anchor})"
        if not (ROOT / path).exists():
            raise SplitError(f"README line {number}: the link target {path} does not exist")
        return f"{text}({relative(path, page)}{'#' + anchor if anchor else ''})"

    # links inside inline code are text, not links
    pieces = re.split(r"(`[^`\n]*`)", line)
    return "".join(p if INLINE_CODE.fullmatch(p) else LINK.sub(fix, p) for p in pieces)


def render(sections: list[Section]) -> dict[str, str]:
    """The text of each page."""
    where = anchors(sections)
    bodies: dict[str, list[str]] = {page: [] for page in PAGES}
    for section in sections:
        body = bodies[section.page]
        in_fence = False
        for offset, line in enumerate(section.lines):
            if FENCE.match(line):
                in_fence = not in_fence
            fixed = (
                line if in_fence else fix_links(line, section.page, where, section.first + offset)
            )
            body.append(fixed)
    pages = {}
    for page, lines in bodies.items():
        while lines and not lines[-1].strip():
            lines.pop()
        if not lines:
            continue
        head = [] if lines[0].startswith("# ") else [f"# {PAGES[page]}", ""]
        intro = DOCS / "_intro" / page  # hand-written text the page opens with
        if intro.exists() and head:
            head += [*intro.read_text(encoding="utf-8").rstrip("\n").split("\n"), ""]
        pages[page] = "\n".join(head + lines) + "\n"
    return pages


def section_map(sections: list[Section]) -> str:
    rows = [
        "# Where each README section went",
        "",
        "Written by `docs/split_readme.py` when the README (then "
        f"{sum(len(s.lines) for s in sections)} lines) became the front page and these pages.",
        "Each section of it, in its order, and the page that holds it now (every line of",
        "it is there).",
        "",
        "| README section | lines | page |",
        "| --- | --- | --- |",
    ]
    for section in sections:
        name = section.heading or "(title and introduction)"
        indent = "&nbsp;&nbsp;&nbsp;&nbsp;" if section.level == 3 else ""
        last = section.first + len(section.lines) - 1
        note = "" if section.known else " (not in the table: with the section before)"
        name = name.replace("|", "\\|")
        rows.append(
            f"| {indent}{name} | {section.first}-{last} | [{PAGES[section.page]}]"
            f"({section.page}){note} |"
        )
    return "\n".join(rows) + "\n"


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


def check_front(source: str, front: str, sections: list[Section] | None = None) -> None:
    """The front page repeats the source's set-up commands and Python blocks verbatim."""
    sections = split(source) if sections is None else sections
    start = next((s for s in sections if s.heading.startswith("Start here")), None)
    if start is None:
        raise SplitError("the source has no 'Start here' section")
    commands = blocks("\n".join(start.lines) + "\n", "sh")[:2]
    for command in commands:
        if f"```sh\n{command}```" not in front:
            raise SplitError(
                "docs/_front.md does not hold this set-up command of the README verbatim "
                f"(update it there):\n{command}"
            )
    for block in blocks(front, "python"):
        if f"```python\n{block}```" not in source:
            raise SplitError(
                "a Python block of docs/_front.md is not in the README verbatim "
                f"(copy it from there):\n{block}"
            )


def read_source(args: argparse.Namespace) -> tuple[str, str]:
    if args.from_git:
        done = subprocess.run(
            ["git", "show", f"{args.from_git}:README.md"],
            cwd=ROOT, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise SplitError(f"git show {args.from_git}:README.md failed: {done.stderr.strip()}")
        return done.stdout, f"{args.from_git}:README.md"
    if args.source is None:
        raise SplitError("give the full README's path, or --from-git REV")
    return Path(args.source).read_text(encoding="utf-8"), args.source


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", help="the full README (usually README.md)")
    parser.add_argument("--from-git", metavar="REV", help="read README.md as commit REV has it")
    parser.add_argument(
        "--pages-only", action="store_true", help="write docs/ only; leave README.md as it is"
    )
    args = parser.parse_args(argv)
    try:
        source, name = read_source(args)
        if FRONT_MARK in source:
            raise SplitError(
                f"{name} is the front page already, not the full README; give the full text "
                "from git: python docs/split_readme.py --from-git REV (a commit before the split)"
            )
        front = FRONT.read_text(encoding="utf-8")
        sections = split(source)
        pages = render(sections)
        check_front(source, front, sections)
    except SplitError as error:
        print(f"split_readme: {error}; nothing written", file=sys.stderr)
        return 1
    for page, text in pages.items():
        path = DOCS / page
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (DOCS / "_sections.md").write_text(section_map(sections), encoding="utf-8")
    if not args.pages_only:
        (ROOT / "README.md").write_text(front, encoding="utf-8")
    print(
        f"split_readme: {len(source.splitlines())} lines of {name} -> {len(pages)} pages "
        f"under docs/ ({len(sections)} sections; map in docs/_sections.md)"
        + ("" if args.pages_only else "; README.md is now docs/_front.md"),
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
