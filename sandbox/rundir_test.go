package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Issue 10 #8: the rundir was created (MkdirAll) and chowned to the run_as
// user by toolbox, as root on the host, through a symlink planted on its
// path, before the sandbox check. Now it is created from the declared
// path's descriptor without following any link, and given to run_as only
// inside a writable grant. Twins: a missing rundir is created and given
// to run_as; one in a read-only grant is created but stays toolbox's.
func TestRundirFollowsNoSymlink(t *testing.T) {
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			tr := newTree(t)
			victim := tr.Out + "/victim"
			must(t, os.Mkdir(victim, 0o700))
			must(t, os.Symlink(victim, tr.Work+"/run"))
			spec := pin(tr.spec(m))
			spec.RunAs = &Identity{UID: 65534, GID: 65534, Groups: []uint32{65534}}
			err := spec.MakeRundir(tr.Work + "/run/sub")
			if r := wantRefusal(t, err, FieldRundir); !strings.Contains(r.Reason, "symlink") {
				t.Fatalf("reason %q", r.Reason)
			}
			err = spec.MakeRundir(tr.Work + "/run")
			wantRefusal(t, err, FieldRundir)
			if ents, _ := os.ReadDir(victim); len(ents) != 0 {
				t.Fatalf("created %v in the link's target", ents)
			}
			if ownerOf(t, victim) != uint32(os.Geteuid()) {
				t.Fatal("the link's target changed owner")
			}
			// Outside every declared path: refused, nothing created.
			err = spec.MakeRundir(tr.Out + "/elsewhere")
			wantRefusal(t, err, FieldRundir)
			if _, err := os.Stat(tr.Out + "/elsewhere"); err == nil {
				t.Fatal("a rundir outside the sandbox was created")
			}
			// The twins.
			must(t, spec.MakeRundir(tr.Work+"/fresh/deeper"))
			if os.Geteuid() == 0 && ownerOf(t, tr.Work+"/fresh/deeper") != 65534 {
				t.Fatal("the rundir was not given to run_as")
			}
			must(t, spec.MakeRundir(tr.In+"/ro"))
			if ownerOf(t, tr.In+"/ro") != uint32(os.Geteuid()) {
				t.Fatal("a rundir in a read-only grant was chowned")
			}
			must(t, spec.MakeRundir(tr.Work+"/fresh/deeper")) // exists: fine
		})
	}
}

// Under None the part shared with the tool's directory is the operator's
// (a home directory reached through a link works); below it a planted
// link is refused, not followed.
func TestRundirUnderNone(t *testing.T) {
	tr := newTree(t)
	must(t, os.Symlink(tr.Base, tr.Base+"/../"+filepath.Base(tr.Base)+"-alias"))
	alias := tr.Base + "-alias"
	t.Cleanup(func() { os.Remove(alias) })
	spec := &Spec{Mechanism: None, ToolDir: alias + "/tool"}
	must(t, spec.MakeRundir(alias+"/work/a/b"))
	if st, err := os.Stat(tr.Work + "/a/b"); err != nil || !st.IsDir() {
		t.Fatalf("rundir through the operator's link: %v", err)
	}
	must(t, os.Symlink(tr.Out, tr.Work+"/planted"))
	err := spec.MakeRundir(alias + "/work/planted/x")
	wantRefusal(t, err, FieldRundir)
	if _, serr := os.Stat(tr.Out + "/x"); serr == nil {
		t.Fatal("followed a planted link")
	}
}

func ownerOf(t *testing.T, p string) uint32 {
	t.Helper()
	st, err := os.Stat(p)
	must(t, err)
	return st.Sys().(*syscall.Stat_t).Uid
}
