"""A durable worker process for the crash tests (tests/test_durable_crash.py).

``python durable_child.py WORKDIR BASE_URL CRASH`` runs run ``run-1`` of agent
``crashy`` over an OpenAI-compatible server at BASE_URL, in WORKDIR's
``sessions.sqlite3`` (DBOS's system database beside it, or Temporal when
``ZETT_TEST_ENGINE=temporal``: tests/durable_engines.py), then writes the final
message to ``final.json``. Started again after a kill, it carries the run on.

CRASH arms self-inflicted SIGKILLs, each once (its file ``armed-<point>`` is
removed first), comma-separated: ``none``; ``tool:NAME`` while tool NAME runs;
``append:N`` right after the N-th session row is written (between steps);
``sleep:lookup`` makes ``lookup`` take 4 s (for a stop from outside); ``guardrail``
gives the agent an input guardrail that logs its check and trips;
``stream:M:K`` once the K-th SSE ``data:`` line of the M-th model call of the run
has arrived (before zett reads it); ``tool:note:early`` in ``note`` before it logs
its start; ``slow:K`` makes ``lookup`` take ten ticks of 50 ms and kills at tick K.
A kill or a Ctrl-C from outside is done by the test itself.

``ZETT_TEST_RUN_ID`` (default ``run-1``) and ``ZETT_TEST_TASK_QUEUE`` (Temporal;
default the engine's) let trials share one namespace without taking each
other's runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from zett_agent import Agent, AgentRunConfig, Message, Model, SQLiteSessionStore, Tripwire
from zett_agent._messages import message_to_dict
from zett_agent.approvals import ApprovalConflictError, approve, requires_approval
from zett_agent.durable import (
    DurableAgent,
    DurableConfig,
    DurableRuns,
    TemporalConfig,
    ashutdown,
    idempotent,
    launch,
    system_database_next_to,
)
from zett_agent.durable._runtime import DEFAULT_TASK_QUEUE

SECRET = "sk-durable-test-SECRET-0123456789"

WORKDIR = Path(sys.argv[1])
CRASH = sys.argv[3].split(",")
RUN_ID = os.environ.get("ZETT_TEST_RUN_ID", "run-1")


def effect(line: str) -> None:
    worker = os.environ.get("ZETT_TEST_WORKER")
    line = f"{worker}:{line}" if worker else line
    with (WORKDIR / "effects.log").open("a") as log:  # O_APPEND: whole lines
        log.write(line + "\n")
        log.flush()
        os.fsync(log.fileno())


def armed(point: str) -> bool:
    flag = WORKDIR / f"armed-{point.replace(':', '-')}"
    if point in CRASH and flag.exists():
        flag.unlink()
        return True
    return False


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def note(text: str) -> str:
    """Write a note (not idempotent: every call adds a line).

    Args:
        text: the note.
    """
    if armed("tool:note:early"):
        die()
    effect(f"note:{text}:start")
    if armed("tool:note"):
        die()
    effect(f"note:{text}:done")
    return f"noted {text}"


@idempotent
def lookup(city: str) -> str:
    """Look up the weather of a city (idempotent).

    Args:
        city: the city.
    """
    effect(f"lookup:{city}:start")
    if armed("tool:lookup"):
        die()
    if "sleep:lookup" in CRASH:  # long enough for the test to stop the process
        time.sleep(4)
    ticks = [point for point in CRASH if point.startswith("slow:")]
    for tick in range(1, 11) if ticks else ():
        time.sleep(0.05)
        if armed(f"slow:{tick}"):
            die()
    effect(f"lookup:{city}:done")
    return f"sunny in {city}"


def pay(amount: int) -> str:
    """Pay an amount (not idempotent: every call pays once more; needs approval).

    Args:
        amount: what to pay.
    """
    effect(f"pay:{amount}:start")
    if armed("tool:pay"):
        die()
    effect(f"pay:{amount}:done")
    return f"paid {amount}"


def no_notes(message: object) -> Tripwire:
    """An input guardrail that trips (each check is logged)."""
    effect("guardrail:checked")
    return Tripwire("no notes today")


class KillingStore(SQLiteSessionStore):
    async def append_if_absent(
        self, session_id: str, message: object, **options: object
    ) -> int | None:
        if "race" in CRASH:  # both deciders read the waiting call: both reach the CAS
            (WORKDIR / f"at-cas-{os.getpid()}").touch()
            deadline = time.monotonic() + 20
            while len(list(WORKDIR.glob("at-cas-*"))) < 2 and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
        return await super().append_if_absent(session_id, message, **options)  # type: ignore[arg-type]

    async def append(self, session_id: str, message: Message, **options: object) -> int:
        seq = await super().append(session_id, message, **options)  # type: ignore[arg-type]
        if armed(f"append:{seq}"):
            die()
        return seq


class KillingStream(httpx.AsyncByteStream):
    """A response body that kills the process once its ``kill_at``-th SSE data line
    has arrived, before the bytes reach zett."""

    def __init__(self, inner: httpx.AsyncByteStream, point: str, kill_at: int) -> None:
        self.inner, self.point, self.kill_at = inner, point, kill_at
        self.seen = b""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            self.seen += chunk
            if self.seen.count(b"data:") >= self.kill_at and armed(self.point):
                die()
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class KillingTransport(httpx.AsyncBaseTransport):
    """HTTP whose M-th model call of the run (M-1 assistant messages in its body)
    dies mid-stream when ``stream:M:K`` is armed."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        messages = json.loads(request.content).get("messages", [])
        call = 1 + sum(m.get("role") == "assistant" for m in messages)
        for point in CRASH:
            if point.startswith(f"stream:{call}:"):
                assert isinstance(response.stream, httpx.AsyncByteStream)
                killing = KillingStream(response.stream, point, int(point.split(":")[2]))
                return httpx.Response(
                    response.status_code, headers=response.headers, stream=killing,
                    extensions=response.extensions,
                )  # fmt: skip
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


