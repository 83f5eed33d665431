"""zett's side of bench/durable_peers.py: one process, run by the project's Python.

    python bench/peer_zett.py MODE --engine temporal|dbos --workdir DIR --base-url URL
        --keys K1,K2 [--address HOST:PORT --namespace NS] [--window S]

MODE ``stops``: durable runs of ``[[STOP:KEY]]`` prompts (KEY starts with the stop,
``refusal-...``), each awaited up to ``--window`` seconds. ``pay``: durable runs that
call the non-idempotent tool ``pay`` (it logs to ``DIR/effects/KEY.log`` and takes
3 s); started again after a kill, the same call carries the runs on. ``ask``: runs
whose ``pay`` waits for approval (the request is stored, the run ends).
``decide``: waits for ``DIR/go``, then approves KEY's call (every decider at once).
Each outcome is one line ``RESULT {json}`` on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from peers_fake_provider import tag

from zett_agent import Agent, AgentRunConfig, Model, SQLiteSessionStore
from zett_agent.approvals import ApprovalConflictError, approve, requires_approval
from zett_agent.durable import (
    DurableAgent,
    DurableConfig,
    TemporalConfig,
    ashutdown,
    launch,
    system_database_next_to,
)

ARGS: argparse.Namespace


def pay(invoice: str) -> str:
    """Charge an invoice (not idempotent: every call charges once more).

    Args:
        invoice: the invoice id.
    """
    log = Path(ARGS.workdir) / "effects" / f"{invoice}.log"
    log.parent.mkdir(exist_ok=True)
    with log.open("a") as out:
        out.write(f"start {os.getpid()}\n")
        out.flush()
        os.fsync(out.fileno())
    time.sleep(3)
    with log.open("a") as out:
        out.write("done\n")
    return f"paid {invoice}"


def emit(**fields: Any) -> None:
    print("RESULT " + json.dumps(fields), flush=True)


def describe(message: Any) -> dict[str, Any]:
    stop = message.stop  # None: a normal end
    return {
        "outcome": "returned",
        "text": message.text,
        "reason": stop.reason.name if stop is not None else None,
        "raw": stop.raw if stop is not None else None,
    }


async def main() -> None:
    model = Model(
        "openai",
        "m",
        base_url=ARGS.base_url,
        api_key="sk-bench",
        protocol="openai-responses",
        stream=False,
    )
    tool = requires_approval(pay) if ARGS.mode in ("ask", "decide") else pay
    agent = Agent(model, AgentRunConfig("bench"), tools=[tool])
    path = Path(ARGS.workdir) / "sessions.sqlite3"
    durable = DurableAgent(agent, SQLiteSessionStore(path))
    if ARGS.engine == "temporal":
        config: Any = TemporalConfig(ARGS.address, namespace=ARGS.namespace)
    else:
        config = DurableConfig(system_database_next_to(path), executor_id=ARGS.executor)
    await launch(config)
    keys = ARGS.keys.split(",")
    try:
        if ARGS.mode == "stops":

            async def one(key: str) -> None:
                stop = key.rsplit("-", 1)[0]
                try:
                    message = await asyncio.wait_for(
                        durable.run(tag(stop, key), session_id=key, run_id=key), ARGS.window
                    )
                    emit(key=key, **describe(message))
                except TimeoutError:
                    emit(key=key, outcome="still running")
                except Exception as error:  # what the caller gets
                    emit(key=key, outcome="raised", error=f"{type(error).__name__}: {error}"[:200])

            await asyncio.gather(*(one(k) for k in keys))
        elif ARGS.mode in ("pay", "ask"):

            async def run(key: str) -> None:
                mode = "pay" if ARGS.mode == "pay" else "approve"
                message = await durable.run(tag(mode, key), session_id=key, run_id=key)
                emit(key=key, **describe(message))

            await asyncio.gather(*(run(k) for k in keys))
        elif ARGS.mode == "decide":
            # what to decide is read before the start signal, so both deciders reach the
            # compare-and-set together (none of them sees the other's decision first)
            waiting = {key: await durable.pending_approval(key) for key in keys}
            go = Path(ARGS.workdir) / "go"
            (Path(ARGS.workdir) / f"ready-{os.getpid()}").touch()
            while not go.exists():
                await asyncio.sleep(0.005)
            for key, request in waiting.items():
                if request is None:
                    emit(key=key, outcome="nothing waits")
                    continue
                calls = {call.id: approve() for call in request.calls}
                try:
                    message = await durable.approve(key, calls)
                    emit(key=key, **describe(message))
                except ApprovalConflictError as error:
                    text = f"{type(error).__name__}: {error}"
                    emit(key=key, outcome="conflict", error=text[:200])
    finally:
        await ashutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["stops", "pay", "ask", "decide"])
    parser.add_argument("--engine", choices=["temporal", "dbos"], required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--keys", required=True)
    parser.add_argument("--address", default="127.0.0.1:7233")
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--executor", default="bench")
    parser.add_argument("--window", type=float, default=30.0)
    ARGS = parser.parse_args()
    asyncio.run(main())
    sys.stdout.flush()
    os._exit(0)  # temporalio's native threads can abort at interpreter finalization
