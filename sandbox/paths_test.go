package sandbox

import (
	"os"
	"strings"
	"testing"
)

// Issue 10 #9: declared paths were resolved again at every run, so a
// declared directory swapped for a symlink to /root after the lock
// exposed /root. Now the lock's resolution (Spec.Resolved) is opened
// without following any symlink: the swap is refused. Twin: a path that
// was a link at lock time keeps leading where it led then, even when the
// link is pointed elsewhere later.
func TestDeclaredPathSwappedAfterLock(t *testing.T) {
	target := "/root"
	if _, err := os.Stat(target); err != nil {
		target = "/etc"
	}
	for _, m := range sandboxed {
		t.Run(string(m), func(t *testing.T) {
			requireMechanism(t, m)
			tr := newTree(t)
			data := tr.Base + "/data"
			must(t, os.Mkdir(data, 0o755))
			must(t, os.WriteFile(data+"/f", []byte("data\n"), 0o644))
			locked := map[string]string{data: data} // what the lock recorded
			spec := pin(tr.spec(m))
			spec.Read, spec.Resolved = append(spec.Read, data), locked
			r := runSh(t, spec, `cat "$D/f"`, "D="+data)
			if r.stdout != "data\n" {
				t.Fatalf("before the swap: %q, %q", r.stdout, r.stderr)
			}
			must(t, os.Rename(data, data+".old"))
			must(t, os.Symlink(target, data))
			spec = pin(tr.spec(m))
			spec.Read, spec.Resolved = append(spec.Read, data), locked
			_, err := Start(spec, Command{Path: "/bin/ls", Args: []string{data}})
			if rf := wantRefusal(t, err, FieldRead); !strings.Contains(rf.Reason, "changed since the lock") || !strings.Contains(rf.Fix, "toolbox lock") {
				t.Fatalf("refusal %+v", rf)
			}
			// Twin: the lock recorded a link's target; the link moves on.
			link := tr.Base + "/link"
			must(t, os.Symlink(data+".old", link))
			spec = pin(tr.spec(m))
			spec.Read, spec.Resolved = append(spec.Read, link), map[string]string{link: data + ".old"}
			must(t, os.Remove(link))
			must(t, os.Symlink(tr.Out, link))
			// bwrap shows it at the declared path; landlock grants the
			// target itself, at its own path.
			r = runSh(t, spec, `cat "$D/f" 2>/dev/null || cat "$O/f"; cat "$D/secret.txt"`, "D="+link, "O="+data+".old")
			if r.stdout != "data\n" {
				t.Fatalf("a locked link's target: exit %d, %q, %q", r.code, r.stdout, r.stderr)
			}
		})
	}
}
