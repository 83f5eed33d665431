"""Durable runs survive SIGKILL: a real worker process (tests/durable_child.py) is
killed during a model stream (from outside, over a ReplayServer), during a tool
(idempotent or not) and between steps, started again, and its final session is
compared with the session of a run that never crashed (slow set); on each engine
(``engine``: DBOS, Temporal; tests/durable_engines.py)."""

from __future__ import annotations

import base64
import json
import os
import pickle
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("dbos", reason="durable runs need the 'durable' extra (dbos)")

from durable_engines import Engine, TemporalEngine, engine, temporal_server
from helpers import default_sigint
from zett_agent import Message, SQLiteSessionStore, StopReason, ToolResultMessage
from zett_agent.durable import TOOL_INTERRUPTED
from zett_agent.testing import ReplayServer, Reply

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
__all__ = ["engine", "temporal_server"]  # the fixtures this module uses

CHILD = Path(__file__).with_name("durable_child.py")
SRC = Path(__file__).resolve().parents[1] / "src"
SECRET = "sk-durable-test-SECRET-0123456789"


def chat(
    text: str, calls: tuple[tuple[str, str, str], ...] = (), finish: str = "stop", **options: Any
) -> Reply:
    """An OpenAI Chat Completions stream: the text in two pieces, the calls, the finish."""

    def chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> Any:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return (
            None,
            {
                "id": "cc-1",
                "object": "chat.completion.chunk",
                "model": "m",
                "choices": [choice],
                **extra,
            },
        )

    half = len(text) // 2
    events = [chunk({"role": "assistant", "content": text[:half]}), chunk({"content": text[half:]})]
    for index, (call_id, name, arguments) in enumerate(calls):
        function = {"name": name, "arguments": arguments}
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {"index": index, "id": call_id, "type": "function", "function": function}
                    ]
                }
            )
        )
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    events.append(chunk({}, finish, usage=usage))
    events.append((None, "[DONE]"))
    return Reply.sse(events, **options)


def tool_run() -> list[Reply]:
    return [
        chat("Noting it first.", (("c1", "note", '{"text": "a"}'),), "tool_calls"),
        chat("Now the weather.", (("c2", "lookup", '{"city": "Paris"}'),), "tool_calls"),
        chat("All done: sunny in Paris.", finish="stop"),
    ]


def refused_run() -> list[Reply]:
    return [chat("I cannot do that.", (("c1", "note", '{"text": "a"}'),), "content_filter")]


def interrupted_run() -> list[Reply]:
    """Text and a whole tool call, then the connection drops: INTERRUPTED."""
    return [chat("Noting it", (("c1", "note", '{"text": "a"}'),), "tool_calls", drop_after=3)]


def start(
    engine: Engine, workdir: Path, url: str, crash: str, extra: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(SRC), **engine.env(), **(extra or {})}
    return subprocess.Popen(
        [sys.executable, str(CHILD), str(workdir), url, crash],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=default_sigint,  # one test sends SIGINT: even from a background job
    )


def finish(process: subprocess.Popen[bytes], timeout: float = 90) -> int:
    out, _ = process.communicate(timeout=timeout)
    if process.returncode not in (0, -signal.SIGKILL):
        raise AssertionError(f"worker failed ({process.returncode}):\n{out.decode()}")
    return process.returncode


def rows(workdir: Path) -> list[tuple[int, str | None, Message]]:
    async def load() -> list[tuple[int, str | None, Message]]:
        async with SQLiteSessionStore(workdir / "sessions.sqlite3") as store:
            return [(r.seq, r.key, r.message) for r in await store.rows("s")]

    return anyio.run(load)


def effects(workdir: Path) -> list[str]:
    log = workdir / "effects.log"
    return log.read_text().split() if log.exists() else []


_BASELINES: dict[str, list[tuple[int, str | None, Message]]] = {}


@pytest.fixture
def tool_baseline(
    tmp_path_factory: pytest.TempPathFactory, engine: Engine
) -> list[tuple[int, str | None, Message]]:
    """The session of the three-call tool run that never crashed (made once per engine)."""
    if engine.name not in _BASELINES:
        own = TemporalEngine(engine.server) if isinstance(engine, TemporalEngine) else engine
        workdir = uncrashed(own, tmp_path_factory.mktemp("baseline"), tool_run())
        _BASELINES[engine.name] = rows(workdir)
    return _BASELINES[engine.name]


def uncrashed(engine: Engine, tmp_path: Path, replies: list[Reply]) -> Path:
    workdir = tmp_path / "uncrashed"
    workdir.mkdir()
    with ReplayServer(replies) as server:
        assert finish(start(engine, workdir, server.url, "none")) == 0
        assert server.remaining == 0 and not server.unexpected
    return workdir


