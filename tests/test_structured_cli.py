"""``zett run --output-schema FILE.json``: the validated JSON on stdout, the exit
statuses unchanged (an answer cut at the output limit is 4, not a validation
error; an answer that stays invalid after its retry is 1), over a real socket."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import docs_text
from faults.wire import WIRES
from zett_agent.testing import ReplayServer, Reply

CHAT = WIRES["openai-chat"]
HERE = Path(__file__).parent / "recordings" / "structured"
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["name", "population"],
    "additionalProperties": False,
}


def zett(server: ReplayServer, schema: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ZETT_OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "test"}
    return subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", "run", "--model", "openai:gpt-x",
         "--tools", "none", "--output-schema", str(schema), *extra, "The capital of France?"],
        env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def schema_file(tmp_path: Path) -> Path:
    path = tmp_path / "city.json"
    path.write_text(json.dumps(SCHEMA))
    return path


def replies(*names: str) -> list[Reply]:
    return [Reply.file(HERE / f"openai_chat__structured_{name}.sse") for name in names]


def test_the_validated_json_is_printed_on_stdout(tmp_path: Path) -> None:
    with ReplayServer(replies("ok")) as server:
        done = zett(server, schema_file(tmp_path))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"name": "Paris", "population": 2102650}
    sent: Any = server.requests[0].json
    assert sent["response_format"]["json_schema"]["schema"]["required"] == ["name", "population"]


def test_an_answer_that_stays_invalid_exits_1(tmp_path: Path) -> None:
    with ReplayServer(replies("invalid", "invalid")) as server:
        done = zett(server, schema_file(tmp_path))
    assert done.returncode == 1, done.stderr
    assert done.stdout.strip() == ""
    assert "'population' is a required property" in done.stderr
    assert len(server.requests) == 2  # one retry


def test_a_cut_answer_is_max_output_not_a_validation_error(tmp_path: Path) -> None:
    with ReplayServer(replies("max_output", "ok")) as server:
        done = zett(server, schema_file(tmp_path))
    assert done.returncode == 4, done.stderr
    assert done.stdout.strip() == ""
    assert "max_output" in done.stderr
    assert len(server.requests) == 1


def test_a_schema_file_that_is_not_json_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with ReplayServer([]) as server:
        done = zett(server, bad)
    assert done.returncode == 2
    assert server.requests == []


def test_the_readme_example_writes_the_schema_file_it_uses(tmp_path: Path) -> None:
    """The README's ``--output-schema city.json`` block makes ``city.json`` itself
    (a newcomer had no such file), and that schema works as this module's does."""
    [block] = [b for b in docs_text.blocks("sh") if "--output-schema city.json" in b]
    assert block.index("cat > city.json <<'EOF'") < block.index("--output-schema city.json")
    schema = json.loads(block.split("<<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0])
    assert schema == SCHEMA
    path = tmp_path / "city.json"
    path.write_text(json.dumps(schema))
    with ReplayServer(replies("ok")) as server:
        done = zett(server, path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"name": "Paris", "population": 2102650}
