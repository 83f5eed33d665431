"""``examples/durable_run.py`` as the README runs it (slow set): started, killed
with SIGKILL while its tool counts, started again. The second run carries run
demo-1 on and ends, with no warning from DBOS (it used to warn on every rerun that
the run's queue differed: the recovered run was started a second time)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dbos", reason="durable runs need the 'durable' extra (dbos)")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "durable_run.py"


def test_killed_then_rerun_it_carries_on_without_a_warning(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    first = subprocess.Popen(
        [sys.executable, str(EXAMPLE)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert first.stdout is not None
    seen = []
    for line in first.stdout:
        seen.append(line)
        if "tool: 2/20" in line:
            break
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    assert any("tool: 2/20" in line for line in seen), seen
    again = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    output = again.stdout + again.stderr
    assert again.returncode == 0, output
    assert "final: Done: counted to 20." in output
    assert "WARNING" not in output and "Traceback" not in output, output
    rows = [line.split()[-1] for line in again.stdout.splitlines() if line.startswith("  row ")]
    messages = [kind for kind in rows if kind.endswith("Message")]  # markers left out
    assert messages == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "AssistantMessage",
    ]  # fmt: skip  (the model was not asked again)
