package sandbox

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// The exposure report is the start's own layout, not a second guess: under
// bwrap every path Explain says the tool writes is a read-write mount of
// the started tool, every path it reads and every masked protected path a
// read-only one, and the hidden state dir an empty tmpfs (read from the
// tool's /proc/self/mountinfo); under landlock the started tool writes
// exactly where Explain says and reads the protected files it calls
// read-only. A change in the start that Explain missed fails here.
func TestExplainIsWhatStartGives(t *testing.T) {
	t.Run("bwrap", func(t *testing.T) {
		requireMechanism(t, Bwrap)
		tb := newToolboxTree(t)
		spec := tb.guardedSpec(Bwrap)
		spec.Read = append(spec.Read, tb.Out)
		e, err := Explain(spec, Command{Path: "/bin/sh"}, ExplainOptions{Home: tb.Base})
		must(t, err)
		r := runSh(t, spec, `cat /proc/self/mountinfo`)
		if r.code != 0 {
			t.Fatalf("mountinfo: %d %s", r.code, r.stderr)
		}
		mounts := map[string]string{} // mount point → "rw" or "ro", the last mount wins
		fstype := map[string]string{}
		for _, l := range strings.Split(r.stdout, "\n") {
			f := strings.Fields(l)
			if len(f) < 10 {
				continue
			}
			opts := strings.Split(f[5], ",")
			mounts[f[4]] = opts[0]
			if i := slices.Index(f, "-"); i > 0 && i+1 < len(f) {
				fstype[f[4]] = f[i+1]
			}
		}
		want := func(inside, mode string) {
			t.Helper()
			if mounts[inside] != mode {
				t.Errorf("%s is mounted %q in the started tool, Explain implies %q", inside, mounts[inside], mode)
			}
		}
		for _, w := range e.Write {
			want(w.Inside, "rw")
		}
		for _, rd := range e.Read {
			want(rd.Inside, "ro")
		}
		masked := 0
		for _, p := range e.Protected {
			switch p.How {
			case ProtectedMasked:
				masked++
				want(p.Mask, "ro")
			case ProtectedHidden:
				masked++
				want(p.Mask, "ro")
				if fstype[p.Inside] != "tmpfs" {
					t.Errorf("hidden %s is a %q mount, want tmpfs", p.Inside, fstype[p.Inside])
				}
			}
		}
		if masked != 4 { // the lock, the toolbox file, the binary, the state dir
			t.Errorf("%d protected paths masked, want 4: %+v", masked, e.Protected)
		}
		if e.Tmp.Kind != "private" || mounts["/tmp"] != "rw" || fstype["/tmp"] != "tmpfs" {
			t.Errorf("tmp %+v, mounted %q %q", e.Tmp, mounts["/tmp"], fstype["/tmp"])
		}
		if e.Verdict.Level != LevelPartial || e.Verdict.Reasons[0].ID != ReasonNetHost {
			t.Errorf("verdict %+v, want partial for net host", e.Verdict)
		}
	})
	t.Run("landlock", func(t *testing.T) {
		requireMechanism(t, Landlock)
		tr := newTree(t)
		lock := tr.In + "/toolbox.lock.json"
		must(t, os.WriteFile(lock, []byte("{}\n"), 0o644))
		spec := tr.spec(Landlock)
		spec.Protected = []string{lock}
		e, err := Explain(spec, Command{Path: "/bin/sh"}, ExplainOptions{Home: tr.Base})
		must(t, err)
		if len(e.Write) != 1 || e.Write[0].Path != tr.Work || e.Write[0].Inside != tr.Work {
			t.Fatalf("write %+v, want %s", e.Write, tr.Work)
		}
		i := slices.IndexFunc(e.Protected, func(p ProtectedExposure) bool { return p.Path == lock })
		if i < 0 || e.Protected[i].How != ProtectedReadOnly {
			t.Fatalf("protected %+v, want %s read-only", e.Protected, lock)
		}
		r := runSh(t, spec, `echo x > "$WORK/new" && cat "$LOCK" && ! echo x >> "$LOCK" 2>/dev/null && ! cat "$OUT/secret.txt" 2>/dev/null && echo ok`,
			append(tr.env(), "LOCK="+lock)...)
		if r.code != 0 || !strings.HasSuffix(r.stdout, "ok\n") {
			t.Errorf("the started tool: exit %d, %q %q", r.code, r.stdout, r.stderr)
		}
	})
}

