#!/usr/bin/env bash
# Benchmarks of issues 2 and 13 (and the sandbox start-up cost of issue 3),
# each a ratio measured in one run and printed after the command that
# measured it. Usage: bench/run.sh [runs]   (default 200)
set -euo pipefail
# Built as the README installs toolbox: static (CGO_ENABLED=0).
export CGO_ENABLED=0
cd "$(dirname "$0")/.."
runs=${1:-200}
. bench/workdir.sh
make_work
trap remove_work EXIT

go build -o "$work/" ./cmd/toolbox ./cmd/toolbox-core ./cmd/toolbox-reaper
go build -o "$work/floor" ./bench/floor
go build -o "$work/ratio" ./bench/ratio
go build -o "$work/mcpcall" ./bench/mcpcall
go build -o "$work/streamfloor" ./bench/streamfloor

. bench/fixtures.sh

# A trivial v1 tool, and the same tool declaring sandboxes.
trivial_tools "$work/tb"
cat > "$work/tb/toolbox.hcl" <<'H'
sandbox = "auto"
tool "trivial" { path = "tools/trivial" }
H
"$work/toolbox" lock -f "$work/tb/toolbox.hcl" 2>/dev/null

echo "== toolbox run of a trivial v1 tool against the floor (target: toolbox/floor <= 1.5x); floor-reaper is the"
echo "   floor keeping toolbox's no-orphans guarantee (the tool below a re-executed subreaper, see bench/floor);"
echo "   cpu is the work of a run (user+system time of the whole tree), which other load moves less than the time"
measure "$work/ratio" -cpu -n "$runs" -vs floor-reaper \
  floor "$work/floor $work/tb/toolbox.lock.json trivial" \
  floor-reaper "$work/floor -reaper $work/tb/toolbox.lock.json trivial" \
  direct "$work/tb/tools/trivial run" \
  toolbox-run "$work/toolbox run -f $work/tb/toolbox.hcl trivial"

# Sandboxed start-up: the same trivial tool under each mechanism.
cat > "$work/tb/sandboxed.hcl" <<'H'
sandbox = "auto"
tool "trivial" { path = "tools/trivial" }
tool "trivial_bwrap" { path = "tools/trivial_bwrap" }
H
cat > "$work/tb/landlock.hcl" <<'H'
sandbox = "landlock"
tool "trivial_landlock" { path = "tools/trivial_landlock" }
H
if "$work/toolbox" lock -f "$work/tb/sandboxed.hcl" 2>/dev/null && "$work/toolbox" lock -f "$work/tb/landlock.hcl" 2>/dev/null; then
  echo
  echo "== sandbox start-up cost (targets at the median: landlock adds < 3 ms, bwrap < 15 ms over none)"
  measure "$work/ratio" -n "$runs" \
    none "$work/toolbox run -f $work/tb/sandboxed.hcl trivial" \
    landlock "$work/toolbox run -f $work/tb/landlock.hcl trivial_landlock" \
    bwrap "$work/toolbox run -f $work/tb/sandboxed.hcl trivial_bwrap"
else
  echo "(sandboxed tools could not be locked here: skipping the sandbox start-up benchmark)"
fi

# Cold toolbox run of a plugin tool against the equivalent exec tool: the
# default toolbox's read_file, as a bash script and as a go-plugin, both
# under the same sandbox.
mkdir -p "$work/repo/toolboxes"
cp -a toolboxes/default "$work/repo/toolboxes/"
rm -f "$work/repo/toolboxes/default/toolbox.lock.json"
go build -o "$work/repo/toolboxes/default/plugins/" ./plugins/examples/...
printf 'line one\nline two\n' > "$work/repo/notes.txt"
if "$work/toolbox" lock -f "$work/repo/toolboxes/default/toolbox.hcl" 2>/dev/null; then
  echo
  echo "== cold toolbox run: exec tool vs go-plugin tool with the same args (read_file, sandboxed alike)"
  measure "$work/ratio" -n "$((runs / 4 + 1))" \
    exec "$work/toolbox run -f $work/repo/toolboxes/default/toolbox.hcl --workspace $work/repo read_file_sh --args {\"path\":\"notes.txt\"}" \
    plugin "$work/toolbox run -f $work/repo/toolboxes/default/toolbox.hcl --workspace $work/repo read_file_go --args {\"path\":\"notes.txt\"}"
else
  echo "(the default toolbox could not be locked here: skipping the plugin benchmark)"
fi

