package sandbox

import (
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/testenv"
)

func TestLookupIdentity(t *testing.T) {
	if _, err := LookupIdentity("nobody", ""); err != nil {
		testenv.Unavailable(t, "no nobody user here: %v", err)
	}
	cases := []struct {
		user, group string
		want        Identity
	}{
		{"nobody", "", Identity{UID: 65534, GID: 65534}},
		{"65534", "", Identity{UID: 65534, GID: 65534}},
		{"nobody", "0", Identity{UID: 65534, GID: 0}},
		{"424242", "424243", Identity{UID: 424242, GID: 424243}},
		{"root", "", Identity{UID: 0, GID: 0}},
	}
	for _, c := range cases {
		id, err := LookupIdentity(c.user, c.group)
		if err != nil {
			t.Errorf("%q/%q: %v", c.user, c.group, err)
			continue
		}
		if id.UID != c.want.UID || id.GID != c.want.GID || !slices.Contains(id.Groups, id.GID) {
			t.Errorf("%q/%q = %+v, want uid %d gid %d with the gid among the groups", c.user, c.group, id, c.want.UID, c.want.GID)
		}
	}
	refused := []struct{ user, group, field string }{
		{"", "", FieldUser},
		{"no-such-user-toolbox", "", FieldUser},
		{"nobody", "no-such-group-toolbox", FieldGroup},
		{"424242", "", FieldGroup}, // no database entry: the group must be given
	}
	for _, c := range refused {
		_, err := LookupIdentity(c.user, c.group)
		if r := wantRefusal(t, err, c.field); !strings.Contains(r.Error(), c.field) {
			t.Errorf("%q/%q: message %q does not name %s", c.user, c.group, r.Error(), c.field)
		}
	}
}

// run_as makes the tool a real other user: files it creates are owned by
// that user on the host, under every mechanism. Twin: without run_as they
// are root's.
func TestRunAsOwnsCreatedFiles(t *testing.T) {
	requireRoot(t)
	nobody, err := LookupIdentity("nobody", "")
	if err != nil {
		testenv.Unavailable(t, "no nobody user: %v", err)
	}
	for _, m := range []Mechanism{None, Bwrap, Landlock} {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			if m == Bwrap && !Detect().BwrapRunAs {
				testenv.Need(t, false, "bwrap as another user", Detect().BwrapRunAsReason)
			}
			tr := newTree(t)
			spec := tr.spec(m)
			spec.RunAs = nobody
			r := runSh(t, spec, `id -u; id -g; echo x > "$WORK/mine"`, tr.env()...)
			if r.code != 0 || r.stdout != "65534\n65534\n" {
				t.Fatalf("as nobody: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			if uid, gid := owner(t, tr.Work+"/mine"); uid != 65534 || gid != 65534 {
				t.Fatalf("file owned by %d:%d, want 65534:65534", uid, gid)
			}
			// nobody cannot write what only root may, even where the
			// sandbox would allow it.
			must(t, os.Chmod(tr.Work+"/b.txt", 0o644))
			if r := runSh(t, spec, `echo x >> "$WORK/b.txt"`, tr.env()...); r.code == 0 {
				t.Fatal("nobody appended to a file only root may write")
			}
			spec.RunAs = nil
			runSh(t, spec, `echo x > "$WORK/roots"`, tr.env()...)
			if uid, _ := owner(t, tr.Work+"/roots"); uid != 0 {
				t.Fatalf("without run_as the file is owned by %d", uid)
			}
		})
	}
}

func owner(t *testing.T, path string) (uint32, uint32) {
	t.Helper()
	fi, err := os.Stat(path)
	must(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid
}
