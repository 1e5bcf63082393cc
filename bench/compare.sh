#!/usr/bin/env bash
# Start-up before and after a change, in one run: the toolbox of git
# revision REF ("main", the default) against the working tree's, on the
# benchmarks of bench/run.sh that a change to process start-up moves (run
# of a trivial tool against the floors, sandbox start-up, stream), each
# ratio measured in one run so that machine noise hits both builds alike.
# Usage: bench/compare.sh [REF] [runs]   (default: main 60)
set -euo pipefail
# Built as the README installs toolbox: static (CGO_ENABLED=0).
export CGO_ENABLED=0
cd "$(dirname "$0")/.."
ref=${1:-main}; runs=${2:-60}
. bench/workdir.sh
make_work; trap remove_work EXIT
c=$work/bin
mkdir -p "$work/src" "$c/main" "$c/new"
git archive "$ref" | tar -x -C "$work/src"
(cd "$work/src" && go build -o "$c/main/" ./cmd/...)
go build -o "$c/new/" ./cmd/...
go build -o "$c/" ./bench/floor ./bench/ratio ./bench/streamfloor
echo "main = $ref ($(git rev-parse --short "$ref")), new = the working tree (HEAD $(git rev-parse --short HEAD))"
. bench/fixtures.sh
trivial_tools "$work/tb"
printf 'sandbox = "auto"\ntool "trivial" { path = "tools/trivial" }\ntool "trivial_bwrap" { path = "tools/trivial_bwrap" }\n' > "$work/tb/toolbox.hcl"
printf 'sandbox = "landlock"\ntool "trivial_landlock" { path = "tools/trivial_landlock" }\n' > "$work/tb/landlock.hcl"
$c/new/toolbox lock -f "$work/tb/toolbox.hcl" 2>/dev/null; $c/new/toolbox lock -f "$work/tb/landlock.hcl" 2>/dev/null
tb="-f $work/tb/toolbox.hcl"; ll="-f $work/tb/landlock.hcl"
echo "== toolbox run of a trivial tool, main vs new, against the floor and the floor with a reaper (target: <= 1.5x the floor)"
measure $c/ratio -n "$runs" -vs floor-reaper floor "$c/floor $work/tb/toolbox.lock.json trivial" floor-reaper "$c/floor -reaper $work/tb/toolbox.lock.json trivial" \
  main-run "$c/main/toolbox run $tb trivial" new-run "$c/new/toolbox run $tb trivial"
echo "== sandbox start-up: none, landlock, bwrap (main vs new)"
measure $c/ratio -n "$runs" main-none "$c/main/toolbox run $tb trivial" new-none "$c/new/toolbox run $tb trivial" \
  main-landlock "$c/main/toolbox run $ll trivial_landlock" new-landlock "$c/new/toolbox run $ll trivial_landlock" \
  main-bwrap "$c/main/toolbox run $tb trivial_bwrap" new-bwrap "$c/new/toolbox run $tb trivial_bwrap"
stream_toolbox "$work/stream"
$c/new/toolbox lock -f "$work/stream/toolbox.hcl" 2>/dev/null
echo "== stream: 200000 jsonl events, the floor (reads and validates the same lines) vs toolbox run (target: <= 1.5x, >= 250k events/s)"
measure $c/ratio -n 5 -warmup 1 floor "$c/streamfloor $work/stream/toolbox.lock.json events $work/stream/events.jsonl" \
  main-run "$c/main/toolbox run -f $work/stream/toolbox.hcl events" new-run "$c/new/toolbox run -f $work/stream/toolbox.hcl events"
for b in main new; do
  s=$(date +%s%N); $c/$b/toolbox run -f "$work/stream/toolbox.hcl" events >/dev/null 2>&1; ms=$(( ($(date +%s%N) - s) / 1000000 ))
  echo "$b: 200000 events in ${ms} ms = $(awk "BEGIN{printf \"%.0f\", 200000000/$ms}") validated events/s"
done
