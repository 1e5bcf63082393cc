package main

import (
	"bytes"
	"go/format"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every Go file of the repository (every module, generated ones included)
// is as gofmt writes it: CI runs no separate gofmt, so an unformatted file
// fails here, naming it.
func TestGofmt(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(repo, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != repo && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if out, err := format.Source(src); err != nil || !bytes.Equal(out, src) {
			rel, _ := filepath.Rel(repo, path)
			t.Errorf("%s is not gofmt-formatted (%v): run gofmt -w %s", rel, err, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
