"""The table of every runtime's results: Markdown and JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ._run import CHECKS

__all__ = ["make_table"]

_HEAD = {
    "stop": "stop class",
    "raw": "raw kept",
    "tools": "forbidden tools not run",
    "agreement": "stream = body",
    "kept": "text/calls kept",
    "no_crash": "no crash",
}


def make_table(folder: Path) -> tuple[str, list[dict[str, Any]]]:
    """Read ``folder/*.json`` (one result per runtime); the Markdown table and rows."""
    rows = []
    for path in sorted(folder.glob("*.json")):
        if path.name == "table.json":
            continue
        result = json.loads(path.read_text())
        rows.append(
            {
                "runtime": result["runtime"],
                "version": result["version"],
                "cases": result["summary"]["cases"],
                **{check: result["summary"][check] for check in CHECKS},
            }
        )
    rows.sort(key=lambda r: (r["runtime"] != "zett", r["runtime"]))
    head = ["runtime", "version", "cases passed (of run)"] + [_HEAD[c] for c in CHECKS]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for row in rows:
        cells = [
            row["runtime"],
            row["version"],
            f"{row['cases']['passed']}/{row['cases']['of']} (of {row['cases']['total']})",
        ]
        cells += [f"{row[c]['passed']}/{row[c]['of']}" for c in CHECKS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n", rows
