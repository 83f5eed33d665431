"""The README's Python snippets run as written, and what it says of the command
line is true: each ```python block runs in its own interpreter against a
ReplayServer reached through ``ZETT_ANTHROPIC_BASE_URL``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from zett_agent.cli import EXIT_CODES
from zett_agent.testing.replay import ReplayServer, Reply

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text()
RECORDINGS = Path(__file__).parent / "recordings"
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)
FRAGMENTS = {
    # the durable section's outline; its runnable program is examples/durable_run.py
    "DurableAgent(agent, ": "needs the durable extra and tools the README does not define",
    "MCPTools(servers)": "needs MCP servers and tools the README does not define "
    "(tests/test_mcp*.py run them)",
    "MCPTools(servers, elicitation=ask": "an outline: MCP servers the README does not "
    "define (tests/test_mcp_server_requests.py, tests/test_mcp_resources_and_prompts.py)",
    "requires_approval(delete_file)": "an outline: tools the README does not define "
    "(tests/test_approvals.py runs the flow)",
    "chain = FallbackModel(": "an outline needing three providers' keys "
    "(tests/test_fallback_and_rate_limits.py runs chains over recorded traffic)",
    "ServerTool.web_search(max_uses=3)": "a configuration excerpt "
    "(tests/test_request_settings.py, tests/test_server_tool_answers.py)",
    'create_agent_sync("llamacpp:smollm2"': "runs on the local model: "
    "tests/test_structured_local.py runs it as written (slow set)",
}
"""Blocks that are excerpts, not programs (a marker in the block -> why)."""
SNIPPETS = [b for b in BLOCKS if not any(marker in b for marker in FRAGMENTS)]
REFUSAL = RECORDINGS / "anthropic__stream_refusal_stop_details_category.sse"


def run_snippet(code: str, server: ReplayServer) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ZETT_ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "test"}
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )


def test_the_readme_has_snippets() -> None:
    assert len(SNIPPETS) >= 2
    assert len(BLOCKS) - len(SNIPPETS) <= len(FRAGMENTS)  # each excerpt is listed once


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_snippet_runs_as_written(index: int) -> None:
    with ReplayServer([Reply.file(REFUSAL)]) as server:
        done = run_snippet(SNIPPETS[index], server)
        assert len(server.requests) == 1  # it called the provider, through the variable
        assert not server.unexpected
    assert done.returncode == 0, done.stderr
    assert "refusal" in done.stdout  # each snippet prints how the answer ended


def test_readme_lists_every_exit_code_and_provider() -> None:
    from zett_agent.vendors import VENDORS

    for name, code in EXIT_CODES.items():
        row = re.search(rf"^\| {code} \| (.*)$", README, flags=re.MULTILINE)
        assert row, f"exit status {code} ({name}) is not in the README's table"
    provider_rows = re.findall(r"^\| `([a-z-]+)`", README, flags=re.MULTILINE)
    listed = {name for row in provider_rows for name in re.findall(r"[a-z-]+", row)}
    listed |= set(re.findall(r"^\| `[a-z-]+`, `([a-z-]+)`", README, flags=re.MULTILINE))
    assert set(VENDORS) <= listed
    for vendor in VENDORS.values():
        for variable in vendor.key_env:
            assert variable in README, variable


def test_the_install_line_needs_one_step() -> None:
    first = re.search(r"```sh\n(.*?)```", README, flags=re.DOTALL)
    assert first is not None
    line = first.group(1)
    assert "pip install -e '.[local]'" in line
    assert "--no-deps" not in line and line.count("pip install") == 1
    slow = re.search(r"`(pip install -e '\.\[dev,local\]' && python -m pytest -m slow)`", README)
    assert slow, "the slow-test instructions install both extras first"


def test_the_image_question_sends_the_image() -> None:
    [snippet] = [b for b in SNIPPETS if "ImagePart.from_file" in b]
    with ReplayServer([Reply.file(REFUSAL)]) as server:
        done = run_snippet(snippet, server)
        [request] = server.requests
    assert done.returncode == 0, done.stderr
    question = request.json["messages"][0]["content"]
    assert question[0] == {"type": "text", "text": "What is in this picture?"}
    image = (ROOT / "examples" / "red-dot.png").read_bytes()
    import base64

    assert question[1]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": base64.b64encode(image).decode(),
    }
