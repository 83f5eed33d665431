"""The Vercel AI SDK (``ai`` with ``@ai-sdk/openai``, ``@ai-sdk/anthropic``,
``@ai-sdk/google``, pinned in ``conformance/node/package.json``) through node:
``conformance/node/run_case.mjs`` runs ``generateText`` (body cases) or
``streamText`` (stream cases) with the case's tools against the replay and prints
what a host observes. Native Ollama needs a community provider and is not run.

The host reads the first step's ``finishReason`` (``stop`` -> end_turn,
``tool-calls`` -> tool_use, ``length`` -> max_output, ``content-filter`` -> refusal,
``error`` -> interrupted, ``other``/``unknown`` -> other) and ``rawFinishReason``;
the SDK runs tools with ``execute`` itself (``stopWhen: stepCountIs(4)``). A thrown
error, or a stream's error part with no step, is the host's error: interrupted. The
tools count their calls in node; the counts are handed to the suite's counter.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .._cases import Case
from .._run import Observation
from .._tools import ToolBox

NAME = "vercel-ai"
PROTOCOLS = frozenset({"anthropic", "openai-chat", "openai-responses", "gemini"})
NODE = Path(__file__).resolve().parents[3] / "node"
JOBS = 2


def version() -> str:
    lock = json.loads((NODE / "package-lock.json").read_text())
    return "ai " + lock["packages"]["node_modules/ai"]["version"]


def run(case: Case, base_url: str, tools: ToolBox) -> Observation:
    done = subprocess.run(
        ["node", str(NODE / "run_case.mjs")],
        input=json.dumps({"case": case.data, "base_url": base_url}),
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"node exited {done.returncode}: {done.stderr.strip()[-300:]}")
    out = json.loads(done.stdout)
    for name, arguments in out["ran"]:
        tools.call(name, arguments if isinstance(arguments, dict) else {})
    return Observation(out["stop"], raw=[str(r) for r in out["raw"]], text=out["text"] or "",
                       tool_calls=out["tool_calls"], error=out["error"])  # fmt: skip
