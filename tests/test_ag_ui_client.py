"""``@ag-ui/client`` 1.0.0 itself reads ``zett serve``'s AG-UI route (``tests/ag_ui/``).

``tests/ag_ui/read_runs.mjs`` runs each case with the client's own ``HttpAgent``,
whose pipeline enforces the 1.0 schema on every event (an unknown field is stripped
with a warning) and verifies the event sequence (a violation errors the run). Every
recording of the corpus, streamed and not (tests/ag_ui_corpus.py), must give 0
violations and 0 warnings, and the stop the client reads on ``RUN_FINISHED`` must be
the stored answer's. A call waiting for approval is a pending interrupt the client
answers with ``resume``. Needs node and ``npm ci`` in tests/ag_ui (``.ci/run``
does both).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from ag_ui_corpus import CASES, corpus_app, thread_of
from serve_support import FINAL_WEATHER, make_agent, running_server, scenario_reply
from zett_agent.serve import create_app
from zett_agent.sessions import InMemorySessionStore
from zett_agent.testing import ReplayServer

NODE_DIR = Path(__file__).parent / "ag_ui"
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(NODE is None, reason="node is not installed"),
    pytest.mark.skipif(
        not (NODE_DIR / "node_modules" / "@ag-ui" / "client" / "package.json").exists(),
        reason="@ag-ui/client is not installed: run `npm ci` in tests/ag_ui",
    ),
]


def read_with_the_client(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(NODE), "read_runs.mjs"],
        cwd=NODE_DIR,
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    results: list[dict[str, Any]] = json.loads(done.stdout)
    return results


@pytest.mark.slow  # ~8-16 s: 79 runs through node; .ci/run's client step runs it
def test_every_corpus_stop_passes_the_clients_verification_and_reads_the_stop() -> None:
    app, _ = corpus_app()
    with running_server(app) as url:
        cases = [
            {"url": url + c.path, "threadId": thread_of(c), "runId": "r1", "question": c.name}
            for c in CASES
        ]
        results = read_with_the_client(cases)
        stored = {
            c.name: httpx.get(f"{url}/{c.key}/api/sessions/{thread_of(c)}").json() for c in CASES
        }
    assert len(results) == len(CASES)
    violations = {r["threadId"]: r["violations"] + r["warnings"] for r in results}
    assert {k: v for k, v in violations.items() if v} == {}
    for case, result in zip(CASES, results, strict=True):
        events = result["events"]
        assert events[0] == "RUN_STARTED", case.name
        if result["runError"] is not None:
            assert events[-1] == "RUN_ERROR", case.name
            continue
        assert events[-3:] == ["CUSTOM", "STATE_SNAPSHOT", "RUN_FINISHED"], case.name
        finished = result["finished"]
        assert finished["outcome"] == {"type": "success"}, case.name
        stop = finished["result"]["stop"]
        assert finished["metadata"]["zett"]["stop"] == stop
        kept = stored[case.name]["messages"][-1]["metadata"]["stop"]
        if stop is None:
            assert kept is None, case.name
        else:
            assert kept == {k: stop[k] for k in ("reason", "raw", "category", "message")}
        # what a stock client keeps: the answer's text as an assistant message
        text = stored[case.name]["messages"][-1]["parts"]
        if any(p["type"] == "text" and p["text"] for p in text):
            assert any(m["role"] == "assistant" for m in result["messages"]), case.name


def test_an_approval_is_a_pending_interrupt_the_client_resumes() -> None:
    with ReplayServer(route=scenario_reply) as replay:
        agent = make_agent(replay.url, approval=lambda call: call.name == "get_weather")
        app = create_app(agent, InMemorySessionStore(), owns=True)
        with running_server(app) as url:
            first = read_with_the_client(
                [{"url": f"{url}/api/ag-ui", "threadId": "w1", "runId": "a", "question": "weather"}]
            )[0]
            assert first["violations"] == first["warnings"] == []
            assert first["finished"]["outcome"]["type"] == "interrupt"
            [interrupt] = first["interrupts"]
            assert interrupt["toolCallId"] == "call_w1"
            answer = {"interruptId": interrupt["id"], "status": "resolved"}
            answer["payload"] = {"approved": True}
            second = read_with_the_client(
                [{"url": f"{url}/api/ag-ui", "threadId": "w1", "runId": "b", "resume": [answer]}]
            )[0]
    assert second["violations"] == second["warnings"] == []
    assert second["finished"]["outcome"] == {"type": "success"}
    assert second["interrupts"] == []
    assert "TOOL_CALL_RESULT" in second["events"]
    texts = [m.get("content") for m in second["messages"] if m["role"] == "assistant"]
    assert FINAL_WEATHER in texts
