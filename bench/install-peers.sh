#!/usr/bin/env bash
# The peers bench/run.py compares zett-agent with, each in its own virtualenv
# (zett-agent 0.2.1 imports as zett_agent too, and a peer's dependencies must not
# change the project's). Run once, never at test time; CI's --smoke does not need
# them. Usage: bench/install-peers.sh [DIR]   (default /work/bench-venvs, or
# $ZETT_BENCH_VENVS); then: python bench/run.py --peers DIR
set -euo pipefail
DIR=${1:-${ZETT_BENCH_VENVS:-/work/bench-venvs}}
PY=${PYTHON:-python3}
mkdir -p "$DIR"
install() {  # install <venv name> <pinned requirement>
    "$PY" -m venv "$DIR/$1"
    "$DIR/$1/bin/pip" install -q "$2"
    echo "$1: $("$DIR/$1/bin/pip" list 2>/dev/null | grep -iE "^(zett-agent|pydantic-ai-slim|litellm) ")"
}
install zett-0.2.1 "zett-agent==0.2.1"
install pydantic-ai "pydantic-ai-slim[openai,anthropic]==2.68.0"
install litellm "litellm==1.110.2"
