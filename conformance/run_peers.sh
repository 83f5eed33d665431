#!/usr/bin/env bash
# The conformance suite on zett and on the peer runtimes, each peer in a virtualenv
# of its own (pinned below), so no runtime's dependencies meet another's. Not part
# of .ci/run: it installs from PyPI. Usage, from the repository root:
#
#   conformance/run_peers.sh                # set up what is missing, run all, the table
#   conformance/run_peers.sh openai-sdk     # only those runtimes (and the table)
#
# VENVS (default /tmp/zett-conformance-venvs) holds the venvs; results go to
# conformance/results/<runtime>.json, the table to conformance/results/table.md/.json.
# zett runs in the current environment (the project installed, e.g. pip install -e .).
set -euo pipefail
cd "$(dirname "$0")/.."
VENVS=${VENVS:-/tmp/zett-conformance-venvs}
PYTHON=${PYTHON:-python3}
RESULTS=conformance/results
export LITELLM_LOCAL_MODEL_COST_MAP=True  # LiteLLM reads its bundled cost map, no fetch

declare -A PINS=(
  [openai-sdk]="openai==3.57.0"
  [anthropic-sdk]="anthropic==2.15.0"
  [pydantic-ai]="pydantic-ai-slim[openai,anthropic,google]==2.68.0"
  [litellm]="litellm==1.110.2"
  [zett-0.2.1]="zett-agent==0.2.1"
  [langchain]="langchain-openai==1.7.4 langchain-anthropic==1.7.10"
  [openai-agents]="openai-agents==0.24.0"
  [evals]="pydantic-evals==2.62.0 pytest==9.2.0"
)
ORDER=(openai-sdk anthropic-sdk pydantic-ai litellm zett-0.2.1 langchain openai-agents vercel-ai)

setup() {  # one venv per runtime, made once
  local name=$1 venv=$VENVS/$1
  if [ ! -x "$venv/bin/python" ]; then
    echo "== creating $venv (${PINS[$name]})"
    "$PYTHON" -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check ${PINS[$name]} -e conformance
  fi
}

wanted=("$@")
[ ${#wanted[@]} -eq 0 ] && wanted=(zett "${ORDER[@]}" evals)
for name in "${wanted[@]}"; do
  case $name in
    zett)
      PYTHONPATH="src:conformance/src${PYTHONPATH:+:$PYTHONPATH}" python -m zett_conformance run \
        --runtime zett --results "$RESULTS" --jobs 2 ;;
    vercel-ai)  # node: the packages pinned in conformance/node/package-lock.json
      [ -d conformance/node/node_modules ] || (cd conformance/node && npm ci --no-audit --no-fund)
      PYTHONPATH=conformance/src python -m zett_conformance run --runtime vercel-ai \
        --results "$RESULTS" --jobs 2 ;;
    evals)  # the stop-aware evaluator's test, where pydantic-evals is installed
      setup evals
      env -u PYTHONPATH "$VENVS/evals/bin/python" -m pytest -q -p no:cacheprovider conformance/tests/test_evals.py ;;
    *)
      setup "$name"
      env -u PYTHONPATH "$VENVS/$name/bin/python" -m zett_conformance run --runtime "$name" --results "$RESULTS" \
        --jobs 2 ;;
  esac
done
PYTHONPATH=conformance/src python -m zett_conformance table --results "$RESULTS"