def crashed(engine: Engine, tmp_path: Path, replies: list[Reply], crash: str) -> Path:
    """Run with a self-inflicted SIGKILL at each point of ``crash`` (comma-separated),
    starting again after each, until the run completes."""
    workdir = tmp_path / crash.replace(":", "-").replace(",", "_")
    workdir.mkdir()
    points = crash.split(",")
    for point in points:
        (workdir / f"armed-{point.replace(':', '-')}").touch()
    with ReplayServer(replies) as server:
        for _ in points:
            assert finish(start(engine, workdir, server.url, crash)) == -signal.SIGKILL
            assert not (workdir / "final.json").exists()
        assert finish(start(engine, workdir, server.url, crash)) == 0
        assert server.remaining == 0 and not server.unexpected
    assert not list(workdir.glob("armed-*"))  # every crash happened
    return workdir


def test_an_uncrashed_run_checkpoints_no_key(tmp_path: Path, engine: Engine) -> None:
    workdir = uncrashed(engine, tmp_path, tool_run())
    assert effects(workdir) == [
        "note:a:start",
        "note:a:done",
        "lookup:Paris:start",
        "lookup:Paris:done",
    ]
    stored = rows(workdir)
    # each message once, and each call's started marker (its own row, before the call)
    assert [key for _, key, _ in stored] == [
        "run-1:0", "run-1:1", "run-1:started:c1", "run-1:2", "run-1:3",
        "run-1:started:c2", "run-1:4", "run-1:5",
    ]  # fmt: skip
    assert json.loads((workdir / "final.json").read_text())["text"] == "All done: sunny in Paris."
    if isinstance(engine, TemporalEngine):  # no key anywhere in the run's history
        history = anyio.run(_temporal_history, engine, "run-1")
        assert "All done" in history and SECRET not in history
        return
    # no key anywhere in DBOS's database: inputs, checkpoints, outputs (decoded)
    system_db = workdir / "sessions.dbos.sqlite3"
    assert SECRET.encode() not in system_db.read_bytes()
    seen = 0
    with sqlite3.connect(system_db) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in db.execute(f'SELECT * FROM "{table}"'):
                for value in row:
                    if isinstance(value, str) and value:
                        seen += 1
                        assert SECRET not in _decoded(value), table
    assert seen > 10


_DATA = re.compile(r'"data": "([A-Za-z0-9+/=]+)"')


async def _temporal_history(engine: TemporalEngine, run_id: str) -> str:
    from temporalio.client import Client

    client = await Client.connect(engine.server.address, namespace=engine.namespace)
    history = await client.get_workflow_handle(run_id).fetch_history()
    text = str(history.to_json())  # payloads' data is base64 there: decoded too
    decoded = [base64.b64decode(data).decode("utf-8", "replace") for data in _DATA.findall(text)]
    return "\n".join([text, *decoded])


def _decoded(value: str) -> str:
    try:
        return repr(pickle.loads(base64.b64decode(value, validate=True)))
    except Exception:
        return value


@pytest.mark.parametrize(
    "crash", ["append:2", "append:3", "tool:lookup", "append:2,tool:lookup,append:5"]
)
def test_a_crash_between_steps_or_in_an_idempotent_tool_ends_as_if_none_happened(
    tmp_path: Path,
    crash: str,
    tool_baseline: list[tuple[int, str | None, Message]],
    engine: Engine,
) -> None:
    baseline = tool_baseline
    workdir = crashed(engine, tmp_path, tool_run(), crash)
    assert rows(workdir) == baseline
    runs_of_lookup = 2 if "tool:lookup" in crash else 1
    assert effects(workdir).count("lookup:Paris:start") == runs_of_lookup
    assert effects(workdir).count("note:a:start") == 1  # a finished step never runs again
    assert effects(workdir).count("lookup:Paris:done") == 1


def test_a_tool_running_at_the_crash_is_not_run_again_and_says_so(
    tmp_path: Path, tool_baseline: list[tuple[int, str | None, Message]], engine: Engine
) -> None:
    baseline = tool_baseline
    workdir = crashed(engine, tmp_path, tool_run(), "tool:note")
    assert effects(workdir) == ["note:a:start", "lookup:Paris:start", "lookup:Paris:done"]
    after = rows(workdir)
    interrupted = ToolResultMessage("c1", "note", TOOL_INTERRUPTED, is_error=True)
    assert after[3] == (4, "run-1:2", interrupted)  # after its started marker
    assert after[:3] + after[4:] == baseline[:3] + baseline[4:]


def test_a_kill_during_a_model_stream_sends_that_call_again_and_only_that(
    tmp_path: Path, tool_baseline: list[tuple[int, str | None, Message]], engine: Engine
) -> None:
    baseline = tool_baseline
    workdir = tmp_path / "stream"
    workdir.mkdir()
    first, second, third = tool_run()
    stalled = chat(
        "Now the weather.",
        (("c2", "lookup", '{"city": "Paris"}'),),
        "tool_calls",
        stall_after=1,
        stall_seconds=60,
    )
    # the second model call is killed mid-stream: the first answer and tool are done
    replies = [first, stalled, second, third]
    with ReplayServer(replies) as server:
        worker = start(engine, workdir, server.url, "none")
        deadline = time.monotonic() + 60
        while len(server.requests) < 2:
            assert time.monotonic() < deadline and worker.poll() is None
            time.sleep(0.05)
        time.sleep(0.3)  # the first text piece is on its way
        worker.send_signal(signal.SIGKILL)
        assert finish(worker) == -signal.SIGKILL
        stored = rows(workdir)
        # prompt, first answer, note's marker and result; not the cut answer
        assert len(stored) == 4
        assert finish(start(engine, workdir, server.url, "none")) == 0
        assert server.remaining == 0 and not server.unexpected
        assert len(server.requests) == 4  # the killed call once more, then the last one
    assert rows(workdir) == baseline
    assert effects(workdir).count("note:a:start") == 1


