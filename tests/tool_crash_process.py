"""One side of tests/test_tool_outcomes.py's kill -9 test, run as its own process.

``python tool_crash_process.py run DB TOOL``: ask in session "s1" (the model at
ZETT_TEST_URL calls TOOL, which needs approval); ``approve DB TOOL``: approve it
(the tool writes ZETT_TEST_MARKER, then blocks until the process is killed);
``resume DB TOOL``: resume the session. Prints one JSON line: the pending call
ids, the events' outcome-unknown call ids, how often the tool ran in this
process, and the final text.
"""

from __future__ import annotations

import json
import os
import sys
import time

import anyio

from zett_agent import AgentClient, AgentEventType, Model, create_agent
from zett_agent.approvals import approve, requires_approval
from zett_agent.tools import idempotent

RUNS: list[str] = []


def send_invoice(customer: str) -> str:
    """Send an invoice.

    Args:
        customer: who gets it.
    """
    return _work(customer)


@idempotent
def refresh_report(customer: str) -> str:
    """Rebuild a report (safe to repeat).

    Args:
        customer: whose report.
    """
    return _work(customer)


def _work(customer: str) -> str:
    RUNS.append(customer)
    marker = os.environ["ZETT_TEST_MARKER"]
    if not os.path.exists(marker):  # the first time: signal, then wait to be killed
        with open(marker, "w") as out:
            out.write(customer)
        time.sleep(120)
    return f"done for {customer}"


async def main(action: str, db: str, tool_name: str) -> None:
    model = Model("anthropic", "m", base_url=os.environ["ZETT_TEST_URL"], api_key="k")
    tool = {"send_invoice": send_invoice, "refresh_report": refresh_report}[tool_name]
    agent = await create_agent(model, tools=[requires_approval(tool)])
    unknown: list[str] = []
    async with AgentClient(agent, db, session_id="s1") as client:
        if action == "run":
            events = client.stream("bill ACME")
        elif action == "approve":
            pending = await client.pending_approval()
            assert pending is not None
            events = client.approve_stream("s1", {c.id: approve() for c in pending.calls})
        else:
            events = client.resume_stream("s1")
        text = ""
        async for event in events:
            if event.type is AgentEventType.TOOL_OUTCOME_UNKNOWN and event.tool_call:
                unknown.append(event.tool_call.id)
            if event.type is AgentEventType.RUN_COMPLETED and event.message:
                text = event.message.text
        pending = await client.pending_approval()
    await agent.aclose()
    record = {"pending": pending.ids if pending else [], "unknown": unknown, "runs": len(RUNS)}
    print(json.dumps({**record, "text": text}))


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])
