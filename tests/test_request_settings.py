"""Settings zett writes into request bodies, on every protocol, over a real socket:
``model_options`` can add to what the encoder writes but never replace it
(nested objects deep-merged, a clash a ConfigError before sending); one reasoning
setting mapped per vendor row; provider server tools declared beside the agent's
own tools; Anthropic cache breakpoints and OpenAI's ``prompt_cache_key``. Bodies
are checked against the pinned official SDKs' types (``tests/sdk_shapes.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from faults.wire import WHOLE_TEXT, WIRES, Wire
from sdk_shapes import CHECKS
from zett_agent import AgentRunConfig, ConfigError, Model, ServerTool, UserMessage, create_agent
from zett_agent._exchange import ModelRequest, ToolSpec
from zett_agent.testing import ReplayServer

PROTOCOLS = list(WIRES)
TOOL = ToolSpec("lookup", "Look a word up", {"type": "object", "properties": {}})


def lookup(word: str) -> str:
    """Look a word up."""
    return word


@pytest.fixture(params=PROTOCOLS)
def wire(request: pytest.FixtureRequest) -> Wire:
    return WIRES[request.param]


@pytest.fixture(params=[True, False], ids=["streamed", "whole"])
def streamed(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


async def sent_body(
    wire: Wire, config: AgentRunConfig, *, vendor: str | None = None, stream: bool = True
) -> dict[str, Any]:
    """Run one agent turn against a ReplayServer; the JSON body it sent."""
    reply = wire.reply(wire.answer(["ok"])) if stream else _whole(wire)
    with ReplayServer([reply]) as server:
        model = Model(vendor or wire.vendor, "m", base_url=server.url, api_key="k", stream=stream)
        agent = await create_agent(model, config, tools=[lookup])
        try:
            await agent.run("hi")
        finally:
            await agent.aclose()
    assert server.unexpected == []
    body: dict[str, Any] = server.requests[0].json
    return body


def _whole(wire: Wire) -> Any:
    from zett_agent.testing import Reply

    return Reply.json(WHOLE_TEXT[wire.name])


def check(wire: Wire, body: dict[str, Any]) -> None:
    if wire.name in CHECKS:
        CHECKS[wire.name](body)


# ---------------------------------------------------------------- model_options

OWN_KEY = {  # a key each encoder writes that model_options must not replace
    "anthropic": "tools",
    "openai-chat": "tools",
    "openai-responses": "tools",
    "gemini": "tools",
    "ollama": "tools",
}
NESTED = {  # a documented nested object: merged, not replaced
    "anthropic": ("output_config", {"effort": "high"}),
    "openai-chat": ("stream_options", {"include_obfuscation": False}),
    "openai-responses": ("reasoning", {"summary": "auto"}),
    "gemini": ("generationConfig", {"topK": 3}),
    "ollama": ("options", {"top_k": 3}),
}


async def test_model_options_cannot_replace_the_agents_tools(wire: Wire) -> None:
    config = AgentRunConfig(model_options={OWN_KEY[wire.name]: []})
    with ReplayServer([]) as server:
        agent = await create_agent(
            Model(wire.vendor, "m", base_url=server.url, api_key="k"), config, tools=[lookup]
        )
        with pytest.raises(ConfigError, match="model_options\\['tools'\\] clashes"):
            await agent.run("hi")
        await agent.aclose()
    assert server.requests == []  # refused before sending


async def test_model_options_add_keys_and_merge_nested_objects(wire: Wire) -> None:
    key, extra = NESTED[wire.name]
    config = AgentRunConfig(max_tokens=7, model_options={key: extra, "zz_extra": 1})
    body = await sent_body(wire, config)
    assert body["zz_extra"] == 1
    for name, value in extra.items():
        assert body[key][name] == value
    limit = {
        "anthropic": ("max_tokens",),
        "openai-chat": ("max_tokens",),
        "openai-responses": ("max_output_tokens",),
        "gemini": ("generationConfig", "maxOutputTokens"),
        "ollama": ("options", "num_predict"),
    }[wire.name]
    node: Any = body
    for part in limit:
        node = node[part]
    assert node == 7  # the encoder's own value beside the merged one
    if wire.name == "openai-chat":
        assert body["stream_options"]["include_usage"] is True  # kept, not replaced


def test_a_nested_clash_names_its_path() -> None:
    from zett_agent.protocols._body import merge_options

    body = {"generationConfig": {"maxOutputTokens": 5, "thinkingConfig": {"thinkingBudget": 0}}}
    nested = frozenset({"generationConfig"})
    merge_options(body, {"generationConfig": {"thinkingConfig": {"includeThoughts": True}}}, nested)
    assert body["generationConfig"]["thinkingConfig"] == {
        "thinkingBudget": 0,
        "includeThoughts": True,
    }
    with pytest.raises(ConfigError, match=r"generationConfig\.maxOutputTokens"):
        merge_options(body, {"generationConfig": {"maxOutputTokens": 9}}, nested)
    merge_options(body, {"generationConfig": {"maxOutputTokens": 5}}, nested)  # same value: fine
    with pytest.raises(ConfigError, match="'messages'"):
        merge_options({"messages": []}, {"messages": [{"role": "user"}]}, nested)


# ---------------------------------------------------------------- reasoning

REASONING: dict[str, tuple[str | int, dict[str, Any]]] = {
    "anthropic": ("high", {"thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}}),
    "openai-chat": ("xhigh", {"reasoning_effort": "xhigh"}),
    "openai-responses": ("minimal", {"reasoning": {"effort": "minimal"}}),
    "gemini": (
        "low",
        {"generationConfig": {"thinkingConfig": {"thinkingLevel": "LOW", "includeThoughts": True}}},
    ),
    "ollama": ("none", {"think": False}),
}


async def test_reasoning_effort_is_written_as_each_protocol_documents(
    wire: Wire, streamed: bool
) -> None:
    setting, expected = REASONING[wire.name]
    body = await sent_body(wire, AgentRunConfig(reasoning=setting), stream=streamed)
    for key, value in expected.items():
        assert body[key] == value
    check(wire, body)


@pytest.mark.parametrize(
    ("vendor", "setting", "expected"),
    [
        ("anthropic", 2048, {"thinking": {"type": "enabled", "budget_tokens": 2048}}),
        ("anthropic", "none", {"thinking": {"type": "disabled"}}),
        (
            "anthropic",
            "max",
            {"thinking": {"type": "adaptive"}, "output_config": {"effort": "max"}},
        ),
        (
            "google",
            0,
            {
                "generationConfig": {
                    "thinkingConfig": {"thinkingBudget": 0, "includeThoughts": True}
                }
            },
        ),
        ("google", "none", {"generationConfig": {"thinkingConfig": {"thinkingBudget": 0}}}),
        ("deepseek", "high", {"thinking": {"type": "enabled"}}),
        ("deepseek", "none", {"thinking": {"type": "disabled"}}),
        ("glm", "low", {"thinking": {"type": "enabled"}}),
        ("kimi", "none", {"thinking": {"type": "disabled"}}),
        ("qwen", "medium", {"enable_thinking": True, "thinking_budget": 8192}),
        ("qwen", 500, {"enable_thinking": True, "thinking_budget": 500}),
        ("openrouter", 4000, {"reasoning": {"max_tokens": 4000}}),
        ("openrouter", "low", {"reasoning": {"effort": "low"}}),
        ("groq", "medium", {"reasoning_effort": "medium"}),
        ("xai", "high", {"reasoning_effort": "high"}),
    ],
)
async def test_reasoning_maps_to_each_vendor_row(
    vendor: str, setting: str | int, expected: dict[str, Any]
) -> None:
    protocol = {"anthropic": "anthropic", "google": "gemini"}.get(vendor, "openai-chat")
    body = await sent_body(WIRES[protocol], AgentRunConfig(reasoning=setting), vendor=vendor)
    for key, value in expected.items():
        assert body[key] == value
    if vendor in ("anthropic", "google"):  # rows whose provider ships the SDK we pin
        check(WIRES[protocol], body)


@pytest.mark.parametrize(
    ("vendor", "setting", "words"),
    [
        ("openai", 2048, "takes no thinking budget"),  # OpenAI: effort levels, no budget
        ("openai-responses", 100, "takes no thinking budget"),
        ("anthropic", "minimal", "not 'minimal'"),
        ("google", "xhigh", "not 'xhigh'"),
        ("deepseek", 1000, "takes no thinking budget"),
        ("mistral", "high", "takes no reasoning setting"),
        ("llamacpp", "low", "takes no reasoning setting"),
        ("xai", "medium", "not 'medium'"),
        ("openai", "extreme", "levels: none, minimal"),
    ],
)
async def test_an_unsupported_reasoning_setting_is_a_clear_error_before_sending(
    vendor: str, setting: str | int, words: str
) -> None:
    with ReplayServer([]) as server:
        model = Model(vendor, "m", base_url=server.url, api_key="k")
        request = ModelRequest("m", [UserMessage("hi")], reasoning=setting)
        with pytest.raises(ConfigError, match=words):
            await model.complete(request)
        await model.aclose()
    assert server.requests == []


# ---------------------------------------------------------------- server tools

SERVER_TOOLS: dict[str, list[dict[str, Any]]] = {
    "anthropic": [
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 2},
        {"type": "code_execution_20250825", "name": "code_execution"},
        {"type": "web_fetch_20250910", "name": "web_fetch"},
    ],
    "openai-responses": [
        {"type": "web_search", "search_context_size": "low"},
        {"type": "code_interpreter", "container": {"type": "auto"}},
    ],
    "gemini": [{"googleSearch": {}}, {"codeExecution": {}}, {"urlContext": {}}],
}
OPTIONS = {"anthropic": {"max_uses": 2}, "openai-responses": {"search_context_size": "low"}}


@pytest.mark.parametrize("protocol", list(SERVER_TOOLS))
async def test_server_tools_are_declared_beside_the_agents_own_tools(
    protocol: str, streamed: bool
) -> None:
    wire = WIRES[protocol]
    kinds = ["web_search", "code_execution", "url_fetch"][: len(SERVER_TOOLS[protocol])]
    tools = [
        ServerTool(kind, OPTIONS.get(protocol, {}) if kind == "web_search" else {})
        for kind in kinds
    ]  # type: ignore[arg-type]
    config = AgentRunConfig(server_tools=tools, prompt_cache=False)
    body = await sent_body(wire, config, stream=streamed)
    own, *server = body["tools"]
    assert "lookup" in str(own)  # the agent's tool is still there, first
    assert server == SERVER_TOOLS[protocol]
    check(wire, body)


async def test_chat_rows_declare_web_search_their_own_way() -> None:
    wire = WIRES["openai-chat"]
    config = AgentRunConfig(server_tools=[ServerTool.web_search()])
    openai = await sent_body(wire, config, vendor="openai")
    assert openai["web_search_options"] == {}
    check(wire, openai)
    openrouter = await sent_body(wire, config, vendor="openrouter")
    assert openrouter["plugins"] == [{"id": "web"}]
    assert [t["function"]["name"] for t in openrouter["tools"]] == ["lookup"]


@pytest.mark.parametrize(
    ("vendor", "kind"),
    [("ollama", "web_search"), ("groq", "web_search"), ("openai-responses", "url_fetch")],
)
async def test_a_server_tool_a_row_does_not_have_is_a_config_error(vendor: str, kind: str) -> None:
    model = Model(vendor, "m", base_url="http://127.0.0.1:9", api_key="k")
    request = ModelRequest("m", [UserMessage("hi")], server_tools=[ServerTool(kind)])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=f"no server tool '{kind}'"):
        await model.complete(request)
    await model.aclose()


# ---------------------------------------------------------------- prompt caching


async def test_anthropic_cache_breakpoints_sit_on_the_stable_prefix(streamed: bool) -> None:
    wire = WIRES["anthropic"]
    body = await sent_body(wire, AgentRunConfig(instructions="Be brief."), stream=streamed)
    ephemeral = {"type": "ephemeral"}
    assert body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": ephemeral}]
    assert body["tools"][-1]["cache_control"] == ephemeral
    assert body["messages"][-1]["content"][-1] == {
        "type": "text",
        "text": "hi",
        "cache_control": ephemeral,
    }
    check(wire, body)
    off = await sent_body(wire, AgentRunConfig(instructions="Be brief.", prompt_cache=False))
    assert off["system"] == "Be brief." and "cache_control" not in str(off)


async def test_prompt_cache_key_goes_to_the_rows_that_take_it() -> None:
    config = AgentRunConfig(prompt_cache_key="session-42")
    chat = await sent_body(WIRES["openai-chat"], config, vendor="openai")
    assert chat["prompt_cache_key"] == "session-42"
    check(WIRES["openai-chat"], chat)
    responses = await sent_body(WIRES["openai-responses"], config)
    assert responses["prompt_cache_key"] == "session-42"
    check(WIRES["openai-responses"], responses)
    groq = await sent_body(WIRES["openai-chat"], config, vendor="groq")  # rejects unknown keys
    assert "prompt_cache_key" not in groq
