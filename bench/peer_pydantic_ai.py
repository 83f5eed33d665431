"""pydantic-ai's side of bench/durable_peers.py, run by the Python of its own venv
(pydantic-ai-slim[openai,temporal] 2.68.0, temporalio 1.35.0), never the project's.

    python bench/peer_pydantic_ai.py MODE --workdir DIR --base-url URL --keys K1,K2
        --address HOST:PORT --namespace NS [--window S]

The same modes as bench/peer_zett.py (``stops``, ``pay``, ``ask``, ``decide``), each
a Temporal workflow whose body is ``agent.run``; the agent has the
``TemporalDurability`` capability and is served with ``PydanticAIPlugin`` and
``AgentPlugin``, as pydantic-ai's Temporal docs show. Everything the peer offers
is left at its default, but the activities' ``start_to_close_timeout`` (10 s instead
of 60 s, so a killed worker's activity is timed out sooner: the bench's own choice,
it changes when a retry happens, not whether).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from peers_fake_provider import tag
    from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, Tool
    from pydantic_ai.durable_exec.temporal import (
        AgentPlugin,
        PydanticAIPlugin,
        PydanticAIWorkflow,
        TemporalDurability,
    )
    from pydantic_ai.messages import ModelMessagesTypeAdapter
    from pydantic_ai.models.openai import OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from temporalio.workflow import ActivityConfig

QUEUE = "bench-pydantic-ai"


def pay(invoice: str) -> str:
    """Charge an invoice (not idempotent: every call charges once more).

    Args:
        invoice: the invoice id.
    """
    log = Path(os.environ["BENCH_WORKDIR"]) / "effects" / f"{invoice}.log"
    log.parent.mkdir(exist_ok=True)
    with log.open("a") as out:
        out.write(f"start {os.getpid()}\n")
        out.flush()
        os.fsync(out.fileno())
    time.sleep(3)
    with log.open("a") as out:
        out.write("done\n")
    return f"paid {invoice}"


def durability() -> TemporalDurability[Any]:
    return TemporalDurability(
        activity_config=ActivityConfig(start_to_close_timeout=timedelta(seconds=10))
    )


def model() -> OpenAIResponsesModel:
    provider = OpenAIProvider(base_url=os.environ.get("OPENAI_BASE_URL"), api_key="sk-bench")
    return OpenAIResponsesModel("m", provider=provider)


payer = Agent(model(), name="payer", tools=[pay], capabilities=[durability()])
asker = Agent(
    model(),
    name="asker",
    tools=[Tool(pay, requires_approval=True)],
    output_type=[str, DeferredToolRequests],
    capabilities=[durability()],
)


def last_finish_reason(messages: list[Any]) -> Any:
    responses = [m for m in messages if getattr(m, "kind", "") == "response"]
    return getattr(responses[-1], "finish_reason", None) if responses else None


@workflow.defn
class PayRun(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [  # noqa: RUF012 (the peer's documented class attribute)
        payer
    ]

    @workflow.run
    async def run(self, prompt: str) -> str:
        result = await payer.run(prompt)
        reason = last_finish_reason(result.all_messages())
        return json.dumps({"output": str(result.output), "finish_reason": reason})


@workflow.defn
class AskRun(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [  # noqa: RUF012 (the peer's documented class attribute)
        asker
    ]

    @workflow.run
    async def run(self, prompt: str) -> str:
        result = await asker.run(prompt)
        output = result.output
        if isinstance(output, DeferredToolRequests):
            return json.dumps(
                {
                    "messages": ModelMessagesTypeAdapter.dump_json(result.all_messages()).decode(),
                    "approvals": [call.tool_call_id for call in output.approvals],
                }
            )
        return json.dumps({"output": str(output)})


@workflow.defn
class DecidedRun(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [  # noqa: RUF012 (the peer's documented class attribute)
        asker
    ]

    @workflow.run
    async def run(self, pending: str) -> str:
        data = json.loads(pending)
        history = ModelMessagesTypeAdapter.validate_json(data["messages"])
        results = DeferredToolResults(approvals=dict.fromkeys(data["approvals"], True))
        result = await asker.run(message_history=history, deferred_tool_results=results)
        return json.dumps({"output": str(result.output)})


def emit(**fields: Any) -> None:
    print("RESULT " + json.dumps(fields), flush=True)


def reported(text: str) -> dict[str, Any]:
    data = json.loads(text)
    return {"outcome": "returned", "text": data.get("output"), "reason": data.get("finish_reason")}


async def main(args: argparse.Namespace) -> None:
    from temporalio.client import Client, WorkflowExecutionStatus
    from temporalio.common import WorkflowIDConflictPolicy
    from temporalio.worker import Worker

    os.environ["BENCH_WORKDIR"] = args.workdir
    client = await Client.connect(
        args.address, namespace=args.namespace, plugins=[PydanticAIPlugin()]
    )
    worker = Worker(
        client,
        task_queue=QUEUE,
        workflows=[PayRun, AskRun, DecidedRun],
        plugins=[AgentPlugin(payer), AgentPlugin(asker)],
    )
    keys = args.keys.split(",")
    workdir = Path(args.workdir)
    async with worker:
        if args.mode == "stops":

            async def one(key: str) -> None:
                stop = key.rsplit("-", 1)[0]
                handle = await client.start_workflow(
                    PayRun.run, tag(stop, key), id=key, task_queue=QUEUE
                )
                try:
                    emit(key=key, **reported(await asyncio.wait_for(handle.result(), args.window)))
                except TimeoutError:
                    desc = await handle.describe()
                    raw = desc.raw_description
                    attempts = [p.attempt for p in raw.pending_activities]
                    task = (
                        raw.pending_workflow_task.attempt
                        if raw.HasField("pending_workflow_task")
                        else 0
                    )
                    emit(key=key, outcome="still running", attempts=attempts, task_attempt=task)
                    if desc.status == WorkflowExecutionStatus.RUNNING:
                        await handle.terminate("bench window over")
                except Exception as error:
                    emit(
                        key=key,
                        outcome="raised",
                        error=f"{type(error).__name__}: {error} {error.__cause__!r}"[:300],
                    )

            await asyncio.gather(*(one(k) for k in keys))
        elif args.mode == "pay":

            async def run(key: str) -> None:
                handle = await client.start_workflow(
                    PayRun.run,
                    tag("pay", key),
                    id=key,
                    task_queue=QUEUE,
                    id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                )
                try:
                    emit(key=key, **reported(await handle.result()))
                except Exception as error:
                    emit(
                        key=key,
                        outcome="raised",
                        error=f"{type(error).__name__}: {error} {error.__cause__!r}"[:300],
                    )

            await asyncio.gather(*(run(k) for k in keys))
        elif args.mode == "ask":
            for key in keys:
                text = await client.execute_workflow(
                    AskRun.run, tag("approve", key), id=key, task_queue=QUEUE
                )
                (workdir / f"pending-{key}.json").write_text(text)
                emit(
                    key=key, outcome="waits" if "approvals" in json.loads(text) else "did not wait"
                )
        elif args.mode == "decide":
            (workdir / f"ready-{os.getpid()}").touch()
            while not (workdir / "go").exists():
                await asyncio.sleep(0.005)
            for key in keys:
                pending = (workdir / f"pending-{key}.json").read_text()
                # the continuation is a new run; its id is the decider's choice
                text = await client.execute_workflow(
                    DecidedRun.run,
                    pending,
                    id=f"{key}-decided-{uuid.uuid4().hex[:8]}",
                    task_queue=QUEUE,
                )
                emit(key=key, **reported(text))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["stops", "pay", "ask", "decide"])
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--keys", required=True)
    parser.add_argument("--address", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--executor", default="")
    parser.add_argument("--window", type=float, default=30.0)
    parsed = parser.parse_args()
    os.environ["OPENAI_BASE_URL"] = parsed.base_url
    sys.path.insert(0, str(Path(__file__).parent))
    import peer_pydantic_ai  # the workflows must live in an importable module, not __main__

    asyncio.run(peer_pydantic_ai.main(parsed))
    sys.stdout.flush()
    os._exit(0)
