# The default toolbox: tools a coding agent needs to work on a project, the
# workspace. `toolbox lock -f toolboxes/default/toolbox.hcl` probes every
# tool and writes toolbox.lock.json beside this file; `toolbox run` then runs
# only what that lock says. See README.md in this directory.
#
# Every tool here is confined to the workspace, chosen at each call and never
# locked: --workspace DIR (run, start, serve, mcp), else $TOOLBOX_WORKSPACE,
# else the current directory. One lock serves any project:
#   toolbox mcp -f toolboxes/default/toolbox.hcl --workspace ~/myproj
# A `workspace = "DIR"` line here (relative to this file) would set a default
# between $TOOLBOX_WORKSPACE and the current directory; this toolbox sets
# none, so that a copy of it kept inside a project (myproj/.toolbox/) shows
# the tools nothing above the directory they are pointed at.

# How tools that declare runtime.sandbox are confined: "auto" takes bubblewrap
# when it can honour everything a tool declares, else Landlock, else refuses
# the tool at lock time. The read-only tools here declare net "none" and a
# private /tmp, which only bubblewrap can enforce, so they need bwrap
# installed (apt-get install bubblewrap). Under "none" they fail to lock:
# nothing runs with less isolation than it asked for.
sandbox = "auto" # bwrap | landlock | auto | none

# Resource limits for every tool (a tool's own limits block overrides them).
# tmp_size also sizes the toolbox's shared tmp: as root, toolbox mounts a
# tmpfs of that size on it, shared by every tool with tmp "shared" (DESIGN.md
# §6). go_test keeps Go's build and module caches there: `go test` of three
# packages of toolbox itself (about 70 packages of dependencies and the
# standard library) filled 253 MiB of build cache, and go also links its
# test binaries there. 768MiB fits a moderate project with room to spare,
# and stays below the 1 GiB issue 10 says no tool may write into its /tmp
# (the same value sizes each tool's private /tmp and root tmpfs). When a
# large project fills it, go_test fails with "no space left on device": empty
# go_test's cache (not go's default one, which a plain `go clean -cache`
# would) through builtin "process":
#   toolbox processes run 'GOCACHE=$TMPDIR/go/cache go clean -cache'
# or raise tmp_size, then lock.
limits {
  tmp_size = "768MiB"
}

# Read a file, whole or a line range, two ways with identical args: a bash
# tool and a Go plugin (hashicorp/go-plugin over gRPC, built from
# plugins/examples/read_file with
#   go build -o toolboxes/default/plugins/ ./plugins/examples/...).
# The "read_file" capability below serves the model from the first one whose
# check passes. Both sandboxed: they read the workspace only, no network.
tool "read_file_sh" { path = "tools/read_file" }
plugin "read_file_go" { path = "plugins/read_file" }

# Walk a directory and stream one event per file (path, size, lines): a Go
# plugin of mode "stream" whose jsonl events are validated against its schema.
plugin "walk" { path = "plugins/walk" }

# List a directory, optionally several levels deep. Sandboxed like read_file.
tool "list_dir" {
  path = "tools/list_dir"
  # Operator policy (a binding): agents never list hidden entries, where
  # .env files and keys live. "all" leaves the schema the model sees, and
  # this value wins over anything a caller passes.
  bind "all" { value = false }
}

# Two searches with identical args; the "search" capability below picks one.
# search_rg needs ripgrep, and its check fails (with the fix) where rg is
# missing; search_grep needs only grep. Both sandboxed like read_file.
tool "search_rg" { path = "tools/search_rg" }
tool "search_grep" { path = "tools/search_grep" }

# Branch and porcelain status, and the unified diff, of the workspace's git
# repository. Sandboxed like read_file; they run git with optional locks
# off, so they write nothing to the repository.
tool "git_status" { path = "tools/git_status" }
tool "git_diff" { path = "tools/git_diff" }

# One binary, three tools: its describe document lists commands, so the
# lock holds git_history.log, git_history.show and git_history.blame (MCP
# clients see git_history_log, ...). `toolbox help git_history.blame` prints
# the tool's own longer help. Sandboxed like read_file.
tool "git_history" { path = "tools/git_history" }

# Fetch an http(s) URL. The one tool with network access; it reads no
# workspace files. curl gives up at 25 s; the operator's call timeout
# here stops the tool at 30 s whatever happens.
tool "fetch_url" {
  path    = "tools/fetch_url"
  timeout = "30s"
}

# What the model sees as "read_file": the bash tool when its check passes,
# else the plugin. `toolbox run read_file --backend read_file=read_file_go`
# runs the plugin for one call.
capability "read_file" {
  description = "Read a file of the workspace (the project directory), whole or a range of lines"
  backends    = ["read_file_sh", "read_file_go"]
  required    = true
}

# What the model sees as "search": the first backend whose check passes at
# lock time (ripgrep when installed, else grep). `toolbox check --probe`
# shows which one won and why; `toolbox run search --backend search=search_grep`
# overrides it for one call. required: check --probe exits 2 when neither works.
capability "search" {
  description = "Search the workspace's files for a regular expression"
  backends    = ["search_rg", "search_grep"]
  required    = true
  # ripgrep exits 2 on an error, e.g. a pattern its regex syntax refuses:
  # grep then gets a try, and the result says which backends were tried.
  fallback_on = [2]
}

# Follow a file of the workspace and report the lines matching a pattern as
# events: a service tool, run by the daemon (`toolbox serve`). Start it with
#   toolbox start watch_log --args '{"path":"app.log","pattern":"ERROR"}'
# then change the pattern, pause or resume with `toolbox send`, and read the
# matches with `toolbox inbox`. Sandboxed like read_file.
tool "watch_log" { path = "tools/watch_log" }

# Run Go tests (go test -json) and stream one event per test result, then a
# summary: a stream tool. Sandboxed like a shell command below: the workspace
# read-write, the system (and the Go toolchain under /usr) read-only, no
# network; Go's build and module caches live in the toolbox's shared tmp,
# never the operator's own (a test could plant objects there that the
# operator's next build links). Modules are never downloaded: dependencies
# must be vendored, or already in that cache. Needs bubblewrap (net "none").
# A whole suite can take minutes; the operator's call timeout stops it at 15.
tool "go_test" {
  path    = "tools/go_test"
  timeout = "15m"
}

# Background shell commands for agents (toolbox processes run, and the MCP
# tools process_run / process_status / process_kill), each run as `bash -c`
# inside this sandbox, as Codex confines its shell by default: the workspace
# readable and writable (commands start there), the system directories
# readable, nothing else of the machine, no network, the toolbox's shared
# /tmp, and only PATH, locale and the like of the caller's environment.
# This toolbox's own files, when it is kept inside the workspace, stay
# read-only to them. net "none" needs bubblewrap, as the tools above do.
# Remove this block for an agent that must only use the tools above. For an
# unconfined shell (as the user of `toolbox serve` or `toolbox mcp`, with
# the caller's environment and network), replace the sandbox block with
#   unconfined = true
builtin "process" {
  sandbox {
    fs {
      read  = ["{workspace}"]
      write = ["{workspace}"]
    }
    net = "none"
    tmp = "shared"
  }
}
