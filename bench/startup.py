"""Start-up as a user pays it: the imports an agent needs and a first ``create_agent``.

Usage::

    python bench/startup.py              # 11 rounds, each statement in a fresh interpreter
    python bench/startup.py --rounds 21 --json
    python bench/startup.py --instructions   # valgrind instruction counts: load-proof (~4 min)
    python bench/startup.py --profile    # -X importtime: the slowest modules of "first agent"

Bytecode is written once (``PYTHONPYCACHEPREFIX`` in a temporary folder, for
zett and its dependencies alike), then each round runs every statement below in
its own fresh ``python`` (in rotation),
timed inside the process with ``time.perf_counter`` around the statement (not
``-X importtime``, whose own bookkeeping inflates every figure); a figure is the
median over the rounds, a ratio the median of the per-round ratios to the
baseline measured in the same round:

=====================  =========================================================
``baseline``           ``import httpx, pydantic`` (what zett cannot do without)
``import``             ``from zett_agent import create_agent, AgentRunConfig``
``first agent``        that, then ``asyncio.run(create_agent("openai:gpt-4o-mini",
                       api_key="sk-bench"))``
``first agent + tool``  the same with ``tools=[a function]`` (pydantic builds the
                       tool's argument model: its model machinery is imported then)
``import zett_agent``  the lazy package alone
=====================  =========================================================

The target of issue 28: ``import`` and ``first agent`` within 1.25x the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PYCACHE = Path(tempfile.gettempdir()) / "zett-bench-pycache"


def environment() -> dict[str, str]:
    """The subprocesses' environment: this tree first, and bytecode written and read
    (under :data:`PYCACHE`, for every module alike) as an installed package has it;
    with ``PYTHONDONTWRITEBYTECODE`` every zett module would be compiled at each start."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(SRC), "PYTHONPYCACHEPREFIX": str(PYCACHE)}


IMPORT = "from zett_agent import create_agent, AgentRunConfig\n"
FIRST_AGENT = """
import asyncio
agent = asyncio.run(create_agent("openai:gpt-4o-mini", api_key="sk-bench"))
"""
WITH_TOOL = """
import asyncio
def get_weather(city: str) -> str:
    '''The weather in a city.'''
    return city
agent = asyncio.run(create_agent("openai:gpt-4o-mini", api_key="sk-bench", tools=[get_weather]))
"""

STATEMENTS = {
    "baseline": "import httpx, pydantic",
    "import": IMPORT,
    "first agent": IMPORT + FIRST_AGENT,
    "first agent + tool": IMPORT + WITH_TOOL,
    "import zett_agent": "import zett_agent",
}
TARGET = 1.25
VALGRIND = ("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null")

_TIMED = """
import time
_t = time.perf_counter()
exec(compile({code!r}, "<bench>", "exec"))
print((time.perf_counter() - _t) * 1000)
"""


