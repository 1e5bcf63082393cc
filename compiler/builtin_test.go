package compiler

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// loadProcess loads a toolbox file holding body as its builtin "process".
func loadProcess(t *testing.T, body string) *Config {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "toolbox.hcl")
	if err := os.WriteFile(path, []byte("builtin \"process\" {\n"+body+"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

const confinedBody = `sandbox {
  fs {
    read  = ["./src/../src"]
    write = ["src"]
  }
  net = "none"
}`

// TestResolveProcess: the lock records how background commands run: the
// mechanism auto chose and the paths, cleaned and relative to the lock;
// unconfined only when declared; a sandbox is refused, naming the field
// and the fix, under "none" and where the mechanism cannot honour it.
func TestResolveProcess(t *testing.T) {
	pb, err := resolveProcess(loadProcess(t, "unconfined = true"), "auto")
	if err != nil || !pb.Unconfined || pb.Mechanism != "none" || pb.Sandbox != nil {
		t.Errorf("unconfined: %+v, %v", pb, err)
	}

	cfg := loadProcess(t, confinedBody)
	_, err = resolveProcess(cfg, "none")
	var d *Diagnostic
	if !errors.As(err, &d) || !strings.Contains(d.Msg, `sets sandbox = "none" but builtin "process" declares a sandbox`) || !strings.Contains(d.Fix, "unconfined = true") || d.Line != 1 {
		t.Errorf("a sandbox under none: %v", err)
	}
	_, err = resolveProcess(cfg, "landlock")
	var r *sandbox.RefusalError
	if !errors.As(err, &r) || r.Field != "sandbox.net" || !strings.Contains(err.Error(), `builtin "process"`) {
		t.Errorf("net none under landlock: %v, want a refusal of sandbox.net", err)
	}

	support := sandbox.Detect()
	testenv.Need(t, support.Bwrap, "bwrap", support.BwrapReason)
	pb, err = resolveProcess(cfg, "auto")
	if err != nil {
		t.Fatal(err)
	}
	sb := pb.Sandbox
	if pb.Unconfined || pb.Mechanism != "bwrap" || sb.Net != "none" || sb.Tmp != "shared" ||
		strings.Join(sb.FS.Read, ",") != "src" || strings.Join(sb.FS.Write, ",") != "src" {
		t.Errorf("auto with net none: %+v %+v", pb, sb.FS)
	}
}
