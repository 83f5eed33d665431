"""Every recording of the public corpus (tests/recordings: refusals, cuts at the
output limit, content filters, pauses, provider errors...) answered inside a
durable run, on each engine (``engine``: DBOS, Temporal): the run asks the model
exactly as often as the same agent run without an engine (once for a stop; a
recording asking for a tool the agent does not offer is asked again once, as
without an engine), and ends on the same stop or raises the same error. A stop
is a value of the model step, never a failure an engine retries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos", reason="durable runs need the 'durable' extra (dbos)")

from ag_ui_corpus import CASES, RECORDINGS, Case
from durable_engines import Engine, engine, launched, temporal_server
from zett_agent import Agent, AgentRunConfig, AssistantMessage, SQLiteSessionStore
from zett_agent.durable import DurableAgent
from zett_agent.model import Model
from zett_agent.testing import RecordedRequest, ReplayServer, Reply

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
__all__ = ["engine", "launched", "temporal_server"]  # the fixtures this module uses


def _asked(request: RecordedRequest) -> Case:
    """The case a model request asks for: its prompt names the recording."""
    text = request.body.decode(errors="replace")
    return next(c for c in CASES if c.name in text)


def _reply(request: RecordedRequest) -> Reply:
    case = _asked(request)
    return Reply.file(RECORDINGS / case.name, status=case.status)


def _agent(case: Case, url: str) -> Agent:
    model = Model(
        case.vendor, "m", protocol=case.protocol, base_url=url, api_key="test-key",
        max_retries=0, stream=case.stream,
    )  # fmt: skip
    return Agent(model, AgentRunConfig("corpus", max_turns=2))


def _outcome(message: AssistantMessage | BaseException) -> Any:
    """What a host sees of a run: the final stop (reason, raw) or the error class."""
    if isinstance(message, BaseException):
        return type(message).__name__
    stop = message.stop
    return (stop.reason, stop.raw) if stop is not None else None


async def test_every_corpus_stop_in_a_durable_run_is_asked_once(
    launched: Path, engine: Engine
) -> None:
    wrong: dict[str, Any] = {}
    with ReplayServer(route=_reply) as server:
        for index, case in enumerate(CASES):
            asked_before = len(server.requests)
            agent = _agent(case, server.url)
            plain: AssistantMessage | BaseException
            try:
                plain = await agent.run(case.name)
            except Exception as error:
                plain = error
            plain_requests = len(server.requests) - asked_before
            store = SQLiteSessionStore(launched / f"corpus-{index}.sqlite3")
            durable_agent = DurableAgent(agent, store, name=f"corpus-{index}")
            durable: AssistantMessage | BaseException
            asked_before = len(server.requests)
            try:
                durable = await durable_agent.run(
                    case.name, session_id="s", run_id=f"corpus-{index}"
                )
            except Exception as error:
                durable = error
            finally:
                await durable_agent.aclose()
                await store.aclose()
                await agent.aclose()
            durable_requests = len(server.requests) - asked_before
            seen = (durable_requests, _outcome(durable))
            if seen != (plain_requests, _outcome(plain)) or plain_requests not in (1, 2):
                wrong[case.name] = {"durable": seen, "plain": (plain_requests, _outcome(plain))}
        assert not server.unexpected
    assert wrong == {}
    assert len(CASES) >= 80