def timed(statement: str) -> float:
    """Milliseconds ``statement`` takes in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", _TIMED.format(code=statement)],
        capture_output=True,
        text=True,
        check=True,
        env=environment(),
    )
    return float(out.stdout.strip().splitlines()[-1])


def measure(rounds: int) -> dict[str, object]:
    names = list(STATEMENTS)
    for statement in STATEMENTS.values():  # writes the bytecode of everything imported
        timed(statement)
    values: dict[str, list[float]] = {name: [] for name in names}
    for n in range(rounds):
        for name in names[n % len(names) :] + names[: n % len(names)]:
            values[name].append(timed(STATEMENTS[name]))
    base = values["baseline"]
    figures: dict[str, object] = {
        "rounds": rounds,
        "load_average": os.getloadavg()[0],
        "ms": {name: round(statistics.median(v), 1) for name, v in values.items()},
        "min_ms": {name: round(min(v), 1) for name, v in values.items()},
        "vs_baseline": {
            name: round(statistics.median(a / b for a, b in zip(v, base, strict=True)), 3)
            for name, v in values.items()
            if name != "baseline"
        },
        "target": TARGET,
    }
    ratios = figures["vs_baseline"]
    assert isinstance(ratios, dict)
    figures["met"] = all(ratios[k] <= TARGET for k in ("import", "first agent"))
    return figures


def instructions() -> dict[str, object]:
    """Instructions each statement executes (``valgrind --tool=callgrind``, less
    ``python -c pass``): a count the machine's load does not move."""
    import re
    import shutil

    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")
    counts: dict[str, int] = {}
    for name, statement in {"pass": "pass", **STATEMENTS}.items():
        timed(statement)  # bytecode first
        proc = subprocess.run(
            [*VALGRIND, sys.executable, "-c", statement],
            capture_output=True,
            text=True,
            check=True,
            env=environment(),
        )
        found = re.search(r"Collected : (\d+)", proc.stderr)
        assert found, proc.stderr[-500:]
        counts[name] = int(found.group(1))
    base = counts.pop("pass")
    net = {name: n - base for name, n in counts.items()}
    ratios = {k: round(v / net["baseline"], 3) for k, v in net.items() if k != "baseline"}
    return {
        "instructions_millions": {k: round(v / 1e6, 1) for k, v in net.items()},
        "vs_baseline": ratios,
        "target": TARGET,
        "met": all(ratios[k] <= TARGET for k in ("import", "first agent")),
    }


def profile(which: str) -> None:
    """The slowest modules (own time) of a statement's imports, by -X importtime."""
    timed(STATEMENTS[which])  # bytecode first
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", STATEMENTS[which]],
        capture_output=True,
        text=True,
        check=True,
        env=environment(),
    )
    rows = []
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "self" not in line:
            own, cumulative, name = line.removeprefix("import time:").split("|")
            rows.append((int(own), int(cumulative), name.rstrip()))
    print("own ms  cumulative ms  module")
    for own, cumulative, name in sorted(rows, reverse=True)[:30]:
        print(f"{own / 1000:6.1f}  {cumulative / 1000:13.1f}  {name}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--instructions", action="store_true", help="valgrind instruction counts (~4 min)"
    )
    parser.add_argument(
        "--profile", nargs="?", const="first agent", choices=list(STATEMENTS), default=None
    )
    args = parser.parse_args()
    if args.profile:
        profile(args.profile)
        return 0
    if args.instructions:
        counted = instructions()
        if args.json:
            print(json.dumps(counted, indent=2))
            return 0
        millions, x = counted["instructions_millions"], counted["vs_baseline"]
        assert isinstance(millions, dict) and isinstance(x, dict)
        print("start-up in instructions (valgrind callgrind, less python -c pass)")
        for name in STATEMENTS:
            shown = "" if name == "baseline" else f"{x[name]:6.2f}x baseline"
            print(f"  {name:18} {millions[name]:8.1f} M  {shown}")
        print(f"  target {TARGET}x: {'met' if counted['met'] else 'NOT met'}")
        return 0
    figures = measure(args.rounds)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    ms, low, ratio = figures["ms"], figures["min_ms"], figures["vs_baseline"]
    assert isinstance(ms, dict) and isinstance(low, dict) and isinstance(ratio, dict)
    print(
        f"start-up: median of {args.rounds} fresh interpreters, in-process perf_counter, "
        f"load average {figures['load_average']:.1f}"
    )
    for name, statement in STATEMENTS.items():
        shown = statement.strip().splitlines()[0]
        if "create_agent(" in statement:
            shown += " + create_agent(...)" + (" with a tool" if "tools=" in statement else "")
        x = "" if name == "baseline" else f"{ratio[name]:6.2f}x baseline"
        print(f"  {name:18} {ms[name]:7.1f} ms (min {low[name]:6.1f})  {x:18} {shown}")
    verdict = "met" if figures["met"] else "NOT met"
    print(f"  target: import and first agent within {TARGET}x: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
