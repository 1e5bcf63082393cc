package runspec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// writeFiles creates name -> content files under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func ptr(s string) *string { return &s }

func TestReadEnvdir(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"PLAIN":         "value",
		"NEWLINE":       "value\n",
		"FIRST_LINE":    "first\nsecond\n",
		"TRAILING":      "value \t \t\nnext",
		"LEADING":       "  value",
		"INNER":         "a \t b",
		"NUL":           "a\x00b\x00",
		"NUL_THEN_TRIM": "a\x00 \t",
		"EMPTY":         "",
		"ONLY_NEWLINE":  "\n",
		"ONLY_SPACES":   "   \n",
		"CRLF":          "value\r\n",
		".hidden":       "skipped",
		"sub/INNER_VAR": "ignored",
		"lower-case.x":  "any name without = is fine",
	})
	if err := os.Symlink(filepath.Join(dir, "PLAIN"), filepath.Join(dir, "LINKED")); err != nil {
		t.Fatal(err)
	}
	got, err := ReadEnvdir(dir)
	if err != nil {
		t.Fatalf("ReadEnvdir: %v", err)
	}
	want := map[string]*string{
		"PLAIN":         ptr("value"),
		"NEWLINE":       ptr("value"),
		"FIRST_LINE":    ptr("first"),
		"TRAILING":      ptr("value"),
		"LEADING":       ptr("  value"),
		"INNER":         ptr("a \t b"),
		"NUL":           ptr("a\nb\n"),
		"NUL_THEN_TRIM": ptr("a\n"),
		"EMPTY":         nil,
		"ONLY_NEWLINE":  ptr(""),
		"ONLY_SPACES":   ptr(""),
		"CRLF":          ptr("value\r"),
		"lower-case.x":  ptr("any name without = is fine"),
		"LINKED":        ptr("value"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadEnvdir:\n got %s\nwant %s", show(got), show(want))
	}
}

func show(m map[string]*string) string {
	var b strings.Builder
	for k, v := range m {
		if v == nil {
			b.WriteString(k + "=<unset> ")
		} else {
			b.WriteString(k + "=" + *v + " ")
		}
	}
	return b.String()
}

func TestReadEnvdirErrors(t *testing.T) {
	t.Run("missing", func(t *testing.T) {
		_, err := ReadEnvdir(filepath.Join(t.TempDir(), "nope"))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err = %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("name with =", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"A=B": "x", "OK": "y"})
		_, err := ReadEnvdir(dir)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "A=B")) {
			t.Fatalf("err = %v, want one naming the file", err)
		}
	})
	t.Run("dangling link", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "VAR")); err != nil {
			t.Fatal(err)
		}
		_, err := ReadEnvdir(dir)
		if err == nil || !strings.Contains(err.Error(), "VAR") {
			t.Fatalf("err = %v, want one naming the link", err)
		}
	})
	t.Run("fifo", func(t *testing.T) {
		dir := t.TempDir()
		if err := syscall.Mkfifo(filepath.Join(dir, "PIPE"), 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		_, err := ReadEnvdir(dir)
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("err = %v, want a refusal of the FIFO", err)
		}
	})
	t.Run("not a directory", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"file": "x"})
		if _, err := ReadEnvdir(filepath.Join(dir, "file")); err == nil {
			t.Fatal("ReadEnvdir of a file succeeded")
		}
	})
}

func TestReadEnvdirLongValues(t *testing.T) {
	dir := t.TempDir()
	atLimit := strings.Repeat("x", MaxEnvdirValue)
	writeFiles(t, dir, map[string]string{
		"AT_LIMIT":       atLimit,
		"AT_LIMIT_NL":    atLimit + "\n" + strings.Repeat("y", 2*MaxEnvdirValue),
		"SHORT_THEN_BIG": "short\n" + strings.Repeat("y", 2*MaxEnvdirValue),
	})
	got, err := ReadEnvdir(dir)
	if err != nil {
		t.Fatalf("ReadEnvdir: %v", err)
	}
	if *got["AT_LIMIT"] != atLimit || *got["AT_LIMIT_NL"] != atLimit || *got["SHORT_THEN_BIG"] != "short" {
		t.Errorf("long values read wrongly")
	}
	writeFiles(t, dir, map[string]string{"TOO_LONG": atLimit + "x"})
	if _, err := ReadEnvdir(dir); err == nil || !strings.Contains(err.Error(), "TOO_LONG") {
		t.Fatalf("err = %v, want one naming TOO_LONG", err)
	}
}

// TestReadEnvdirBounds: an envdir of more entries than MaxEnvdirFiles, or
// whose values pass MaxEnvdirBytes in all, is refused naming the limit;
// one just within both is read.
func TestReadEnvdirBounds(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	value := strings.Repeat("v", MaxEnvdirBytes/MaxEnvdirFiles)
	for i := range MaxEnvdirFiles {
		files[fmt.Sprintf("V%04d", i)] = value
	}
	writeFiles(t, dir, files)
	if got, err := ReadEnvdir(dir); err != nil || len(got) != MaxEnvdirFiles {
		t.Fatalf("ReadEnvdir at the limits: %d vars, %v", len(got), err)
	}
	writeFiles(t, dir, map[string]string{"V9999": "x"})
	if _, err := ReadEnvdir(dir); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d entries", MaxEnvdirFiles)) {
		t.Errorf("too many files: %v", err)
	}

	dir = t.TempDir()
	big := strings.Repeat("x", MaxEnvdirValue)
	files = map[string]string{}
	for i := range MaxEnvdirBytes/MaxEnvdirValue + 1 {
		files[fmt.Sprintf("B%d", i)] = big
	}
	writeFiles(t, dir, files)
	if _, err := ReadEnvdir(dir); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("longer than %d bytes in all", MaxEnvdirBytes)) {
		t.Errorf("too many bytes: %v", err)
	}
}
