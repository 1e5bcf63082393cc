package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/plugins/sdk"
)

// execTwin is the exec tool this plugin must match, relative to this
// directory.
var execTwin = filepath.Join("..", "..", "..", "toolboxes", "default", "tools", "read_file")

// fixture makes the files every case reads, in a temporary directory that
// becomes the working directory.
func fixture(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"three":   "a\nb\nc",    // no newline at the end
		"two":     "one\ntwo\n", // with one
		"empty":   "",
		"binary":  "ab\x00cd\n",
		"crlf":    "x\r\ny\r\n",
		"blanks":  "\n\n\n",
		"unicode": "é\nü\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
}

type call struct {
	args     string
	out      string
	code     int
	errorHas string
}

var calls = []call{
	{args: `{"path": "three"}`, out: "a\nb\nc"},
	{args: `{"path": "three", "start": 2}`, out: "b\nc"},
	{args: `{"path": "three", "start": 2, "end": 2}`, out: "b\n"},
	{args: `{"path": "three", "end": 1}`, out: "a\n"},
	{args: `{"path": "three", "end": 99}`, out: "a\nb\nc"},
	{args: `{"path": "three", "start": 3, "end": 3}`, out: "c"},
	{args: `{"path": "two", "start": 2}`, out: "two\n"},
	{args: `{"path": "crlf", "start": 2}`, out: "y\r\n"},
	{args: `{"path": "blanks", "start": 2, "end": 3}`, out: "\n\n"},
	{args: `{"path": "unicode", "end": 1}`, out: "é\n"},
	{args: `{"path": "empty"}`, out: ""},
	{args: `{"path": "empty", "start": 5}`, out: ""},
	{args: `{"path": "three", "start": 4}`, code: 1, errorHas: `start (4) is past the end of "three" (3 lines)`},
	{args: `{"path": "three", "start": 3, "end": 2}`, code: 2, errorHas: "end (2) is before start (3)"},
	{args: `{"path": "three", "start": 0}`, code: 2, errorHas: "start must be at least 1"},
	{args: `{"path": "missing"}`, code: 1, errorHas: `no such file: "missing"`},
	{args: `{"path": "sub"}`, code: 1, errorHas: `"sub" is a directory: use list_dir`},
	{args: `{"path": "binary"}`, code: 1, errorHas: `"binary" is a binary file (6 bytes)`},
	{args: `{"path": ""}`, code: 2, errorHas: "path is empty"},
}

func TestRun(t *testing.T) {
	fixture(t)
	for _, c := range calls {
		var out sdk.Recorder
		res, err := sdk.Invoke(context.Background(), readFile{}, "", []byte(c.args), &out)
		if err != nil {
			t.Errorf("%s: refused: %v", c.args, err)
			continue
		}
		if res.ExitCode != c.code || out.Output.String() != c.out || !strings.Contains(res.Error, c.errorHas) {
			t.Errorf("%s: exit %d, error %q, output %q\nwant exit %d, error with %q, output %q",
				c.args, res.ExitCode, res.Error, out.Output.String(), c.code, c.errorHas, c.out)
		}
	}
}

func TestLongLines(t *testing.T) {
	fixture(t)
	long := strings.Repeat("x", 200<<10) + "\n"
	if err := os.WriteFile("long", []byte(long+long+"end\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out sdk.Recorder
	res, _ := sdk.Invoke(context.Background(), readFile{}, "", []byte(`{"path": "long", "start": 2}`), &out)
	if res.ExitCode != 0 || out.Output.String() != long+"end\n" {
		t.Errorf("exit %d, %d bytes", res.ExitCode, out.Output.Len())
	}
}

// Both tools give the same output and exit code for every call.
func TestSameResultsAsTheExecTool(t *testing.T) {
	twin := execPath(t)
	fixture(t)
	for _, c := range calls {
		var values map[string]any
		if err := json.Unmarshal([]byte(c.args), &values); err != nil {
			t.Fatal(err)
		}
		argv := []string{"run", values["path"].(string)}
		for _, name := range []string{"start", "end"} {
			if v, ok := values[name]; ok {
				argv = append(argv, "--"+name+"="+strconv.Itoa(int(v.(float64))))
			}
		}
		cmd := exec.Command(twin, argv...)
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code || stdout.String() != c.out {
			t.Errorf("exec tool %v: exit %d, output %q; the plugin gives exit %d, output %q", argv, code, stdout.String(), c.code, c.out)
		}
	}
}

func execPath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(execTwin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no exec twin: %v", err)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not found")
	}
	return p
}
