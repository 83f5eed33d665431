"""A decision names the request it was shown (``request_seq``), so it can never
answer a later request, even one that reuses the same call ids: a UI that read
the session, then lost the race to another decider whose run asked again with
``call_0``, gets ApprovalConflictError and runs nothing."""

from __future__ import annotations

import pytest

from zett_agent import (
    Agent,
    AgentClient,
    ApprovalConflictError,
    InMemorySessionStore,
    ToolCall,
    ToolResultMessage,
)
from zett_agent.approvals import ApprovalRequest, Decision, requires_approval
from zett_agent.errors import ResumeError
from zett_agent.testing import ScriptedModel, reply

SENT: list[str] = []


def send_invoice(customer: str) -> str:
    """Send an invoice.

    Args:
        customer: who gets it.
    """
    SENT.append(customer)
    return f"invoice sent to {customer}"


def call(customer: str) -> ToolCall:
    return ToolCall("call_0", "send_invoice", f'{{"customer": "{customer}"}}')


async def request_rows(store: InMemorySessionStore, session: str) -> list[int]:
    return [r.seq for r in await store.rows(session) if isinstance(r.message, ApprovalRequest)]


@pytest.fixture
async def asked_twice() -> tuple[AgentClient, InMemorySessionStore, list[int]]:
    """A session whose first request (call_0, ACME) was approved and whose run
    then asked again with the same call id (call_0, Globex)."""
    SENT.clear()
    model = ScriptedModel(
        reply(tool_calls=[call("ACME")]),
        reply(tool_calls=[call("Globex")]),
        reply("Billed both."),
    )
    store = InMemorySessionStore()
    client = AgentClient(Agent(model, tools=[requires_approval(send_invoice)]), store)
    await client.run("bill ACME, then Globex", session_id="s")
    assert SENT == []  # the call waits
    [shown] = await request_rows(store, "s")
    await client.approve("s", {"call_0": Decision(True)})
    assert SENT == ["ACME"]
    seqs = await request_rows(store, "s")
    assert seqs[0] == shown and len(seqs) == 2
    return client, store, seqs


async def test_a_stale_decision_does_not_answer_a_later_request_with_the_same_ids(
    asked_twice: tuple[AgentClient, InMemorySessionStore, list[int]],
) -> None:
    client, store, (shown, later) = asked_twice
    stale = client.approve_stream("s", {"call_0": Decision(True)}, request_seq=shown)
    with pytest.raises(ApprovalConflictError) as caught:
        await anext(stale)
    assert "decided already" in str(caught.value)
    assert SENT == ["ACME"]  # Globex was not billed by a decision that never saw it
    assert await request_rows(store, "s") == [shown, later]
    pending = await client.pending_approval("s")
    assert pending is not None and pending.calls[0].arguments == '{"customer": "Globex"}'


async def test_the_decision_for_the_request_that_waits_goes_on(
    asked_twice: tuple[AgentClient, InMemorySessionStore, list[int]],
) -> None:
    client, store, (_, later) = asked_twice
    events = client.approve_stream("s", {"call_0": Decision(True)}, request_seq=later)
    async for _ in events:
        pass
    assert SENT == ["ACME", "Globex"]
    results = [m for m in await store.load("s") if isinstance(m, ToolResultMessage)]
    assert [m.content for m in results] == ["invoice sent to ACME", "invoice sent to Globex"]


async def test_a_request_seq_that_is_no_request_is_refused_and_nothing_is_stored(
    asked_twice: tuple[AgentClient, InMemorySessionStore, list[int]],
) -> None:
    client, store, _ = asked_twice
    rows = await store.rows("s")
    question = rows[0].seq  # the user's message, no request
    before = len(rows)
    with pytest.raises(ResumeError, match="does not wait"):
        await anext(client.approve_stream("s", {"call_0": Decision(True)}, request_seq=question))
    assert len(await store.rows("s")) == before and SENT == ["ACME"]
