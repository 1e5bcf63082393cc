package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/plugins/sdk"
)

// tree makes a directory to walk and returns it.
func tree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"a.go":           "package a\n\nfunc A() {}\n",
		"b.txt":          "no newline",
		"empty":          "",
		"logo.png":       "\x89PNG\x00\x00",
		".env":           "SECRET=1\n",
		".git/HEAD":      "ref: refs/heads/main\n",
		".cache/x.go":    "package x\n",
		"sub/c.go":       "package c\n",
		"sub/deep/d.txt": "1\n2\n3\n4\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a.go", filepath.Join(dir, "link.go")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func invoke(t *testing.T, args map[string]any) (events []string, res int, errText string) {
	t.Helper()
	data, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	var out sdk.Recorder
	r, err := sdk.Invoke(context.Background(), walk{}, "", data, &out)
	if err != nil {
		t.Fatalf("Invoke(%s): %v", data, err)
	}
	for _, ev := range out.Events {
		if err := checkEvent(ev); err != nil {
			t.Errorf("event %s does not match the declared schema: %v", ev, err)
		}
		events = append(events, string(ev))
	}
	return events, r.ExitCode, r.Error
}

func TestWalk(t *testing.T) {
	dir := tree(t)
	events, code, _ := invoke(t, map[string]any{"path": dir})
	want := []string{
		`{"path":"a.go","size":23,"lines":3}`,
		`{"path":"b.txt","size":10,"lines":1}`,
		`{"path":"empty","size":0,"lines":0}`,
		`{"path":"logo.png","size":6,"binary":true}`,
		`{"path":"sub/c.go","size":10,"lines":1}`,
		`{"path":"sub/deep/d.txt","size":8,"lines":4}`,
	}
	if code != 0 || strings.Join(events, "\n") != strings.Join(want, "\n") {
		t.Errorf("exit %d, events:\n%s\nwant:\n%s", code, strings.Join(events, "\n"), strings.Join(want, "\n"))
	}
}

func TestWalkOptions(t *testing.T) {
	dir := tree(t)
	paths := func(events []string) string {
		var ps []string
		for _, e := range events {
			var ev Event
			if err := json.Unmarshal([]byte(e), &ev); err != nil {
				t.Fatal(err)
			}
			ps = append(ps, ev.Path)
		}
		return strings.Join(ps, " ")
	}
	tests := []struct {
		args  map[string]any
		paths string
		code  int
		err   string
	}{
		{args: map[string]any{"path": dir, "glob": "*.go"}, paths: "a.go sub/c.go"},
		{args: map[string]any{"path": dir, "all": true, "glob": "*"}, paths: ".cache/x.go .env a.go b.txt empty logo.png sub/c.go sub/deep/d.txt"},
		{args: map[string]any{"path": filepath.Join(dir, "sub")}, paths: "c.go deep/d.txt"},
		{args: map[string]any{"path": dir, "max_files": 2}, paths: "a.go b.txt", code: 1, err: "stopped at max_files (2)"},
		{args: map[string]any{"path": dir, "max_files": 0}, code: 2, err: "max_files must be a positive integer"},
		{args: map[string]any{"path": dir, "glob": "[", "max_files": 2}, code: 2, err: "not a valid pattern"},
		{args: map[string]any{"path": filepath.Join(dir, "a.go")}, code: 1, err: "is not a directory: use read_file"},
		{args: map[string]any{"path": filepath.Join(dir, "nope")}, code: 1, err: "no such directory"},
	}
	for _, tt := range tests {
		events, code, errText := invoke(t, tt.args)
		if got := paths(events); got != tt.paths || code != tt.code || !strings.Contains(errText, tt.err) {
			t.Errorf("%v: paths %q, exit %d, error %q\nwant paths %q, exit %d, error with %q", tt.args, got, code, errText, tt.paths, tt.code, tt.err)
		}
	}
}

func TestWalkStopsWhenCancelled(t *testing.T) {
	dir := tree(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out sdk.Recorder
	res, err := sdk.Invoke(ctx, walk{}, "", []byte(`{"path": "`+dir+`"}`), &out)
	if err != nil || res.ExitCode != 1 || !strings.Contains(res.Error, "context canceled") || len(out.Events) != 0 {
		t.Errorf("cancelled walk: %+v, %v, %d events", res, err, len(out.Events))
	}
}

// checkEvent holds ev to eventSchema without a JSON Schema validator (this
// module links none, as a plugin author's need not): only its properties,
// path and size present, counts not negative. The host validates every
// event against the schema itself; the plugins package's tests run this
// plugin through it.
func checkEvent(ev []byte) error {
	var e struct {
		Path   *string `json:"path"`
		Size   *int64  `json:"size"`
		Lines  *int64  `json:"lines"`
		Binary *bool   `json:"binary"`
	}
	dec := json.NewDecoder(bytes.NewReader(ev))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return err
	}
	switch {
	case e.Path == nil || e.Size == nil:
		return errors.New("path or size missing")
	case *e.Size < 0 || (e.Lines != nil && *e.Lines < 0):
		return errors.New("a negative count")
	}
	return nil
}

func TestDescribeIsAStream(t *testing.T) {
	d := walk{}.Describe()
	if d.Mode() != "stream" || d.Framing() != "jsonl" {
		t.Errorf("mode %q framing %q", d.Mode(), d.Framing())
	}
	if !json.Valid(d.Process.Output.Event) {
		t.Errorf("the event schema is not JSON")
	}
}