# Stream throughput: a stream tool that prints 200000 small jsonl events,
# each validated against its schema, through toolbox run (plain output,
# every event printed as it arrives) against bench/streamfloor, which reads
# the same lines and validates each against the same compiled schema.
stream_toolbox "$work/stream"
"$work/toolbox" lock -f "$work/stream/toolbox.hcl" 2>/dev/null
echo
echo "== stream throughput: 200000 jsonl events through toolbox run vs a floor that reads the same lines and"
echo "   validates each against the same compiled schema (target: toolbox/floor <= 1.5x, >= 250k validated events/s)"
measure "$work/ratio" -n 5 -warmup 1 \
  floor "$work/streamfloor $work/stream/toolbox.lock.json events $work/stream/events.jsonl" \
  toolbox-run "$work/toolbox run -f $work/stream/toolbox.hcl events"
start=$(date +%s%N)
"$work/toolbox" run -f "$work/stream/toolbox.hcl" events >/dev/null 2>&1
ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "toolbox run: 200000 events in ${ms} ms = $(awk "BEGIN{printf \"%.0f\", 200000000/$ms}") validated events/s"

# A run of one command of a tool of 1000 commands against one of a tool of
# one command (issue 11 #8: the lock held the describe document once per
# command, 108 MB, and every run decoded it). Target: <= 1.5x.
for n in 1 1000; do
  mkdir -p "$work/cmds$n/tools"
  awk -v n="$n" 'BEGIN {
    printf "{\"protocol\":2,\"slug\":\"multi\",\"description\":\"many commands\",\"args\":[],\"process\":{\"output\":{\"framing\":\"chunks\"}},\"commands\":["
    for (i = 0; i < n; i++) printf "%s{\"name\":\"c%d\",\"description\":\"command %d\",\"args\":[{\"name\":\"path\",\"description\":\"a path\",\"type\":\"text\",\"backing_type\":\"string\",\"arity\":\"single\",\"mode\":\"positional\"}]}", (i ? "," : ""), i, i
    print "]}"
  }' > "$work/cmds$n/describe.json"
  printf '#!/bin/sh\n[ "$1" = describe ] && exec cat "%s"\necho "ran $2"\n' "$work/cmds$n/describe.json" > "$work/cmds$n/tools/multi"
  chmod 755 "$work/cmds$n/tools/multi"
  printf 'tool "multi" { path = "tools/multi" }\n' > "$work/cmds$n/toolbox.hcl"
  "$work/toolbox" lock -f "$work/cmds$n/toolbox.hcl" 2>/dev/null
done
echo
echo "== toolbox run of one command: a tool of 1000 commands vs one of 1 (target: <= 1.5x; lock of 1000: $(wc -c < "$work/cmds1000/toolbox.lock.json") bytes)"
measure "$work/ratio" -n "$runs" \
  one-command "$work/toolbox run -f $work/cmds1/toolbox.hcl multi.c0 --args {\"path\":\"x\"}" \
  of-1000 "$work/toolbox run -f $work/cmds1000/toolbox.hcl multi.c500 --args {\"path\":\"x\"}"

# toolbox lock of 64 tools whose probes each take 100 ms.
mkdir -p "$work/many/tools"
{
  echo 'sandbox = "none"'
  for i in $(seq 1 64); do
    cat > "$work/many/tools/t$i" <<T
#!/bin/sh
sleep 0.1
echo '{"slug":"t$i","description":"slow describe","args":[]}'
T
    chmod 755 "$work/many/tools/t$i"
    echo "tool \"t$i\" { path = \"tools/t$i\" }"
  done
} > "$work/many/toolbox.hcl"
echo
echo "== toolbox lock of 64 tools with 100 ms probes (target: < 1.5 s; serial would be 6.4 s)"
echo "\$ $work/toolbox lock -f $work/many/toolbox.hcl   (three times)"
for i in 1 2 3; do
  start=$(date +%s%N)
  "$work/toolbox" lock -f "$work/many/toolbox.hcl" 2>/dev/null
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "run $i: ${ms} ms ($(awk "BEGIN{printf \"%.2f\", $ms/6400}")x of serial)"
done

# toolbox lock of 1000 tools with cheap probes (issue 13).
mkdir -p "$work/thousand/tools"
{
  echo 'sandbox = "none"'
  for i in $(seq 1 1000); do
    printf '#!/bin/sh\necho '"'"'{"slug":"t%d","description":"cheap describe","args":[]}'"'"'\n' "$i" > "$work/thousand/tools/t$i"
    chmod 755 "$work/thousand/tools/t$i"
    echo "tool \"t$i\" { path = \"tools/t$i\" }"
  done
} > "$work/thousand/toolbox.hcl"
echo
echo "== toolbox lock of 1000 tools with cheap probes (target: <= 5 s)"
echo "\$ $work/toolbox lock -f $work/thousand/toolbox.hcl"
start=$(date +%s%N)
"$work/toolbox" lock -f "$work/thousand/toolbox.hcl" 2>/dev/null
echo "$(( ($(date +%s%N) - start) / 1000000 )) ms"

