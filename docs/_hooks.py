"""MkDocs hook: links from a page to a repository file outside ``docs/``
(``../bench/README.md``, as the page reads on disk) stay links in the site, which is
built into ``site/`` at the repository's root with ``use_directory_urls: false``, so
the same relative path reaches the file. MkDocs only checks links to its own pages:
this hook checks these (a missing file fails the build) and writes them as HTML so
that MkDocs leaves them alone."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"(!?)\[([^\]]*)\]\((\.\./[^)\s#]+)(#[^)\s]*)?\)")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    here = (Path(config["docs_dir"]) / page.file.src_uri).parent

    def to_html(match: re.Match[str]) -> str:
        image, text, target, anchor = match.groups()
        path = (here / target).resolve()
        if not path.is_relative_to(ROOT) or not path.exists():
            raise ValueError(f"{page.file.src_uri}: the link {target} names no repository file")
        href = html.escape(target + (anchor or ""))
        if image:
            return f'<img src="{href}" alt="{html.escape(text)}">'
        return f'<a href="{href}">{text}</a>'

    out, in_fence = [], False
    for line in markdown.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        out.append(line if in_fence else LINK.sub(to_html, line))
    return "\n".join(out)
