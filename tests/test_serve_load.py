"""200 concurrent chats through ``zett serve`` all end with the right stops.

Runs ``bench/serve_load.py`` (the server in its own process, the replayed model
routed by request); the timings it prints are figures, not asserted here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

BENCH = Path(__file__).parent.parent / "bench" / "serve_load.py"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_200_concurrent_chats_complete_with_the_right_stops() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--chats", "200", "--json"],
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(done.stdout)
    assert (figures["chats"], figures["completed"], figures["wrong"]) == (200, 200, [])
    assert figures["server_rss_mb"]["peak"] > 0
