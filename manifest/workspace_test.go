package manifest

import "testing"

// A lock names the workspace only as the compiler writes it: declared
// paths with the token have no lock-time resolution (the workspace is
// chosen at each call), and a lock edited so that a path climbs above the
// workspace is refused before any run. Each attack beside its twin.
func TestLockWorkspaceUses(t *testing.T) {
	rg := func(l *Lock) *Tool { return l.Tools["search_rg"] }
	for _, tc := range []struct {
		name string
		edit func(l *Lock)
		want string // "" = valid
	}{
		{"workspace path twin", func(l *Lock) {
			rg(l).Describe.Runtime.Sandbox.FS.Write = []string{"{workspace}", "{workspace}/out"}
			rg(l).Describe.Runtime.Rundir = "{workspace}/src"
			rg(l).Runtime.Rundir = "{workspace}/src"
		}, ""},
		{"workspace pinned by the lock", func(l *Lock) {
			rg(l).Describe.Runtime.Sandbox.FS.Write = []string{"{workspace}"}
			rg(l).Runtime.Paths["{workspace}"] = "/home/u/proj"
		}, `tool "search_rg": runtime.paths holds "{workspace}", which the describe document does not declare as a path resolved at lock`},
		{"path above the workspace", func(l *Lock) {
			rg(l).Describe.Runtime.Sandbox.FS.Read = append(rg(l).Describe.Runtime.Sandbox.FS.Read, "{workspace}/..")
		}, `tool "search_rg": invalid use of {workspace}: path "{workspace}/.." has a ".." element`},
		{"rundir above the workspace", func(l *Lock) { rg(l).Runtime.Rundir = "{workspace}/../x" },
			`tool "search_rg": runtime.rundir: invalid use of {workspace}`},
		{"rundir not clean", func(l *Lock) { rg(l).Runtime.Rundir = "{workspace}/./x/" },
			`tool "search_rg": runtime.rundir is "{workspace}/./x/", want it clean: "{workspace}/x"`},
		{"process path above the workspace", func(l *Lock) {
			l.Process.Sandbox.FS.Write = []string{"{workspace}/.."}
		}, `builtin_process: invalid use of {workspace}`},
		{"process workspace twin", func(l *Lock) { l.Process.Sandbox.FS.Write = []string{"{workspace}"} }, ""},
		{"default workspace twin", func(l *Lock) { l.Workspace = "../proj" }, ""},
		{"default workspace naming itself", func(l *Lock) { l.Workspace = "{workspace}" },
			`workspace is "{workspace}": the default workspace cannot name the workspace`},
		{"default workspace not clean", func(l *Lock) { l.Workspace = "a/../b" },
			`workspace is "a/../b", want a clean slash path`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := testLock()
			tc.edit(l)
			wantLockProblem(t, l, tc.want)
		})
	}
}