@pytest.mark.parametrize("script", [refused_run, interrupted_run])
def test_a_refusal_or_interruption_recovered_after_a_crash_still_runs_no_tool(
    tmp_path: Path, script: Any, engine: Engine
) -> None:
    own = TemporalEngine(engine.server) if isinstance(engine, TemporalEngine) else engine
    baseline = rows(uncrashed(own, tmp_path, script()))
    workdir = crashed(engine, tmp_path, script(), "append:2")
    assert rows(workdir) == baseline
    answer = baseline[1][2]
    expected = StopReason.REFUSAL if script is refused_run else StopReason.INTERRUPTED
    assert answer.stop is not None and answer.stop.reason is expected  # type: ignore[union-attr]
    assert answer.stop is not None and answer.stop.detail["withheld_tool_calls"] == ["note"]  # type: ignore[union-attr]
    assert effects(workdir) == []


def test_a_run_that_crashes_after_a_tripwire_keeps_the_verdict(
    tmp_path: Path, engine: Engine
) -> None:
    """The input guardrail tripped on an answer holding a tool call; the worker dies
    right after the stored tripwire: the recovered run checks nothing again (the
    verdict is a step), runs no tool, and ends on the same stop. (On Temporal the
    clean run has a namespace of its own: run ids are per namespace, and a second
    ``run-1`` there would be the clean run's, already over, not a new run.)"""

    def script() -> list[Reply]:
        return [chat("Noting it first.", (("c1", "note", '{"text": "a"}'),), "tool_calls")]

    clean = tmp_path / "clean"
    clean.mkdir()
    own = TemporalEngine(engine.server) if isinstance(engine, TemporalEngine) else engine
    with ReplayServer(script()) as server:
        assert finish(start(own, clean, server.url, "guardrail")) == 0
    baseline = rows(clean)
    workdir = tmp_path / "crashed"
    workdir.mkdir()
    (workdir / "armed-append-2").touch()
    with ReplayServer(script()) as server:
        assert finish(start(engine, workdir, server.url, "guardrail,append:2")) == -signal.SIGKILL
        assert not (workdir / "final.json").exists()
        assert finish(start(engine, workdir, server.url, "guardrail,append:2")) == 0
        assert server.remaining == 0 and not server.unexpected  # the model step replayed
    assert rows(workdir) == baseline
    answer = baseline[1][2]
    assert answer.stop is not None and answer.stop.raw == "guardrail:no_notes"  # type: ignore[union-attr]
    assert answer.stop.reason is StopReason.REFUSAL  # type: ignore[union-attr]
    assert answer.stop.detail["withheld_tool_calls"] == ["note"]  # type: ignore[union-attr]
    assert effects(workdir) == ["guardrail:checked"]  # once, and no tool
    final = json.loads((workdir / "final.json").read_text())
    assert final["stop"]["raw"] == "guardrail:no_notes"


def _wait(condition: Any, worker: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline and worker.poll() is None, what
        time.sleep(0.05)


@pytest.mark.parametrize("during", ["tool", "model"])
def test_a_graceful_stop_then_a_restart_ends_as_if_none_happened(
    tmp_path: Path,
    during: str,
    tool_baseline: list[tuple[int, str | None, Message]],
    engine: Engine,
) -> None:
    """Ctrl-C (SIGINT) cancels the run's task: what the loop would store for a
    cancelled run (a cut answer, "cancelled during" results) is not stored, and
    the run started again ends exactly as the run that was never stopped."""
    workdir = tmp_path / during
    workdir.mkdir()
    first, second, third = tool_run()
    replies = [first, second, third]
    if during == "model":
        stalled = chat(
            "Now the weather.",
            (("c2", "lookup", '{"city": "Paris"}'),),
            "tool_calls",
            stall_after=1,
            stall_seconds=60,
        )
        replies = [first, stalled, second, third]
    with ReplayServer(replies) as server:
        worker = start(engine, workdir, server.url, "sleep:lookup" if during == "tool" else "none")
        if during == "tool":
            _wait(lambda: "lookup:Paris:start" in effects(workdir), worker, "the tool")
        else:
            _wait(lambda: len(server.requests) >= 2, worker, "the second model call")
            time.sleep(0.3)
        worker.send_signal(signal.SIGINT)
        worker.communicate(timeout=60)
        assert worker.returncode != 0 and not (workdir / "final.json").exists()
        assert finish(start(engine, workdir, server.url, "none")) == 0
        assert not server.unexpected
    assert rows(workdir) == tool_baseline
