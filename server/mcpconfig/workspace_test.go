package mcpconfig

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tool with a write grant on the workspace plants links where `mcp
// config --write` puts the project's file: at the file itself, and as the
// client's directory. Each is refused, naming the link; the host files
// they point to are neither read into a backup nor rewritten nor created
// (toolbox often runs as root). The twin: the same files as plain files
// and directories are merged, backed up and created as Write does.
func TestWriteInWorkspaceFollowsNoLink(t *testing.T) {
	ws, host := t.TempDir(), t.TempDir()
	victim := filepath.Join(host, "config.json")
	orig := []byte(`{"secret": "keep"}`)
	if err := os.WriteFile(victim, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	mustLink := func(target, at string) {
		t.Helper()
		if err := os.Symlink(target, at); err != nil {
			t.Fatal(err)
		}
	}
	mustLink(victim, filepath.Join(ws, ".mcp.json"))                  // the file
	mustLink(host, filepath.Join(ws, ".cursor"))                      // the directory
	mustLink("../"+filepath.Base(host), filepath.Join(ws, ".vscode")) // relative, still out
	for _, c := range []struct {
		client Client
		link   string
	}{
		{ClaudeCode, ".mcp.json"},
		{Cursor, ".cursor"},
		{VSCode, ".vscode"},
	} {
		path, err := File(c.client, Places{Workspace: ws})
		if err != nil {
			t.Fatal(err)
		}
		_, err = WriteInWorkspace(ws, path, c.client, server, now)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(ws, c.link)) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("%s: err %v, want a refusal naming the link %s", c.client, err, c.link)
		}
	}
	if got, _ := os.ReadFile(victim); !bytes.Equal(got, orig) {
		t.Errorf("the host file was rewritten:\n%s", got)
	}
	if ents, _ := os.ReadDir(host); len(ents) != 1 {
		t.Errorf("files made outside the workspace: %v", ents)
	}

	// The twin: plain files and directories inside the workspace.
	clean := t.TempDir()
	old := []byte(`{"mcpServers": {"other": {"command": "x"}}}`)
	if err := os.WriteFile(filepath.Join(clean, ".mcp.json"), old, 0o640); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(clean, ".mcp.json")
	w, err := WriteInWorkspace(clean, path, ClaudeCode, server, now)
	if err != nil || w.File != path || w.Backup != path+".toolbox-backup-20260304T050607Z" {
		t.Fatalf("merge: %+v, %v", w, err)
	}
	want, _ := Merge(ClaudeCode, old, server)
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
		t.Errorf("merged file:\n%s", got)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, %v: want 0640 kept", st.Mode(), err)
	}
	gemini := filepath.Join(clean, ".gemini", "settings.json")
	if w, err := WriteInWorkspace(clean, gemini, Gemini, server, now); err != nil || w.File != gemini || w.Backup != "" {
		t.Fatalf("create: %+v, %v", w, err)
	}
	if w, err := WriteInWorkspace(clean, gemini, Gemini, server, now); err != nil || !w.Unchanged {
		t.Errorf("again: %+v, %v", w, err)
	}
	if _, err := WriteInWorkspace(clean, filepath.Join(t.TempDir(), "x.json"), Gemini, server, now); err == nil {
		t.Error("a file outside the workspace: no error")
	}
}
