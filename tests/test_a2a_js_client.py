"""``@a2a-js/sdk`` 1.3.0's own client reads zett's A2A 1.0 server (``tests/a2a_js/``).

``tests/a2a_js/read_tasks.mjs`` builds its client from the agent card
(``ClientFactory.createFromUrl``, the JSONRPC transport) and sends each question
with ``sendMessage`` and ``sendMessageStream``: the state and the stop in the
status message's metadata must be the table's for each scenario of
tests/serve_support.py. Needs node and ``npm ci`` in tests/a2a_js (``.ci/run`` does
both).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from serve_support import make_agent, running_server, scenario_reply
from zett_agent.a2a import create_a2a_app
from zett_agent.testing import ReplayServer

NODE_DIR = Path(__file__).parent / "a2a_js"
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(NODE is None, reason="node is not installed"),
    pytest.mark.skipif(
        not (NODE_DIR / "node_modules" / "@a2a-js" / "sdk" / "package.json").exists(),
        reason="@a2a-js/sdk is not installed: run `npm ci` in tests/a2a_js",
    ),
]

EXPECTED = {
    "hello": ("TASK_STATE_COMPLETED", None),
    "please refuse": ("TASK_STATE_REJECTED", "refusal"),
    "cut": ("TASK_STATE_FAILED", "max_output"),
    "interrupt": ("TASK_STATE_FAILED", "interrupted"),
    "weather": ("TASK_STATE_INPUT_REQUIRED", None),
    "fail": ("TASK_STATE_FAILED", None),
}


def test_the_js_sdk_reads_each_state_and_the_stop_streamed_and_not() -> None:
    with ReplayServer(route=scenario_reply) as replay:
        agent = make_agent(replay.url, approval=lambda call: call.name == "get_weather")
        with running_server(create_a2a_app(agent, owns=True)) as url:
            done = subprocess.run(
                [str(NODE), "read_tasks.mjs", url],
                cwd=NODE_DIR,
                input=json.dumps(list(EXPECTED)),
                capture_output=True,
                text=True,
                timeout=90,
                check=False,
            )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert len(rows) == 2 * len(EXPECTED)
    for row in rows:
        assert row["error"] is None, row
        stop = row["stop"]["reason"] if row["stop"] else None
        assert (row["state"], stop) == EXPECTED[row["question"]], row
        assert row["text"], row
        if row["streaming"]:
            assert row["events"][0] == "task" and row["events"][-1] == "statusUpdate"
