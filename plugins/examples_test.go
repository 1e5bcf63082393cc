package plugins_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/toolbox-dev/toolbox/plugins"
	"github.com/toolbox-dev/toolbox/protocol/validate"
)

var examples struct {
	once sync.Once
	dir  string
	err  error
}

// exampleBinary builds the example plugins once per test binary and
// returns the path of the one named name.
func exampleBinary(t *testing.T, name string) string {
	t.Helper()
	examples.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		examples.dir, examples.err = os.MkdirTemp("", "plugins-examples")
		if examples.err != nil {
			return
		}
		out, err := exec.Command(goBin, "build", "-o", examples.dir+string(filepath.Separator), "./examples/read_file", "./examples/walk").CombinedOutput()
		if err != nil {
			examples.err = &buildError{err: err, out: string(out)}
		}
	})
	if examples.err != nil {
		t.Fatalf("building the example plugins: %v", examples.err)
	}
	return filepath.Join(examples.dir, name)
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

func removeExamples() {
	if examples.dir != "" {
		os.RemoveAll(examples.dir)
	}
}

func startExample(t *testing.T, name, dir string) *plugins.Client {
	t.Helper()
	bin := exampleBinary(t, name) // the first call builds: before the deadline starts
	c, err := plugins.Options{Dir: dir}.Start(ctxT(t), bin, nil, nil)
	if err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() { closeAndCheck(t, c) })
	return c
}

func TestReadFilePlugin(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startExample(t, "read_file", dir)
	ctx := ctxT(t)
	d, _, err := c.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.Slug != "read_file" || len(d.Args) != 3 || d.Mode() != "oneshot" {
		t.Errorf("describe: %+v", d)
	}
	if cr, err := c.Check(ctx); err != nil || !cr.OK {
		t.Errorf("check: %+v, %v", cr, err)
	}
	var out collect
	res, err := c.Run(ctx, map[string]any{"path": "f.txt", "start": 2, "end": 3}, out.add)
	if err != nil || res.ExitCode != 0 || string(out.chunks) != "two\nthree\n" {
		t.Errorf("run: %+v, %v, %q", res, err, out.chunks)
	}
	res, err = c.Run(ctx, map[string]any{"path": "nope"}, nil)
	if err != nil || res.ExitCode != 1 || res.Error != `no such file: "nope"` {
		t.Errorf("run on a missing file: %+v, %v", res, err)
	}
}

func TestWalkPlugin(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"a.go": "package a\n", "sub/b.txt": "x\ny"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := startExample(t, "walk", dir)
	ctx := ctxT(t)
	d, _, err := c.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.Mode() != "stream" || d.Framing() != "jsonl" {
		t.Fatalf("walk is not a jsonl stream: %+v", d.Process)
	}
	v, err := validate.CompileEventSchema(d.Process.Output.Event)
	if err != nil {
		t.Fatal(err)
	}
	var out collect
	res, err := c.Run(ctx, map[string]any{"path": "."}, out.add)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %+v, %v", res, err)
	}
	for _, ev := range out.events {
		if _, err := v.Validate([]byte(ev)); err != nil {
			t.Errorf("event %s: %v", ev, err)
		}
	}
	want := `{"path":"a.go","size":10,"lines":1} {"path":"sub/b.txt","size":3,"lines":2}`
	if got := strings.Join(out.events, " "); got != want || len(out.chunks) != 0 {
		t.Errorf("events %s\nwant %s", got, want)
	}
}
