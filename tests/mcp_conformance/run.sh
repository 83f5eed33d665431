#!/usr/bin/env bash
# The official MCP conformance suite (client mode) against zett-agent's adapter,
# tests/mcp_servers/conformance_client.py (zett's public API only), with
# expected-failures.yml as the ratchet. Needs `npm ci` here (the suite and Node 22
# from the npm registry) and a Python with zett-agent[mcp] on PATH.
#
#   bash tests/mcp_conformance/run.sh            # all 26 client scenarios
#
# The suite runs its scenarios in parallel; on 2 cores a scenario with real-time
# waits (sse-retry's reconnect timing) can miss its tolerance, so an unexpected
# failure is run again alone (twice at most) before it counts.
set -uo pipefail
cd "$(dirname "$0")"
NODE=node_modules/.bin/node
SUITE=node_modules/.bin/conformance
CLIENT="python ../mcp_servers/conformance_client.py"
OUT=${CONFORMANCE_OUT:-$(mktemp -d)}
log=$(mktemp)
start=$(date +%s)

"$NODE" "$SUITE" client --command "$CLIENT" --suite all --expected-failures expected-failures.yml \
  -o "$OUT/suite" >"$log" 2>&1
rc=$?
plain=$(sed 's/\x1b\[[0-9;]*m//g' "$log")
printf '%s\n' "$plain" | sed -n '/=== SUITE SUMMARY ===/,$p'

if [ "$rc" -ne 0 ]; then
  if printf '%s\n' "$plain" | grep -q '^Stale baseline entries'; then
    echo "stale entries in expected-failures.yml: remove them"; exit 1
  fi
  mapfile -t again < <(printf '%s\n' "$plain" | sed -n '/^Unexpected failures (not in baseline):$/,/^$/p' | sed -n 's/^  ✗ //p')
  if [ "${#again[@]}" -eq 0 ]; then
    echo "the suite failed (exit $rc) without naming unexpected failures"; exit "$rc"
  fi
  for scenario in "${again[@]}"; do
    passed=0
    for attempt in 1 2; do
      echo "re-running $scenario alone (attempt $attempt)"
      if "$NODE" "$SUITE" client --command "$CLIENT" --scenario "$scenario" -o "$OUT/solo" >"$log" 2>&1; then
        passed=1; break
      fi
    done
    if [ "$passed" -ne 1 ]; then
      sed 's/\x1b\[[0-9;]*m//g' "$log" | tail -30
      echo "$scenario fails when run alone too"; exit 1
    fi
    echo "$scenario passes alone: the suite run's failure was contention"
  done
fi
echo "conformance: $(( $(date +%s) - start )) s (results in $OUT)"
