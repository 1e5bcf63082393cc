#!/usr/bin/env bash
# Drives `toolbox mcp` with an MCP client that is not ours: the CLI mode of
# the MCP Inspector (npm @modelcontextprotocol/inspector, pinned; its 1.x
# line runs on Node 20, the 2.x line needs Node 22). Each inspector call is
# one connection configured with only `toolbox mcp -f FILE`: it lists the
# tools and calls a tool, a capability, a send companion and a background
# command of a small toolbox, and, when bubblewrap is installed, lists and
# calls the default toolbox's tools. Needs go, node and npm.
set -euo pipefail
# Built as the README installs toolbox: static (CGO_ENABLED=0).
export CGO_ENABLED=0
cd "$(dirname "$0")/.."
repo=$PWD
INSPECTOR_VERSION=1.0.3

. bench/workdir.sh
make_work
trap remove_work EXIT
go build -o "$work/bin/" ./cmd/...
npm install --prefix "$work/npm" --no-audit --no-fund --loglevel=error \
  "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" >/dev/null
inspector=$work/npm/node_modules/.bin/mcp-inspector

passed=0
failed=0
# check NAME PATTERN FILE -- ARGS...: run the inspector with ARGS; its output
# must match the extended regexp PATTERN.
check() {
  local name=$1 pattern=$2 file=$3
  shift 4
  local out
  if out=$(cd "$(dirname "$file")" && "$inspector" --cli "$work/bin/toolbox" mcp -f "$file" --state-dir "$work/state" "$@" 2>&1) &&
    grep -Eq -- "$pattern" <<<"$out"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    printf 'FAIL %s: want /%s/ in:\n%s\n' "$name" "$pattern" "$out" >&2
  fi
}

# A small toolbox: a tool, a capability over two backends, a service with
# input events, background commands.
tb=$work/tb
mkdir -p "$tb/tools"
cat >"$tb/toolbox.hcl" <<'EOF'
sandbox = "none"
tool "greet" { path = "tools/greet" }
tool "hi_one" { path = "tools/hi_one" }
tool "hi_two" { path = "tools/hi_two" }
tool "echo_svc" { path = "tools/echo_svc" }
capability "hi" { backends = ["hi_one", "hi_two"] }
builtin "process" { unconfined = true }
EOF
arg='{"name":"who","description":"who","type":"string","backing_type":"string","arity":"single","mode":"positional"}'
for t in greet hi_one hi_two; do
  cat >"$tb/tools/$t" <<EOF
#!/bin/sh
[ "\$1" = describe ] && { echo '{"slug":"$t","description":"Say hello","args":[$arg]}'; exit 0; }
echo "$t: hello \$2"
EOF
done
cat >"$tb/tools/echo_svc" <<'EOF'
#!/bin/sh
[ "$1" = describe ] && { echo '{"protocol":2,"slug":"echo_svc","description":"Echo service","args":[],"process":{"mode":"service","ready":{"kind":"line","match":"^ready$"},"input":{"framing":"jsonl","event":{"type":"object","properties":{"say":{"type":"string"}},"required":["say"]}}}}'; exit 0; }
echo ready
while read -r line; do echo "{\"echo\": $line}"; done
EOF
chmod 755 "$tb"/tools/*
"$work/bin/toolbox" lock -f "$tb/toolbox.hcl" 2>/dev/null

f=$tb/toolbox.hcl
check "list" '"name": "echo_svc_send"' "$f" -- --method tools/list
check "list" '"name": "processes"' "$f" -- --method tools/list
check "tool" '"text": "greet: hello ann' "$f" -- --method tools/call --tool-name greet --tool-arg who=ann
check "capability" 'served by backend \\"hi_one\\"' "$f" -- --method tools/call --tool-name hi --tool-arg who=bob
check "bad arguments" '"isError": true' "$f" -- --method tools/call --tool-name greet
check "service start" '"status": "running"' "$f" -- --method tools/call --tool-name echo_svc
check "send companion" 'no such process' "$f" -- --method tools/call --tool-name echo_svc_send --tool-arg process=p000000 --tool-arg 'event={"say":"hi"}'
check "background command" '"status": "exited"' "$f" -- --method tools/call --tool-name process_run --tool-arg 'command=echo from-bash'
check "inbox" '"mails"' "$f" -- --method tools/call --tool-name inbox

# The default toolbox, as the README builds it. Its tools read the
# repository three levels above their own directory: a copy lives in
# $work/repo/toolboxes/default, and -C makes $work/repo the working directory
# (clients often start servers elsewhere).
if command -v bwrap >/dev/null 2>&1; then
  r=$work/repo
  mkdir -p "$r/toolboxes"
  cp -a "$repo/toolboxes/default" "$r/toolboxes/default"
  go build -o "$r/toolboxes/default/plugins/" ./plugins/examples/...
  printf 'first line\na needle in a haystack\n' >"$r/notes.txt"
  d=$r/toolboxes/default/toolbox.hcl
  (cd "$r" && "$work/bin/toolbox" lock -f "$d" 2>/dev/null)
  check "default list" '"name": "walk"' "$d" -- -C "$r" --method tools/list
  check "default read_file" '"text": "a needle in a haystack' "$d" -- -C "$r" --method tools/call --tool-name read_file --tool-arg path=notes.txt --tool-arg start=2
  check "default search" 'notes.txt:2:a needle' "$d" -- -C "$r" --method tools/call --tool-name search --tool-arg pattern=needle --tool-arg glob=notes.txt
  check "default walk" '"path": "notes.txt"' "$d" -- -C "$r" --method tools/call --tool-name walk --tool-arg path=. --tool-arg glob=notes.txt
  check "default list_dir" 'notes.txt' "$d" -- -C "$r" --method tools/call --tool-name list_dir --tool-arg path=.
else
  echo "mcp-inspector: bubblewrap missing, the default toolbox is not checked" >&2
fi

echo "mcp-inspector: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
