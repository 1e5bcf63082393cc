#!/usr/bin/env bash
# Benchmarks of issue 2 (and the sandbox start-up cost of issue 3), each a
# ratio measured in one run. Usage: bench/run.sh [runs]   (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-200}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

go build -o "$work/" ./cmd/toolbox ./cmd/toolbox-core
go build -o "$work/floor" ./bench/floor
go build -o "$work/ratio" ./bench/ratio

# A trivial v1 tool, and the same tool declaring sandboxes.
mkdir -p "$work/tb/tools"
cat > "$work/tb/tools/trivial" <<'T'
#!/bin/sh
[ "$1" = describe ] && { echo '{"slug":"trivial","description":"prints ok","args":[]}'; exit 0; }
echo ok
T
for m in landlock bwrap; do
cat > "$work/tb/tools/trivial_$m" <<T
#!/bin/sh
[ "\$1" = describe ] && { echo '{"protocol":2,"slug":"trivial_$m","description":"prints ok","args":[],"process":{"output":{"framing":"chunks"}},"runtime":{"sandbox":{"fs":{"read":["."]}$( [ $m = bwrap ] && echo ',"net":"none"')}}}'; exit 0; }
echo ok
T
done
chmod 755 "$work"/tb/tools/*
cat > "$work/tb/toolbox.hcl" <<'H'
sandbox = "auto"
tool "trivial" { path = "tools/trivial" }
H
"$work/toolbox" lock -f "$work/tb/toolbox.hcl" 2>/dev/null

echo "== toolbox run of a trivial v1 tool against the floor (target: toolbox/floor <= 1.5x)"
"$work/ratio" -n "$runs" \
  floor "$work/floor $work/tb/toolbox.lock.json trivial" \
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
  echo "== sandbox start-up cost (targets: landlock adds < 3 ms, bwrap < 15 ms at the median)"
  "$work/ratio" -n "$runs" \
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
  "$work/ratio" -n "$((runs / 4 + 1))" \
    exec "$work/toolbox run -f $work/repo/toolboxes/default/toolbox.hcl read_file_sh --args {\"path\":\"notes.txt\"}" \
    plugin "$work/toolbox run -f $work/repo/toolboxes/default/toolbox.hcl read_file_go --args {\"path\":\"notes.txt\"}"
else
  echo "(the default toolbox could not be locked here: skipping the plugin benchmark)"
fi

# Stream throughput: a stream tool that prints 200000 small jsonl events,
# each validated against its schema, through toolbox run (plain output,
# every event printed as it arrives) against cat of the same bytes.
mkdir -p "$work/stream/tools"
awk 'BEGIN { for (i = 1; i <= 200000; i++) printf "{\"n\":%d,\"msg\":\"event number %d\"}\n", i, i }' > "$work/stream/events.jsonl"
cat > "$work/stream/tools/events" <<T
#!/bin/sh
[ "\$1" = describe ] && { echo '{"protocol":2,"slug":"events","description":"replays events","args":[],"process":{"mode":"stream","output":{"framing":"jsonl","event":{"type":"object","required":["n","msg"],"properties":{"n":{"type":"integer"},"msg":{"type":"string"}}}}}}'; exit 0; }
exec cat "$work/stream/events.jsonl"
T
chmod 755 "$work/stream/tools/events"
printf 'tool "events" { path = "tools/events" }\n' > "$work/stream/toolbox.hcl"
"$work/toolbox" lock -f "$work/stream/toolbox.hcl" 2>/dev/null
echo
echo "== stream throughput: 200000 validated jsonl events through toolbox run vs cat of the same bytes"
"$work/ratio" -n 5 -warmup 1 \
  cat "cat $work/stream/events.jsonl" \
  toolbox-run "$work/toolbox run -f $work/stream/toolbox.hcl events"
start=$(date +%s%N)
"$work/toolbox" run -f "$work/stream/toolbox.hcl" events >/dev/null 2>&1
ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "toolbox run: 200000 events in ${ms} ms = $(awk "BEGIN{printf \"%.0f\", 200000000/$ms}") events/s"

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
"$work/ratio" -n "$runs" \
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
best=""
for i in 1 2 3; do
  start=$(date +%s%N)
  "$work/toolbox" lock -f "$work/many/toolbox.hcl" 2>/dev/null
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "run $i: ${ms} ms ($(awk "BEGIN{printf \"%.2f\", $ms/6400}")x of serial)"
done
