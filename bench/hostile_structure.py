"""Deep JSON from a provider (issue 12, "untrusted structure"): time, memory and the
longest event-loop stall of one agent run, against a normal tool-call run measured
in the same way in the same invocation.

Each case runs in its own process (so peak RSS is its own): an agent on a
ReplayServer (real socket), a SQLite session store in a temporary folder, a
heartbeat coroutine every 10 ms. Prints one line per case and the ratios to the
baseline. A script, not a test::

    PYTHONPATH=src python bench/hostile_structure.py
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CASES = ["baseline", "openai_deep_json_event", "anthropic_deep_tool_input"]
ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    rows = []
    for case in CASES:
        out = subprocess.run(
            [sys.executable, str(ROOT / "tests" / "deep_json.py"), case],
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    base = rows[0]
    for row in rows:
        print(
            f"{row['case']:28} {row['ms']:8.1f} ms ({row['ms'] / base['ms']:.2f}x)"
            f"  peak +{row['peak_mb_above_start']:6.1f} MB  max stall {row['max_stall_ms']:6.1f} ms"
            f"  {row['outcome']}"
        )


if __name__ == "__main__":
    main()
