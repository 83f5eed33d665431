"""An Anthropic thinking budget is always below ``max_tokens`` in what zett sends
("budget_tokens must be less than max_tokens",
https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking): with zett's
default ``max_tokens`` it is raised to the budget plus the default answer room; a
``max_tokens`` the host set is kept, and a budget that does not fit it is a
ConfigError before anything is sent."""

from __future__ import annotations

import pytest

from faults.wire import WIRES
from sdk_shapes import CHECKS
from zett_agent import AgentRunConfig, ConfigError, Model, create_agent
from zett_agent.protocols._anthropic import DEFAULT_MAX_TOKENS
from zett_agent.testing import ReplayServer

WIRE = WIRES["anthropic"]


async def sent(config: AgentRunConfig) -> list[dict[str, object]]:
    with ReplayServer([WIRE.reply(WIRE.answer(["ok"]))]) as server:
        model = Model("anthropic", "m", base_url=server.url, api_key="k")
        agent = await create_agent(model, config)
        try:
            await agent.run("hi")
        finally:
            await agent.aclose()
    return [request.json for request in server.requests]


@pytest.mark.parametrize("budget", [1024, DEFAULT_MAX_TOKENS, 8192])
async def test_the_default_max_tokens_grows_to_fit_the_budget(budget: int) -> None:
    [body] = await sent(AgentRunConfig(reasoning=budget))
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert isinstance(body["max_tokens"], int)
    assert body["max_tokens"] > budget
    fits = budget < DEFAULT_MAX_TOKENS
    assert body["max_tokens"] == (DEFAULT_MAX_TOKENS if fits else budget + DEFAULT_MAX_TOKENS)
    CHECKS["anthropic"](body)


async def test_a_host_max_tokens_is_kept_when_the_budget_fits() -> None:
    [body] = await sent(AgentRunConfig(reasoning=2048, max_tokens=3000))
    assert body["max_tokens"] == 3000


async def test_a_budget_over_the_host_max_tokens_is_refused_before_sending() -> None:
    with pytest.raises(ConfigError, match="must be less than max_tokens"):
        await sent(AgentRunConfig(reasoning=4096, max_tokens=4096))