async def main() -> None:
    streamed = any(point.startswith("stream:") for point in CRASH)
    client = httpx.AsyncClient(transport=KillingTransport(), timeout=60) if streamed else None
    model = Model("openai", "m", base_url=sys.argv[2], api_key=SECRET, max_retries=0, client=client)
    guardrails = [no_notes] if "guardrail" in CRASH else []
    config = AgentRunConfig("crashy", input_guardrails=guardrails)
    tools: list[Any] = [note, lookup]
    if "approvals" in CRASH:
        tools.append(requires_approval(pay))
    agent = Agent(model, config, tools=tools)
    path = WORKDIR / "sessions.sqlite3"
    durable = DurableAgent(agent, KillingStore(path))  # lookup is marked @idempotent
    temporal = os.environ.get("ZETT_TEST_ENGINE") == "temporal"
    if temporal:
        config: DurableConfig | TemporalConfig = TemporalConfig(
            os.environ["ZETT_TEMPORAL_ADDRESS"],
            namespace=os.environ["ZETT_TEST_NAMESPACE"],
            task_queue=os.environ.get("ZETT_TEST_TASK_QUEUE", DEFAULT_TASK_QUEUE),
            task_timeout=5.0,  # as tests/durable_engines.py's TASK_TIMEOUT
        )
    else:
        config = DurableConfig(system_database_next_to(path))
    if "decide" in CRASH:
        await decide(durable, config, path)
        return
    await launch(config)
    if "serve" in CRASH:  # a worker only: runs come from the test
        print("ready", flush=True)
        await asyncio.Event().wait()
    try:
        message = await durable.run("go", session_id="s", run_id=RUN_ID)
        (WORKDIR / "final.json").write_text(json.dumps(message_to_dict(message)))
    finally:
        await ashutdown()


async def decide(durable: DurableAgent, config: DurableConfig | TemporalConfig, path: Path) -> None:
    """Approve the calls run ``RUN_ID`` waits for, at the same moment as another
    decider: once ready, touch ``ready-<pid>`` and wait for the file ``go``. Print
    ``final: <text>`` of the run that carries on, or exit 12 on the conflict.
    Temporal: :meth:`DurableAgent.approve` with no worker in this process. DBOS:
    :class:`DurableRuns` (what ``zett runs approve`` does), no engine launched."""
    runs: DurableRuns | None = None
    if isinstance(config, TemporalConfig):
        await launch(replace(config, worker=False))
        request = await durable.pending_approval("s")
    else:
        runs = DurableRuns(config.system_database_url, sessions=durable.store)
        request = await runs.pending_approval(RUN_ID)
    assert request is not None, "nothing waits"
    decisions = {call.id: approve() for call in request.calls}
    (WORKDIR / f"ready-{os.getpid()}").touch()
    while not (WORKDIR / "go").exists():
        await asyncio.sleep(0.01)
    try:
        if runs is None:
            message = await durable.approve("s", decisions)
        else:
            message = await runs.result(await runs.approve(RUN_ID, decisions))
    except ApprovalConflictError as error:
        print(f"conflict: {error}", flush=True)
        sys.stdout.flush()
        os._exit(12)
    finally:
        if runs is not None:
            await runs.aclose()
    print(f"final: {message.text}", flush=True)
    if runs is None:
        await ashutdown()


if __name__ == "__main__":
    asyncio.run(main())
    if os.environ.get("ZETT_TEST_ENGINE") == "temporal":
        # the run is over and written: leave before interpreter finalization, where
        # temporalio's native threads now and then abort the process (SIGABRT,
        # "PyGILState_Release: thread state ... must be current")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
