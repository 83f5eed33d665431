"""Every recording of the corpus as a run of ``zett serve``'s AG-UI route.

Shared by tests/test_ag_ui_events.py (the official Python package's event types)
and tests/test_ag_ui_client.py (``@ag-ui/client`` from node). :func:`corpus_app`
is one ASGI app that mounts one :func:`~zett_agent.serve.create_app` server per
(vendor, protocol, streamed or not) under ``/<key>``; each server's model replays,
for every request, the recording its question names (in the process:
:class:`~zett_agent.testing.ReplayTransport`). :data:`CASES` lists, per recording,
the path its run is posted to and the question.

The agent has no tools and ``max_turns=2``: a recording that asks for a tool
(whose call is then not offered) is answered again once, so such a run ends with
the max_turns stop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Mount

from zett_agent import Agent, AgentRunConfig
from zett_agent.model import Model
from zett_agent.serve import create_app
from zett_agent.testing import RecordedRequest, ReplayTransport, Reply

RECORDINGS = Path(__file__).parent / "recordings"

PREFIXES: dict[str, tuple[str, str | None]] = {
    "anthropic": ("anthropic", None),
    "anthropic_openai_compat": ("openai", None),
    "deepseek": ("deepseek", None),
    "gemini": ("google", None),
    "glm": ("glm", None),
    "groq": ("groq", None),
    "kimi": ("kimi", None),
    "llamacpp": ("llamacpp", None),
    "mistral": ("mistral", None),
    "ollama": ("ollama", None),
    "openai_azure": ("openai", None),
    "openai_chat": ("openai", None),
    "openai_compat_gateway": ("openai", None),
    "openai_responses": ("openai-responses", None),
    "openrouter": ("openrouter", None),
    "qwen": ("qwen", None),
    "vertex": ("vertex", None),
    "xai": ("xai", None),
}
"""The vendor row (and a protocol other than its own) of each recording's prefix."""

_STATUS = re.compile(r"__(\d{3})_")


@dataclass(frozen=True)
class Case:
    name: str  # the recording's file name
    vendor: str
    protocol: str | None
    stream: bool
    status: int

    @property
    def key(self) -> str:
        return f"{self.vendor}-{self.protocol or 'own'}-{'stream' if self.stream else 'body'}"

    @property
    def path(self) -> str:
        """Where the run is posted (the mounted server's AG-UI route)."""
        return f"/{self.key}/api/ag-ui"


def _case(path: Path) -> Case:
    prefix = path.name.split("__")[0]
    vendor, protocol = PREFIXES[prefix]
    if "anthropic_compat" in path.name:
        protocol = "anthropic"
    if prefix == "openrouter" and "responses" in path.name:
        protocol = "openai-responses"
    found = _STATUS.search(path.name)
    status = int(found.group(1)) if found else 200
    return Case(path.name, vendor, protocol, path.suffix == ".sse", status)


CASES: list[Case] = sorted(
    (_case(p) for p in RECORDINGS.iterdir() if p.suffix in (".sse", ".json")),
    key=lambda c: c.name,
)


def _asked(request: RecordedRequest) -> str:
    """The recording a model request asks for: the first user text it carries."""
    text = request.body.decode(errors="replace")
    return next((c.name for c in CASES if c.name in text), "")


def _reply(request: RecordedRequest) -> Reply:
    name = _asked(request)
    case = next(c for c in CASES if c.name == name)
    return Reply.file(RECORDINGS / name, status=case.status)


def case_agents(name: str) -> dict[str, Agent]:
    """One agent (named ``name``) per case key, in the cases' order, each on a model
    that replays the recording its request names."""
    agents: dict[str, Agent] = {}
    for case in CASES:
        if case.key in agents:
            continue
        replay = ReplayTransport(route=_reply)
        model = Model(
            case.vendor,
            "m",
            protocol=case.protocol,
            base_url=replay.url,
            api_key="test-key",
            max_retries=0,
            stream=case.stream,
            client=replay.client(),
        )
        agents[case.key] = Agent(model, AgentRunConfig(name, max_turns=2))
    return agents


def corpus_app() -> tuple[Starlette, dict[str, Agent]]:
    """The app mounting one zett server per case key, and the agents by key."""
    agents = case_agents("ag-ui-corpus")
    mounts = [Mount(f"/{key}", app=create_app(agent)) for key, agent in agents.items()]
    return Starlette(routes=mounts), agents


def run_input(thread_id: str, question: str, **extra: Any) -> dict[str, Any]:
    """The ``RunAgentInput`` an AG-UI client sends for a new question."""
    return {
        "threadId": thread_id,
        "runId": f"run-{thread_id}",
        "messages": [{"id": f"m-{thread_id}", "role": "user", "content": question}],
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
        **extra,
    }


def thread_of(case: Case) -> str:
    return re.sub(r"[^A-Za-z0-9_.:\-]", "-", case.name)[:128]
