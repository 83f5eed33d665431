"""On Temporal a durable run's workflow code is deterministic: zett is passed
through Temporal's sandbox (imported once, not per run), so the sandbox does not
catch a clock, random or uuid read in zett's own loop; a profiler on every
thread does here. A run with a tool call, an extension hook, a guardrail and an
approval, and its continuation, read no wall clock, no random source and no uuid
in workflow code (steps, the local activities, may: they run once and are
recorded). That their histories replay: tests/test_durable_temporal_history.py."""

from __future__ import annotations

import datetime
import os
import random
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

pytest.importorskip("temporalio", reason="the Temporal engine needs the 'temporal' extra")

from durable_engines import Engine, engine, launched, temporal_server
from durable_weather import weather_agent
from zett_agent.approvals import approve
from zett_agent.durable import DurableAgent

__all__ = ["engine", "launched", "temporal_server"]  # the fixtures this module uses

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.parametrize("engine", ["temporal"], indirect=True),  # Temporal replays code
]

_CLOCKS = {
    time.time,
    time.time_ns,
    time.monotonic,
    time.monotonic_ns,
    time.perf_counter,
    time.perf_counter_ns,
    os.urandom,
}
_PYTHON = {uuid.uuid1.__code__, uuid.uuid4.__code__}


def _forbidden(arg: Any) -> str | None:
    """What ``arg`` (a called builtin) reads, when it is a clock or random source."""
    if arg in _CLOCKS:
        return f"{arg.__module__}.{arg.__name__}"
    owner = getattr(arg, "__self__", None)
    name = getattr(arg, "__name__", "")
    if owner in (datetime.datetime, datetime.date) and name in {"now", "utcnow", "today"}:
        return f"datetime.{owner.__name__}.{name}"
    if isinstance(owner, random.Random):
        return f"random.{name}"
    return None


def _zett_stack(frame: FrameType | None) -> list[str] | None:
    """The stack when zett's code is on it (logging's own clock is left out:
    a record's time feeds no decision; so are Temporal's deterministic
    ``workflow.random()`` and ``workflow.uuid4()``, seeded by the history)."""
    caller = str(frame.f_globals.get("__name__", "")) if frame is not None else ""
    if caller.startswith("temporalio"):
        return None
    # a garbage-collector callback runs wherever a collection happens to start (in
    # the suite's processes, hypothesis times collections with perf_counter): not
    # workflow code, whatever stack it interrupts
    if caller.startswith(("hypothesis", "coverage")):
        return None
    seen = False
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module == "logging":
            return None
        seen = seen or module.startswith("zett_agent")
        frame = frame.f_back
    return traceback.format_stack(limit=12) if seen else None


@pytest.fixture
def reads() -> Iterator[list[tuple[str, str]]]:
    """Every clock, random or uuid read made by zett code running as Temporal
    workflow code, on any thread started while the test runs: (what, stack)."""
    from temporalio import workflow

    found: list[tuple[str, str]] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_call":
            what = _forbidden(arg)
        elif event == "call" and frame.f_code in _PYTHON:
            what = f"uuid.{frame.f_code.co_name}"
        else:
            return
        if what is None or not workflow.in_workflow():
            return
        stack = _zett_stack(frame)
        if stack is not None:
            found.append((what, "".join(stack)))

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        yield found
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


async def test_workflow_code_reads_no_clock_random_or_uuid(
    reads: list[tuple[str, str]], launched: Path, engine: Engine
) -> None:
    async with DurableAgent(weather_agent(), launched / "s.sqlite3") as durable:
        waiting = await durable.run("Weather in Paris?", session_id="s", run_id="r-det")
        assert waiting.tool_calls  # the run ended waiting for approval
        final = await durable.approve("s", {"c2": approve()})  # the continuation
    assert final.text == "Booked Paris."
    assert not reads, "workflow code read a clock or random source:\n" + "\n".join(
        f"--- {what}\n{stack}" for what, stack in reads[:3]
    )
