"""``python -m zett_conformance run --runtime NAME`` and ``... table``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ._cases import load_cases
from ._run import ADAPTERS, CHECKS, run_cases, write_result
from ._table import make_table

RESULTS = Path("conformance/results")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m zett_conformance")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one runtime's adapter over the cases")
    run.add_argument("--runtime", required=True, choices=sorted(ADAPTERS))
    run.add_argument("--cases", nargs="*", default=[], help="case id prefixes to run")
    run.add_argument("--results", type=Path, default=RESULTS, help="folder for <runtime>.json")
    run.add_argument("--jobs", type=int, default=1, help="cases run at a time")
    run.add_argument("--failures", action="store_true", help="print every failed check")
    table = sub.add_parser("table", help="the table of every result in --results")
    table.add_argument("--results", type=Path, default=RESULTS)
    sub.add_parser("list", help="the case ids")
    args = parser.parse_args(argv)

    if args.command == "list":
        for case in load_cases():
            print(case.id)
        return 0
    if args.command == "table":
        markdown, rows = make_table(args.results)
        (args.results / "table.md").write_text(markdown)
        (args.results / "table.json").write_text(json.dumps(rows, indent=1) + "\n")
        print(markdown, end="")
        return 0
    result = run_cases(args.runtime, args.cases, jobs=args.jobs)
    path = write_result(result, args.results)
    summary = result["summary"]
    cases = summary["cases"]
    print(
        f"{result['runtime']} {result['version']}: {cases['passed']}/{cases['of']} cases"
        f" pass every check ({cases['total']} cases)"
    )
    for check in CHECKS:
        print(f"  {check:10} {summary[check]['passed']}/{summary[check]['of']}")
    if args.failures:
        for record in result["cases"]:
            bad = [c for c, v in record.get("checks", {}).items() if v is False]
            if bad:
                obs = record["observed"] or {}
                print(f"FAIL {record['id']}: {','.join(bad)} observed stop={obs.get('stop')} "
                      f"raw={obs.get('raw')} error={obs.get('error')} ran={record['ran']} "
                      f"crash={record['crash']}")  # fmt: skip
    print(f"written {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