// Explain refuses what Start refuses, with the same *RefusalError: the
// report never shows a confinement that no run would get.
func TestExplainRefusesWhatStartRefuses(t *testing.T) {
	requireMechanism(t, Bwrap)
	requireMechanism(t, Landlock)
	tb := newToolboxTree(t)
	cases := map[string]*Spec{
		"landlock net none":        {Mechanism: Landlock, NetNone: true},
		"landlock write over lock": tb.guardedSpec(Landlock),
		"missing path":             pin(&Spec{Mechanism: Bwrap, Read: []string{tb.Base + "/nowhere"}}),
		"grant inside state":       pin(&Spec{Mechanism: Bwrap, Read: []string{tb.State}, Hidden: []string{tb.State}}),
	}
	if os.Geteuid() == 0 {
		cases["landlock unix sockets as root"] = &Spec{Mechanism: Landlock, UnixSockets: true}
	}
	for name, spec := range cases {
		t.Run(name, func(t *testing.T) {
			_, xerr := Explain(spec, Command{Path: "/bin/true"}, ExplainOptions{})
			_, serr := Start(spec, Command{Path: "/bin/true"})
			var xr, sr *RefusalError
			if !errors.As(xerr, &xr) || !errors.As(serr, &sr) || xr.Field != sr.Field || xr.Reason != sr.Reason {
				t.Errorf("Explain: %v\nStart:   %v\nwant the same refusal", xerr, serr)
			}
		})
	}
	// Twin: what Start runs, Explain explains.
	if _, err := Explain(tb.guardedSpec(Bwrap), Command{Path: "/bin/true"}, ExplainOptions{}); err != nil {
		t.Errorf("bwrap with masks: %v", err)
	}
}

// The verdict's scale: unconfined is exposed; a sandboxed tool with the
// network, or writing outside the toolbox's directory, is partial;
// otherwise confined.
func TestExplainVerdict(t *testing.T) {
	requireMechanism(t, Bwrap)
	tr := newTree(t)
	home := tr.Base
	e, err := Explain(nil, Command{Path: "/bin/true"}, ExplainOptions{Home: home})
	must(t, err)
	if e.Verdict.Level != LevelExposed || e.Verdict.Reasons[0].ID != ReasonUnconfined {
		t.Errorf("none: %+v", e.Verdict)
	}
	spec := tr.spec(Bwrap)
	spec.NetNone = true
	if e, err = Explain(spec, Command{Path: "/bin/true"}, ExplainOptions{Home: home}); err != nil || e.Verdict.Level != LevelConfined {
		t.Errorf("bwrap net none inside home: %+v, %v", e, err)
	}
	if e, err = Explain(spec, Command{Path: "/bin/true"}, ExplainOptions{Home: tr.In}); err != nil || e.Verdict.Level != LevelPartial || e.Verdict.Reasons[0].ID != ReasonWritesOutside {
		t.Errorf("bwrap writing outside home: %+v, %v", e, err)
	}
	if e, err = Explain(spec, Command{Path: "/bin/true"}, ExplainOptions{Home: tr.In, Scratch: []string{tr.Work}}); err != nil || e.Verdict.Level != LevelConfined {
		t.Errorf("bwrap writing only scratch: %+v, %v", e, err)
	}
	// Writing the workspace it works on keeps a tool confined, and the
	// verdict says so; a workspace elsewhere does not cover the write.
	if e, err = Explain(spec, Command{Path: "/bin/true"}, ExplainOptions{Home: tr.In, Workspace: tr.Work}); err != nil || e.Verdict.Level != LevelConfined ||
		len(e.Verdict.Reasons) != 1 || e.Verdict.Reasons[0].ID != ReasonWritesWorkspace || !strings.Contains(e.Verdict.Reasons[0].Text, tr.Work) {
		t.Errorf("bwrap writing the workspace: %+v, %v", e, err)
	}
	if e, err = Explain(spec, Command{Path: "/bin/true"}, ExplainOptions{Home: tr.In, Workspace: tr.Out}); err != nil || e.Verdict.Level != LevelPartial ||
		e.Verdict.Reasons[0].ID != ReasonWritesOutside || !strings.Contains(e.Verdict.Reasons[0].Text, "and the workspace "+tr.Out) {
		t.Errorf("bwrap writing outside home and workspace: %+v, %v", e, err)
	}
}
