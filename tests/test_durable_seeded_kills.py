"""Seeded ``kill -9`` trials of a real worker process (tests/durable_child.py), on
each engine (``engine``: DBOS, Temporal; tests/durable_engines.py; slow set).

Each trial's seed picks where the worker kills itself (SIGKILL from inside the
child at a seeded event, no wall-clock sleep): mid model stream (at the K-th SSE
data line of one of the three model calls), inside the non-idempotent ``note``
(before or after it logged its start), inside the slow idempotent ``lookup`` (at
one of its ten ticks) or between steps (right after the N-th session row). A
fresh worker is started once, and the trial checks: the run completes, its
session is the uncrashed baseline's, the model was asked once per call (the
killed call once more), and ``note`` ran at most once (it appends to a log
opened with O_APPEND).

``ZETT_TEST_KILL_SEEDS=3,17`` runs those seeds only (a failure names its seed).
"""

from __future__ import annotations

import os
import random
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos", reason="durable runs need the 'durable' extra (dbos)")

from durable_engines import Engine, engine, temporal_server
from test_durable_crash import chat, effects, finish, rows, start
from zett_agent import AssistantMessage, Message, ToolResultMessage
from zett_agent.durable import TOOL_INTERRUPTED
from zett_agent.testing import RecordedRequest, ReplayServer, Reply
from zett_agent.tools import ToolStarted

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
__all__ = ["engine", "temporal_server"]  # the fixtures this module uses

TRIALS = 24
PARALLEL = {"dbos": 4, "temporal": 6}
"""Trials at once (each is its own worker processes, model server, session and,
on Temporal, run id and task queue): a DBOS trial mostly starts Python (CPU), a
Temporal takeover mostly waits the task timeout (idle)."""

REPLIES = [
    chat("Noting it first.", (("c1", "note", '{"text": "a"}'),), "tool_calls"),
    chat("Now the weather.", (("c2", "lookup", '{"city": "Paris"}'),), "tool_calls"),
    chat("All done: sunny in Paris.", finish="stop"),
]
DATA_LINES = [5, 5, 4]
"""SSE data lines of each reply (two text pieces, a call, the finish, [DONE])."""
SESSION_ROWS = 8
"""Rows of the run's session: prompt, answer, note's marker, result, answer,
lookup's marker, result, final answer."""


def reply_for(request: RecordedRequest) -> Reply:
    """The reply to the run's n-th model call (n-1 assistant messages in the body),
    so a call sent again after a kill is answered as the first time."""
    messages = request.json["messages"]
    return REPLIES[sum(m["role"] == "assistant" for m in messages)]


@dataclass(frozen=True)
class Trial:
    seed: int
    kind: str  # stream | tool | slow | between
    crash: str  # the child's crash point

    def __str__(self) -> str:
        return (
            f"seed {self.seed} ({self.kind}, {self.crash}; "
            f"rerun with ZETT_TEST_KILL_SEEDS={self.seed})"
        )


def trial(seed: int) -> Trial:
    """The kill point of ``seed``: its kind cycles with the seed (each kind a
    quarter of the trials), the moment within it comes from ``random.Random(seed)``."""
    rng = random.Random(seed)
    kind = ("stream", "tool", "slow", "between")[seed % 4]
    if kind == "stream":
        call = rng.randint(1, 3)
        crash = f"stream:{call}:{rng.randint(1, DATA_LINES[call - 1] - 1)}"
    elif kind == "tool":
        crash = rng.choice(["tool:note", "tool:note:early"])
    elif kind == "slow":
        crash = f"slow:{rng.randint(1, 10)}"
    else:
        crash = f"append:{rng.randint(1, SESSION_ROWS)}"
    return Trial(seed, kind, crash)


def seeds() -> list[int]:
    given = os.environ.get("ZETT_TEST_KILL_SEEDS")
    return [int(s) for s in given.split(",")] if given else list(range(TRIALS))


def summary(stored: list[tuple[int, str | None, Message]], run_id: str) -> list[tuple[Any, ...]]:
    """What a run's session says, run-id free: per row its key's place in the run,
    role, text, tool call names and (for a result) the tool, content and error flag."""
    out: list[tuple[Any, ...]] = []
    for _, key, message in stored:
        place = (key or "").removeprefix(f"{run_id}:")
        if isinstance(message, ToolResultMessage):
            out.append((place, "tool", message.name, message.content, message.is_error))
        elif isinstance(message, AssistantMessage):
            names = [c.name for c in message.tool_calls]
            stop = message.stop.reason if message.stop is not None else None
            out.append((place, "assistant", message.text, names, stop))
        elif isinstance(message, ToolStarted):  # the call's started marker
            out.append((place, "started", message.name))
        else:
            out.append((place, type(message).__name__, getattr(message, "content", None)))
    return out


