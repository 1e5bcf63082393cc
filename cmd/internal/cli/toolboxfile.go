package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolbox-dev/toolbox/internal/shq"
	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/runspec"
)

// NoToolboxFileError says the toolbox file to use does not exist, where it
// was looked for, where its name came from, and how to name another one.
type NoToolboxFileError struct {
	// Path is the toolbox file looked for; From says where its name came
	// from: "-f", "TOOLBOX_FILE" or "" (the default, ./toolbox.hcl).
	Path, From string
	// Nearest is, for the default, the closest toolbox file in the current
	// directory's .toolbox/ or in a directory above (see nearestToolbox),
	// relative to the current directory; "" when there is none.
	Nearest string
	// Below are, for the default, the toolbox files in
	// the current directory's subdirectories (a monorepo's root, see
	// toolboxesBelow), relative to it.
	Below []string
}

func (e *NoToolboxFileError) Error() string {
	fix := "name one with -f FILE or TOOLBOX_FILE=FILE"
	if e.From == "" {
		dir, err := os.Getwd()
		if err != nil {
			dir = "."
		}
		switch {
		case e.Nearest != "":
			fix = fmt.Sprintf("the nearest is %s: name it with -f %s (toolbox reads only the file it is given, never one it finds above)", e.Nearest, shq.Quote(e.Nearest))
			if len(e.Below) > 0 {
				fix += "; below this directory: " + strings.Join(e.Below, ", ")
			}
		case len(e.Below) > 0:
			fix = fmt.Sprintf("toolbox files below it: %s; name one with -f %s (toolbox reads only the file it is given)", strings.Join(e.Below, ", "), shq.Quote(e.Below[0]))
		}
		return fmt.Sprintf("no toolbox file found: there is no %s in %s; %s", e.Path, dir, fix)
	}
	return fmt.Sprintf("no toolbox file found: %s (from %s) does not exist; %s", e.Path, e.From, fix)
}

// NeedToolboxFile returns a *NoToolboxFileError when the toolbox file
// (ToolboxFile) does not exist, else nil. Commands that read the toolbox
// file or its lock call it first, so that a user in the wrong directory is
// told about the file, not about a missing lock.
func (g *Globals) NeedToolboxFile() error {
	path := g.ToolboxFile()
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return g.CheckPlanted()
	}
	from := ""
	switch {
	case g.File != "":
		from = "-f"
	case os.Getenv("TOOLBOX_FILE") != "":
		from = "TOOLBOX_FILE"
	}
	e := &NoToolboxFileError{Path: path, From: from}
	if from == "" {
		e.Nearest, e.Below = nearestToolbox(), toolboxesBelow()
	}
	return e
}

