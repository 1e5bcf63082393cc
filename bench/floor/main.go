// Command floor is the reference floor of the `toolbox run` benchmark: the
// least a locked launcher can do. It reads a JSON lock, hashes the tool's
// binary, compares the hash, and runs the tool, passing its output through.
// Usage: floor LOCK TOOL [ARGS...]
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: floor LOCK TOOL [ARGS...]")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail(err)
	}
	var lock struct {
		Tools map[string]struct {
			Path   string `json:"path"`
			SHA256 string `json:"sha256"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(data, &lock); err != nil {
		fail(err)
	}
	t, ok := lock.Tools[os.Args[2]]
	if !ok {
		fail(fmt.Errorf("no tool %q", os.Args[2]))
	}
	path := filepath.Join(filepath.Dir(os.Args[1]), t.Path)
	f, err := os.Open(path)
	if err != nil {
		fail(err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		fail(err)
	}
	f.Close()
	if hex.EncodeToString(h.Sum(nil)) != t.SHA256 {
		fail(fmt.Errorf("hash mismatch"))
	}
	cmd := exec.Command(path, append([]string{"run"}, os.Args[3:]...)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "floor:", err)
	os.Exit(1)
}