def interrupted_note(expected: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``expected`` with note's result as a kill inside it leaves it: note is not
    idempotent and its started marker was stored, so the worker that takes over
    cannot know whether it took effect and answers TOOL_INTERRUPTED ("may or may
    not have taken effect", an error result) instead of running it again."""
    return [
        (row[0], "tool", "note", TOOL_INTERRUPTED, True) if row[1:3] == ("tool", "note") else row
        for row in expected
    ]


def one_run(engine: Engine, workdir: Path, run_id: str, crash: str) -> dict[str, Any]:
    """Run ``run_id`` in ``workdir`` with ``crash`` armed: a worker that must die of
    it (unless ``none``), then a fresh one that must finish the run."""
    workdir.mkdir()
    if crash != "none":
        (workdir / f"armed-{crash.replace(':', '-')}").touch()
    with ReplayServer(route=reply_for) as server:
        codes = []
        for _ in range(2 if crash != "none" else 1):
            scope = {"ZETT_TEST_RUN_ID": run_id, "ZETT_TEST_TASK_QUEUE": run_id}
            process = start(engine, workdir, server.url, crash, scope)
            codes.append(finish(process, timeout=180))
        requests = len(server.requests)
    return {
        "codes": codes,
        "requests": requests,
        "fired": not list(workdir.glob("armed-*")),
        "finished": (workdir / "final.json").exists(),
        "summary": summary(rows(workdir), run_id),
        "effects": effects(workdir),
    }


def check(one: Trial, got: dict[str, Any], baseline: list[tuple[Any, ...]]) -> list[str]:
    """What is wrong with the trial's outcome (nothing: an empty list)."""
    wrong = []
    if got["codes"] != [-signal.SIGKILL, 0] or not got["fired"]:
        wrong.append(f"exit codes {got['codes']} (killed, then 0), kill fired: {got['fired']}")
    if not got["finished"]:
        wrong.append("the run did not complete")
    expected = interrupted_note(baseline) if one.crash.startswith("tool:note") else baseline
    if got["summary"] != expected:
        wrong.append(f"session {got['summary']} != baseline {expected}")
    lines = got["effects"]
    note_runs = lines.count("note:a:start")
    wanted_notes = 0 if one.crash == "tool:note:early" else 1
    if note_runs != wanted_notes:  # the non-idempotent tool: never twice
        wrong.append(f"note ran {note_runs} times ({wanted_notes} expected): {lines}")
    lookups = (lines.count("lookup:Paris:start"), lines.count("lookup:Paris:done"))
    wanted = (2 if one.kind == "slow" else 1, 1)  # idempotent: killed inside, run again
    if lookups != wanted:
        wrong.append(f"lookup started/done {lookups}, {wanted} expected: {lines}")
    wanted_requests = 4 if one.kind == "stream" else 3  # the killed call once more
    if got["requests"] != wanted_requests:
        wrong.append(f"{got['requests']} model requests, {wanted_requests} expected")
    return [f"{one}: {w}" for w in wrong]


def test_seeded_kills_of_a_worker_end_as_the_uncrashed_run(
    tmp_path: Path, engine: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    began = time.monotonic()
    clean = one_run(engine, tmp_path / "baseline", "baseline", "none")
    assert clean["codes"] == [0] and clean["finished"] and clean["requests"] == 3, clean
    baseline = clean["summary"]
    assert len(baseline) == SESSION_ROWS
    assert ("2", "tool", "note", "noted a", False) in baseline  # the note ran once, uncut
    trials = [trial(seed) for seed in seeds()]
    assert len({t.kind for t in trials}) == 4 or os.environ.get("ZETT_TEST_KILL_SEEDS")

    def run(one: Trial) -> list[str]:
        name = f"kill-{one.seed}"
        try:
            return check(one, one_run(engine, tmp_path / name, name, one.crash), baseline)
        except Exception as error:  # a worker that failed or hung: the seed is named
            return [f"{one}: {type(error).__name__}: {error}"]

    with ThreadPoolExecutor(PARALLEL[engine.name]) as pool:
        failures = [line for found in pool.map(run, trials) for line in found]
    with capsys.disabled():
        took = time.monotonic() - began
        print(f"\n{engine.name}: {len(trials)} seeded kill trials in {took:.0f} s")
    assert failures == [], "\n".join(failures)