# The servers (issue 13): tools/call over MCP stdio, the default toolbox's
# read_file on a 3-line file, as a warm plugin and as an exec tool.
if ! [ -f "$work/repo/toolboxes/default/toolbox.lock.json" ]; then
  echo "(the default toolbox could not be locked here: skipping the MCP benchmarks)"
  exit 0
fi
tb="$work/repo/toolboxes/default/toolbox.hcl"
printf 'line one\nline two\nline three\n' > "$work/repo/notes.txt"
# q quotes a word for mcpcall's command strings (split as a shell would,
# without expanding): a path with spaces stays one word.
q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
calls=$((runs / 2 + 1))

echo
echo "== warm plugin read_file over MCP stdio vs the official filesystem MCP server's read_text_file (target: <= 2x its p50)"
if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1 &&
  npm install --silent --no-audit --no-fund --prefix "$work/npm" @modelcontextprotocol/server-filesystem >/dev/null 2>&1; then
  measure "$work/mcpcall" -n "$calls" \
    official read_text_file "{\"path\":\"$work/repo/notes.txt\"}" \
    "node $(q "$work/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js") $(q "$work/repo")" \
    toolbox-plugin read_file '{"path":"notes.txt"}' "$(q "$work/toolbox") mcp -f $(q "$tb") --workspace $(q "$work/repo") --backend read_file=read_file_go" 2>/dev/null
else
  echo "(npm or node is missing, or the install failed: skipping the official filesystem server)"
  measure "$work/mcpcall" -n "$calls" \
    toolbox-plugin read_file '{"path":"notes.txt"}' "$(q "$work/toolbox") mcp -f $(q "$tb") --workspace $(q "$work/repo") --backend read_file=read_file_go"
fi

# The floor of an exec tool's call: bare bwrap with the binds toolbox gives
# read_file (system directories, the repository and the tool's directory
# read-only, no network, a private /tmp), running the same script, started
# by a minimal Go program (mcpcall's exec targets).
bwrap_floor() {
  local repo=$1 tools=$2 p n
  printf '%s ' bwrap --unshare-all --unshare-user --disable-userns --die-with-parent --new-session --cap-drop ALL
  for p in /usr /bin /sbin /lib /lib32 /lib64 /libx32; do
    if [ -L "$p" ]; then printf -- '--symlink %s %s ' "$(readlink "$p")" "$p"
    elif [ -e "$p" ]; then printf -- '--ro-bind %s %s ' "$p" "$p"; fi
  done
  for n in passwd group nsswitch.conf ld.so.cache ld.so.conf ld.so.conf.d ssl ca-certificates ca-certificates.conf \
    pki crypto-policies alternatives localtime timezone os-release hosts host.conf gai.conf services protocols mime.types; do
    p=/etc/$n
    if [ -L "$p" ]; then printf -- '--symlink %s %s ' "$(readlink "$p")" "$p"
    elif [ -e "$p" ]; then printf -- '--ro-bind %s %s ' "$p" "$p"; fi
  done
  printf -- '--proc /proc --dev /dev --tmpfs /tmp --ro-bind %s %s --ro-bind %s %s --remount-ro / --chdir %s -- %s/read_file run notes.txt' \
    "$repo" "$repo" "$tools" "$tools" "$repo" "$tools"
}
if command -v bwrap >/dev/null 2>&1; then
  echo
  echo "== exec read_file over MCP stdio vs the floor: bare bwrap with the same binds running the same script (target: <= 1.3x)"
  measure "$work/mcpcall" -n "$calls" \
    floor exec - "$(bwrap_floor "$work/repo" "$work/repo/toolboxes/default/tools")" \
    toolbox-exec read_file '{"path":"notes.txt"}' "$(q "$work/toolbox") mcp -f $(q "$tb") --workspace $(q "$work/repo")"

  echo
  echo "== 50 concurrent exec read_file calls over MCP stdio: p50 and p99 without a limit (--max-calls 1000) and with the default (4 per core)"
  measure "$work/mcpcall" -n 10 -warmup 1 -c 50 \
    unlimited read_file '{"path":"notes.txt"}' "$(q "$work/toolbox") mcp -f $(q "$tb") --workspace $(q "$work/repo") --max-calls 1000" \
    default-limit read_file '{"path":"notes.txt"}' "$(q "$work/toolbox") mcp -f $(q "$tb") --workspace $(q "$work/repo")"
else
  echo "(bwrap is missing: skipping the exec benchmarks over MCP)"
fi
