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
gives the agent an input guardrail that logs its check and trips. A kill or a
Ctrl-C during a model stream or a tool is done by the test itself, from outside.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

from zett_agent import Agent, AgentRunConfig, Message, Model, SQLiteSessionStore, Tripwire
from zett_agent._messages import message_to_dict
from zett_agent.durable import (
    DurableAgent,
    DurableConfig,
    TemporalConfig,
    ashutdown,
    idempotent,
    launch,
    system_database_next_to,
)

SECRET = "sk-durable-test-SECRET-0123456789"

WORKDIR = Path(sys.argv[1])
CRASH = sys.argv[3].split(",")


def effect(line: str) -> None:
    with (WORKDIR / "effects.log").open("a") as log:
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
    effect(f"lookup:{city}:done")
    return f"sunny in {city}"


def no_notes(message: object) -> Tripwire:
    """An input guardrail that trips (each check is logged)."""
    effect("guardrail:checked")
    return Tripwire("no notes today")


class KillingStore(SQLiteSessionStore):
    async def append(self, session_id: str, message: Message, **options: object) -> int:
        seq = await super().append(session_id, message, **options)  # type: ignore[arg-type]
        if armed(f"append:{seq}"):
            die()
        return seq


async def main() -> None:
    model = Model("openai", "m", base_url=sys.argv[2], api_key=SECRET, max_retries=0)
    guardrails = [no_notes] if "guardrail" in CRASH else []
    config = AgentRunConfig("crashy", input_guardrails=guardrails)
    agent = Agent(model, config, tools=[note, lookup])
    path = WORKDIR / "sessions.sqlite3"
    durable = DurableAgent(agent, KillingStore(path))  # lookup is marked @idempotent
    if os.environ.get("ZETT_TEST_ENGINE") == "temporal":
        config: DurableConfig | TemporalConfig = TemporalConfig(
            os.environ["ZETT_TEMPORAL_ADDRESS"],
            namespace=os.environ["ZETT_TEST_NAMESPACE"],
            task_timeout=5.0,  # as tests/durable_engines.py's TASK_TIMEOUT
        )
    else:
        config = DurableConfig(system_database_next_to(path))
    await launch(config)
    try:
        message = await durable.run("go", session_id="s", run_id="run-1")
        (WORKDIR / "final.json").write_text(json.dumps(message_to_dict(message)))
    finally:
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
