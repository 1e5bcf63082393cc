# Sourced (not run) by the scripts that run toolbox in a scratch directory
# (bench/*.sh, .ci/mcp-inspector.sh). As root, toolbox mounts a tmpfs on
# each toolbox's shared tmp, under $TMPDIR, and leaves it there like /tmp
# (DESIGN.md §6, D6): make_work puts TMPDIR inside the scratch directory,
# and remove_work detaches what was mounted there before removing it, so
# that a script leaves no mount behind.

# make_work sets work to a fresh directory and TMPDIR to a directory in it.
make_work() {
  work=$(mktemp -d)
  mkdir -m 1777 "$work/tmp"
  export TMPDIR=$work/tmp
}

# remove_work detaches every mount under $work, deepest first, and removes it.
remove_work() {
  local m
  for m in $(awk -v w="$work/" 'index($5, w) == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
    umount -l "$m" 2>/dev/null || echo "could not unmount $m" >&2
  done
  rm -rf "$work"
}
