#!/usr/bin/env bash
# Chaos check of issue 11: nothing lost, nothing orphaned.
#
# Under CPU load (six busy loops), it runs at the same time
#   - rounds of parallel `toolbox run`s of tools that print an exact number
#     of known bytes and exit, unconfined and sandboxed (auto), half of them
#     leaving a setsid grandchild that holds stdout open, some read by a
#     reader that pauses for 2 s near the end; every output is
#     compared byte for byte with what the tool printed;
#   - cycles of `toolbox serve` with a stream, a service and a background
#     command running and printing, killed with SIGKILL mid-output;
#   - cycles of `toolbox mcp` with a stream call and a oneshot call in
#     flight, killed with SIGKILL mid-output;
# then, 2 s after the last kill, counts the processes still alive whose
# argv holds the marker (every tool lives under a directory named
# chaosmark; grandchildren are `sleep 7777.5`) and the bytes lost.
#
# It prints "lost bytes: N, surviving processes: M" (and the details of
# anything wrong) and exits 0 only when both are 0 and no output was
# corrupt. Survivors are then killed by pid, and the busy loops too.
#
# Usage: bench/chaos.sh [rounds] [parallel]   (default 10 rounds of 8)
set -uo pipefail
# Built as the README installs toolbox: static (CGO_ENABLED=0).
export CGO_ENABLED=0
cd "$(dirname "$0")/.."
rounds=${1:-10}
par=${2:-8}
. bench/workdir.sh
make_work
hogs=()
cleanup() {
  for p in "${hogs[@]}"; do kill -9 "$p" 2>/dev/null; done
  remove_work
}
trap cleanup EXIT

go build -o "$work/bin/" ./cmd/toolbox ./cmd/toolbox-core ./cmd/toolbox-reaper || exit 1
PATH=$work/bin:$PATH
tb=$work/chaosmark
mkdir -p "$tb/tools" "$work/out"
mkdir -m 700 "$tb/serve" "$tb/mcp" # state dirs: the daemon refuses one others may enter
size=$((1024 * 1024 + 4321)) # bytes each run prints
# The tools: bytes prints $size known bytes (and, with a grandchild,
# leaves `sleep 7777.5` holding stdout); ticker prints events forever.
for name in bytes bytes_gc bytes_sb bytes_sb_gc; do
  rt=''
  case $name in *sb*) rt=',"runtime":{"sandbox":{"fs":{"read":["."]}}}' ;; esac
  gc=''
  case $name in *gc) gc='setsid sleep 7777.5 &' ;; esac
  cat >"$tb/tools/$name" <<T
#!/bin/sh
[ "\$1" = describe ] && { echo '{"protocol":2,"slug":"$name","description":"prints known bytes","args":[],"process":{"output":{"framing":"chunks"}}$rt}'; exit 0; }
$gc
yes 'chaos line 0123456789 abcdefghijklmnopqrstuvwxyz' | head -c $size
T
done
cat >"$tb/tools/ticker" <<'T'
#!/bin/sh
[ "$1" = describe ] && { echo '{"protocol":2,"slug":"ticker","description":"prints events forever","args":[],"process":{"mode":"stream","output":{"framing":"jsonl"}},"runtime":{"timeout":{"stop":1}}}'; exit 0; }
setsid sleep 7777.5 &
i=0
while :; do echo "{\"n\":$i}"; i=$((i + 1)); done
T
cat >"$tb/tools/svc" <<'T'
#!/bin/sh
[ "$1" = describe ] && { echo '{"protocol":2,"slug":"svc","description":"a chatty service","args":[],"process":{"mode":"service","ready":{"kind":"immediate"},"output":{"framing":"lines"}},"runtime":{"timeout":{"stop":1}}}'; exit 0; }
setsid sleep 7777.5 &
while :; do echo tick; sleep 0.001; done
T
chmod 755 "$tb"/tools/*
{
  echo 'sandbox = "auto"'
  echo 'builtin "process" { unconfined = true }'  # chaos counts what unconfined commands leave behind
  for name in bytes bytes_gc bytes_sb bytes_sb_gc ticker svc; do
    echo "tool \"$name\" { path = \"tools/$name\" }"
  done
} >"$tb/toolbox.hcl"
if ! toolbox lock -f "$tb/toolbox.hcl" 2>"$work/lock.err"; then
  echo "toolbox lock failed:" >&2
  cat "$work/lock.err" >&2
  exit 1
fi
expected=$(yes 'chaos line 0123456789 abcdefghijklmnopqrstuvwxyz' | head -c $size | cksum)

for _ in 1 2 3 4 5 6; do
  sh -c 'while :; do :; done' &
  hogs+=($!)
  disown $! # no job report when the cleanup kills it
done

# marked lists the live processes whose argv holds the marker.
marked() {
  grep -l -a -e 'chaos[m]ark' -e 'sleep.7777\.5' /proc/[0-9]*/cmdline 2>/dev/null | sed 's|/proc/\([0-9]*\)/cmdline|\1|'
}

