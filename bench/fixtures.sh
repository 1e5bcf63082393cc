# Fixtures shared by bench/run.sh and bench/compare.sh (sourced, not run):
# the same tools, so that the two scripts measure the same thing.

# measure prints a command, then runs it.
measure() {
  echo "\$ $*"
  "$@"
}

# trivial_tools DIR writes DIR/tools/trivial (a v1 tool printing ok) and
# the same tool declaring a landlock and a bwrap sandbox.
trivial_tools() {
  local dir=$1 m
  mkdir -p "$dir/tools"
  cat > "$dir/tools/trivial" <<'T'
#!/bin/sh
[ "$1" = describe ] && { echo '{"slug":"trivial","description":"prints ok","args":[]}'; exit 0; }
echo ok
T
  for m in landlock bwrap; do
    cat > "$dir/tools/trivial_$m" <<T
#!/bin/sh
[ "\$1" = describe ] && { echo '{"protocol":2,"slug":"trivial_$m","description":"prints ok","args":[],"process":{"output":{"framing":"chunks"}},"runtime":{"sandbox":{"fs":{"read":["."]}$( [ $m = bwrap ] && echo ',"net":"none"')}}}'; exit 0; }
echo ok
T
  done
  chmod 755 "$dir"/tools/*
}

# stream_toolbox DIR writes DIR/events.jsonl (200000 small jsonl events),
# a stream tool DIR/tools/events replaying them, each validated against
# its event schema, and DIR/toolbox.hcl naming it.
stream_toolbox() {
  local dir=$1
  mkdir -p "$dir/tools"
  awk 'BEGIN { for (i = 1; i <= 200000; i++) printf "{\"n\":%d,\"msg\":\"event number %d\"}\n", i, i }' > "$dir/events.jsonl"
  cat > "$dir/tools/events" <<T
#!/bin/sh
[ "\$1" = describe ] && { echo '{"protocol":2,"slug":"events","description":"replays events","args":[],"process":{"mode":"stream","output":{"framing":"jsonl","event":{"type":"object","required":["n","msg"],"properties":{"n":{"type":"integer"},"msg":{"type":"string"}}}}}}'; exit 0; }
exec cat "$dir/events.jsonl"
T
  chmod 755 "$dir/tools/events"
  printf 'tool "events" { path = "tools/events" }\n' > "$dir/toolbox.hcl"
}
