package manifest

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestLockPath(t *testing.T) {
	for in, want := range map[string]string{
		"toolbox.hcl":          "toolbox.lock.json",
		"dir/x.hcl":            "dir/x.lock.json",
		"/etc/toolbox/dev.hcl": "/etc/toolbox/dev.lock.json",
		"a.b.hcl":              "a.b.lock.json",
		"toolbox.HCL":          "toolbox.HCL.lock.json",
		"toolbox":              "toolbox.lock.json",
		"x.toolbox":            "x.toolbox.lock.json",
		"dir/.hcl":             "dir/.hcl.lock.json",
	} {
		if got := LockPath(in); got != want {
			t.Errorf("LockPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPlatform(t *testing.T) {
	if got, want := Platform(), runtime.GOOS+"/"+runtime.GOARCH; got != want {
		t.Errorf("Platform() = %q, want %q", got, want)
	}
}

// tempFiles lists what Write may have left behind in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			left = append(left, e.Name())
		}
	}
	return left
}

func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "toolbox.lock.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := testLock()
	if err := Write(path, l); err != nil {
		t.Fatalf("Write: %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, mustMarshal(t, l)) {
		t.Errorf("file holds something other than Marshal's output")
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want 0644", info.Mode().Perm())
	}
	if left := tempFiles(t, dir); left != nil {
		t.Errorf("temporary files left: %q", left)
	}
	back, err := Read(path)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if !bytes.Equal(mustMarshal(t, back), data) {
		t.Errorf("Read then Marshal differs from the file")
	}
}

func TestWriteRelativePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := Write("toolbox.lock.json", testLock()); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if _, err := Read("toolbox.lock.json"); err != nil {
		t.Fatalf("Read: %v", err)
	}
}

func TestReadMissing(t *testing.T) {
	_, err := Read(filepath.Join(t.TempDir(), "toolbox.lock.json"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Read of a missing file = %v, want fs.ErrNotExist", err)
	}
}

func TestReadNamesThePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolbox.lock.json")
	if err := os.WriteFile(path, []byte(`{`+versionKey(FormatVersion)+`, "bogus": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Read(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `unknown field "bogus"`) {
		t.Fatalf("Read error = %v, want the path and the unknown field", err)
	}
}

// A failed write leaves the old file (here a directory in its place) as it
// was and no temporary file behind.
func TestWriteFailureLeavesOldIntact(t *testing.T) {
	t.Run("target is a directory", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "toolbox.lock.json")
		if err := os.MkdirAll(filepath.Join(path, "inside"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := Write(path, testLock()); err == nil {
			t.Fatal("Write over a directory succeeded")
		}
		if _, err := os.Stat(filepath.Join(path, "inside")); err != nil {
			t.Errorf("the directory was disturbed: %v", err)
		}
		if left := tempFiles(t, dir); left != nil {
			t.Errorf("temporary files left: %q", left)
		}
	})
	t.Run("invalid lock", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "toolbox.lock.json")
		old := mustMarshal(t, testLock())
		if err := os.WriteFile(path, old, 0o644); err != nil {
			t.Fatal(err)
		}
		bad := testLock()
		bad.Sandbox = "chroot"
		if err := Write(path, bad); err == nil || !strings.Contains(err.Error(), `sandbox is "chroot"`) {
			t.Fatalf("Write of an invalid lock = %v", err)
		}
		if data, _ := os.ReadFile(path); !bytes.Equal(data, old) {
			t.Errorf("old lock changed")
		}
		if left := tempFiles(t, dir); left != nil {
			t.Errorf("temporary files left: %q", left)
		}
	})
	t.Run("directory missing", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "nope", "toolbox.lock.json")
		if err := Write(path, testLock()); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Write into a missing directory = %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("read-only directory", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root writes into read-only directories; TestWriteThatFailsHalfWayLeavesTheOldLock covers root")
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "toolbox.lock.json")
		old := mustMarshal(t, testLock())
		if err := os.WriteFile(path, old, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
		l := testLock()
		l.Sandbox = "none"
		if err := Write(path, l); err == nil {
			t.Fatal("Write into a read-only directory succeeded")
		}
		if data, _ := os.ReadFile(path); !bytes.Equal(data, old) {
			t.Errorf("old lock changed")
		}
	})
}

func TestHashFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := HashFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// SHA-256("abc") from FIPS 180-2, appendix B.1.
	if want := "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Errorf("HashFile = %s, want %s", got, want)
	}
	if _, err := HashFile(path + ".missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("HashFile of a missing file = %v, want fs.ErrNotExist", err)
	}
}