# killed NAME PID: kill -9 the owner PID after noting how many processes
# of the tools ran then (the owner's included), in $work/killed.
killed() {
  echo "$1 $(marked | wc -l)" >>"$work/killed"
  kill -9 "$2" 2>/dev/null || { echo "$1 ended before it was killed:" >&2; cat "$work/$1.err" >&2; }
  wait "$2" 2>/dev/null
}

# Parallel runs: each output file must be exactly what the tool printed.
runs() {
  local r i name
  for r in $(seq "$rounds"); do
    for i in $(seq "$par"); do
      case $((i % 4)) in 0) name=bytes ;; 1) name=bytes_gc ;; 2) name=bytes_sb ;; 3) name=bytes_sb_gc ;; esac
      if [ $((i % 4)) = 1 ]; then
        # A reader that pauses once the tool is done writing: what is
        # still in the pipes when it exits must come through all the same.
        toolbox run -f "$tb/toolbox.hcl" "$name" 2>"$work/out/$r.$i.err" |
          { dd bs=1000 count=950 iflag=fullblock 2>/dev/null; sleep 2; cat; } >"$work/out/$r.$i" &
      else
        toolbox run -f "$tb/toolbox.hcl" "$name" >"$work/out/$r.$i" 2>"$work/out/$r.$i.err" &
      fi
    done
    wait
  done
}

# serve, killed mid-output.
serves() {
  local c pid
  for c in $(seq 4); do
    toolbox serve -f "$tb/toolbox.hcl" --state-dir "$tb/serve" >/dev/null 2>"$work/serve.$c.err" &
    pid=$!
    for _ in $(seq 200); do
      toolbox processes list --state-dir "$tb/serve" --session chaos >/dev/null 2>&1 && break
      sleep 0.05
    done
    toolbox start ticker -f "$tb/toolbox.hcl" --state-dir "$tb/serve" --session chaos >/dev/null 2>>"$work/serve.$c.err"
    toolbox start svc -f "$tb/toolbox.hcl" --state-dir "$tb/serve" --session chaos >/dev/null 2>>"$work/serve.$c.err"
    toolbox processes run 'setsid sleep 7777.5 & while :; do echo chaosmark; done' --wait 0 \
      --state-dir "$tb/serve" --session chaos >/dev/null 2>>"$work/serve.$c.err"
    sleep 0.5
    killed "serve.$c" "$pid"
  done
}

# mcp, killed mid-output.
mcps() {
  local c pid
  for c in $(seq 4); do
    rm -f "$work/in"
    mkfifo "$work/in"
    toolbox mcp -f "$tb/toolbox.hcl" --state-dir "$tb/mcp" <"$work/in" >/dev/null 2>"$work/mcp.$c.err" &
    pid=$!
    exec 3>"$work/in"
    echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"chaos","version":"0"}}}' >&3
    echo '{"jsonrpc":"2.0","method":"notifications/initialized"}' >&3
    echo '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ticker","arguments":{}}}' >&3
    echo '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"svc","arguments":{}}}' >&3
    echo '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"bytes_gc","arguments":{}}}' >&3
    sleep 1
    killed "mcp.$c" "$pid"
    exec 3>&-
  done
}

start=$(date +%s)
runs &
runs_pid=$!
serves &
serves_pid=$!
mcps &
mcps_pid=$!
wait "$runs_pid" "$serves_pid" "$mcps_pid"
sleep 2 # the bound: nothing toolbox started outlives its owner by more than 2 s

lost=0
corrupt=0
notes=0
for f in "$work"/out/*.err; do
  out=${f%.err}
  got=$(wc -c <"$out")
  if [ "$got" -lt "$size" ]; then
    lost=$((lost + size - got))
    echo "short output: $(basename "$out"): $got of $size bytes; stderr: $(head -c 300 "$f")"
  elif [ "$(cksum <"$out")" != "$expected" ]; then
    corrupt=$((corrupt + 1))
    echo "corrupt output: $(basename "$out") ($got bytes)"
  fi
  grep -q 'toolbox: note:' "$f" && notes=$((notes + 1))
done
survivors=$(marked)
n=0
for p in $survivors; do
  [ "$p" = $$ ] && continue
  n=$((n + 1))
  echo "survivor: $p $(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null | head -c 200)"
done
echo "runs: $((rounds * par)) of $size bytes under 6 busy loops, in $(($(date +%s) - start)) s; cut-output notes: $notes"
echo "killed mid-output (with the number of their processes running then):" $(sort "$work/killed" | tr '\n' ' ')
echo "lost bytes: $lost, surviving processes: $n"
for p in $survivors; do kill -9 "$p" 2>/dev/null; done
[ "$lost" -eq 0 ] && [ "$n" -eq 0 ] && [ "$corrupt" -eq 0 ]
