"""One side of tests/test_approvals.py's process-restart test, run as its own process.

``python approval_process.py run DB``: run a prompt in session "s1" against the
model at ZETT_TEST_URL; ``approve DB``: approve every pending call. Prints one JSON
line: the pending call ids, whether the tool ran, and the final text. The tool
writes its path to ZETT_TEST_MARKER when it runs.
"""

from __future__ import annotations

import json
import os
import sys

import anyio

from zett_agent import AgentClient, Model, create_agent
from zett_agent.approvals import approve, requires_approval


def delete_file(path: str) -> str:
    """Delete a file."""
    with open(os.environ["ZETT_TEST_MARKER"], "w") as out:
        out.write(path)
    return f"deleted {path}"


async def main(action: str, db: str) -> None:
    model = Model("anthropic", "m", base_url=os.environ["ZETT_TEST_URL"], api_key="k")
    agent = await create_agent(model, tools=[requires_approval(delete_file)])
    async with AgentClient(agent, db, session_id="s1") as client:
        if action == "run":
            final = await client.run("delete /tmp/x")
        else:
            pending = await client.pending_approval()
            assert pending is not None, "nothing pending after the restart"
            final = await client.approve("s1", {call.id: approve() for call in pending.calls})
        pending = await client.pending_approval()
    await agent.aclose()
    record: dict[str, object] = {
        "pending": pending.ids if pending else [],
        "ran": os.path.exists(os.environ["ZETT_TEST_MARKER"]),
    }
    if final.text:
        record["text"] = final.text
    print(json.dumps(record))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