// CheckPlanted refuses a toolbox file found by default (./toolbox.hcl:
// neither -f nor TOOLBOX_FILE) when it or its lock lies inside a path that
// a sandboxed tool of another toolbox file in the same directory
// (.toolbox/toolbox.hcl) or a directory above may write
// (runspec.PlantableBy): that tool could have planted both, with tools of
// its choosing, for the operator to run by typing `toolbox run` there. As
// with git's safe.directory, naming the file (-f) is the operator saying
// it is theirs. Nothing is read for a named file; unreadable locks above
// are skipped.
func (g *Globals) CheckPlanted() error {
	if g.File != "" || os.Getenv("TOOLBOX_FILE") != "" {
		return nil
	}
	file, err := filepath.Abs(defaultToolFile)
	if err != nil {
		return nil
	}
	if r, err := filepath.EvalSymlinks(file); err == nil {
		file = r
	}
	lock := manifest.LockPath(file)
	for dir, depth := filepath.Dir(file), 0; depth < 64; depth++ {
		for _, name := range []string{"toolbox.hcl", filepath.Join(".toolbox", "toolbox.hcl")} {
			other := filepath.Join(dir, name)
			if other == file {
				continue
			}
			if st, err := os.Stat(other); err != nil || !st.Mode().IsRegular() {
				continue
			}
			otherLock := manifest.LockPath(other)
			l, err := manifest.Read(otherLock)
			if err != nil {
				continue
			}
			for _, p := range []string{file, lock} {
				if ws := runspec.PlantableBy(otherLock, l, p); len(ws) > 0 {
					rel, err := filepath.Rel(filepath.Dir(file), other)
					if err != nil {
						rel = other
					}
					return WithCode(ExitError, fmt.Errorf("%s lies inside %q, which tool %q of %s may write: a tool could have planted this toolbox file and its lock, with tools of its choosing; read both, then name the file to use it: -f %s (toolbox uses a toolbox file found by default only when no other toolbox's tool could have written it)",
						filepath.Base(p), ws[0].Grant, ws[0].Tool, rel, shq.Quote(defaultToolFile)))
				}
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return nil
}

// toolboxesBelow lists the toolbox files (toolbox.hcl, .toolbox/toolbox.hcl)
// one or two directories below the current one, relative to it, at most
// 5, sorted: a monorepo's root holding a toolbox per service. Hidden
// directories (but .toolbox) and node_modules are not entered, and at most
// 256 directories are read, so a large tree costs little.
func toolboxesBelow() []string {
	var found []string
	budget := 256
	var walk func(rel string, depth int)
	walk = func(rel string, depth int) {
		if depth > 2 || budget <= 0 || len(found) >= 5 {
			return
		}
		budget--
		entries, err := os.ReadDir(filepath.Join(".", rel))
		if err != nil {
			return
		}
		for _, d := range entries {
			if !d.IsDir() || len(found) >= 5 {
				continue
			}
			name := d.Name()
			if (strings.HasPrefix(name, ".") && name != ".toolbox") || name == "node_modules" {
				continue
			}
			sub := filepath.Join(rel, name)
			if st, err := os.Stat(filepath.Join(sub, "toolbox.hcl")); err == nil && st.Mode().IsRegular() {
				found = append(found, filepath.Join(sub, "toolbox.hcl"))
				continue
			}
			if st, err := os.Stat(filepath.Join(sub, ".toolbox", "toolbox.hcl")); err == nil && st.Mode().IsRegular() {
				found = append(found, filepath.Join(sub, ".toolbox", "toolbox.hcl"))
				continue
			}
			if name != ".toolbox" {
				walk(sub, depth+1)
			}
		}
	}
	walk("", 1)
	slices.Sort(found)
	return found
}

// nearestToolbox is the closest toolbox file a user standing in a project's
// subdirectory means: toolbox.hcl or .toolbox/toolbox.hcl (the layout the
// README suggests) in the current directory's .toolbox/ or in a directory
// above, relative to the current directory; "" when there is none. It is
// only named in the error, never used: a file above the project is not
// something toolbox should start trusting by itself.
func nearestToolbox() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for dir, depth := wd, 0; depth < 64; depth++ {
		for _, name := range []string{"toolbox.hcl", filepath.Join(".toolbox", "toolbox.hcl")} {
			p := filepath.Join(dir, name)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && p != filepath.Join(wd, "toolbox.hcl") {
				if rel, err := filepath.Rel(wd, p); err == nil {
					return rel
				}
				return p
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return ""
}

// ReadLock reads the lock of the toolbox file (manifest.LockPath), saying
// what to do when there is none: name a toolbox file (NeedToolboxFile),
// or run `toolbox lock`. A lock that does not decode says to write it
// again. It returns the lock's path as given (relative or not).
func ReadLock(g *Globals) (string, *manifest.Lock, error) {
	return readLockWith(g, manifest.Read)
}

// readLockWith is ReadLock with the reader given (launcher.ReadLock, which
// decodes only what one call may run).
func readLockWith(g *Globals, read func(path string) (*manifest.Lock, error)) (string, *manifest.Lock, error) {
	path := manifest.LockPath(g.ToolboxFile())
	l, err := read(path)
	if errors.Is(err, fs.ErrNotExist) {
		if nerr := g.NeedToolboxFile(); nerr != nil {
			return path, nil, nerr
		}
		return path, nil, WithCode(ExitError, fmt.Errorf("%s does not exist; run `toolbox lock` first", path))
	}
	if err != nil && !strings.Contains(err.Error(), "toolbox lock") {
		// A lock that does not decode was edited or cut short: only
		// `toolbox lock` writes it.
		err = fmt.Errorf("%w; run `toolbox lock` to write it again", err)
	}
	return path, l, err
}
