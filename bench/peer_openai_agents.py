"""openai-agents' side of bench/durable_peers.py, run by the Python of its own venv
(openai-agents[temporal] 0.24.0, which pins temporalio 1.34.0), never the project's.

    python bench/peer_openai_agents.py MODE --workdir DIR --base-url URL --keys K1,K2
        --address HOST:PORT --namespace NS [--window S]

The same modes as bench/peer_zett.py (``stops``, ``pay``, ``ask``, ``decide``), each
a Temporal workflow whose body is ``Runner.run``, served with Temporal's official
``OpenAIAgentsPlugin`` (``temporalio.contrib.openai_agents``) at its defaults: the
model is called in the plugin's activity (``ModelActivityParameters()``), the model
provider is the SDK's default (Responses API, ``OPENAI_BASE_URL``). The tool ``pay``
is an activity turned into a tool with the plugin's ``activity_as_tool``; it needs a
timeout, and the bench gives ``start_to_close_timeout=10 s`` (nothing else).
Approvals: the SDK's ``needs_approval`` on that tool, ``result.interruptions``,
and a ``RunState`` carried by string into the run that continues.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import sys
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    # imported lazily by RunState.from_string inside the workflow, where the sandbox
    # refuses truststore's platform.system() call: passed through, as the error says
    import httpcore2  # noqa: F401
    import truststore  # noqa: F401
    from agents import Agent, Runner, RunState
    from peers_fake_provider import tag
    from temporalio.contrib.openai_agents import workflow as agents_workflow

QUEUE = "bench-openai-agents"


@activity.defn
async def pay(invoice: str) -> str:
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
    await asyncio.sleep(3)
    with log.open("a") as out:
        out.write("done\n")
    return f"paid {invoice}"


def make_agent(approval: bool) -> Agent[Any]:
    tool = agents_workflow.activity_as_tool(pay, start_to_close_timeout=timedelta(seconds=10))
    if approval:
        tool = dataclasses.replace(tool, needs_approval=True)  # type: ignore[type-var]
    return Agent(name="payer", instructions="Pay what you are asked to.", model="m", tools=[tool])


@workflow.defn
class PayRun:
    @workflow.run
    async def run(self, prompt: str) -> str:
        result = await Runner.run(make_agent(False), prompt)
        return json.dumps({"output": str(result.final_output)})


@workflow.defn
class AskRun:
    @workflow.run
    async def run(self, prompt: str) -> str:
        result = await Runner.run(make_agent(True), prompt)
        if result.interruptions:
            return json.dumps({"state": result.to_state().to_string()})
        return json.dumps({"output": str(result.final_output)})


@workflow.defn
class DecidedRun:
    @workflow.run
    async def run(self, pending: str) -> str:
        agent = make_agent(True)
        state = await RunState.from_string(agent, json.loads(pending)["state"])
        for interruption in state.get_interruptions():
            state.approve(interruption)
        result = await Runner.run(agent, state)
        return json.dumps({"output": str(result.final_output)})


def emit(**fields: Any) -> None:
    print("RESULT " + json.dumps(fields), flush=True)


def reported(text: str) -> dict[str, Any]:
    return {"outcome": "returned", "text": json.loads(text).get("output"), "reason": None}


def failure(error: BaseException) -> str:
    causes = []
    cause: BaseException | None = error
    while cause is not None and len(causes) < 4:
        causes.append(f"{type(cause).__name__}: {cause}")
        cause = cause.__cause__
    return " <- ".join(causes)[:300]


async def main(args: argparse.Namespace) -> None:
    from temporalio.client import Client, WorkflowExecutionStatus
    from temporalio.common import WorkflowIDConflictPolicy
    from temporalio.contrib.openai_agents import OpenAIAgentsPlugin
    from temporalio.worker import Worker

    os.environ["BENCH_WORKDIR"] = args.workdir
    client = await Client.connect(
        args.address, namespace=args.namespace, plugins=[OpenAIAgentsPlugin()]
    )
    worker = Worker(
        client, task_queue=QUEUE, workflows=[PayRun, AskRun, DecidedRun], activities=[pay]
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
                    emit(key=key, outcome="raised", error=failure(error))

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
                    emit(key=key, outcome="raised", error=failure(error))

            await asyncio.gather(*(run(k) for k in keys))
        elif args.mode == "ask":
            for key in keys:
                text = await client.execute_workflow(
                    AskRun.run, tag("approve", key), id=key, task_queue=QUEUE
                )
                (workdir / f"pending-{key}.json").write_text(text)
                emit(key=key, outcome="waits" if "state" in json.loads(text) else "did not wait")
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
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    sys.path.insert(0, str(Path(__file__).parent))
    import peer_openai_agents  # the workflows must live in an importable module, not __main__

    asyncio.run(peer_openai_agents.main(parsed))
    sys.stdout.flush()
    os._exit(0)
