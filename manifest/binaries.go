package manifest

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"

	"github.com/toolbox-dev/toolbox/protocol"
)

// How the lock stores a multi-command binary (issue 11 #8: a binary of
// 1000 commands wrote its describe document 1000 times, a 108 MB lock
// that every run decoded). Each part is written once:
//
//   - the binary's fields (kind, path, hash, bindings, runtime, probe, and
//     its describe document without "commands") are an entry of the
//     top-level "binaries" object, keyed by Tool.Binary;
//   - each command's tool holds only its binary and its command:
//
//     "git.log": {"binary": "git", "command": {"name": "log", "description": "…", "args": […]}}
//
// So a lock is linear in the commands, and a run decodes only the command
// it runs (ReadCall). In memory every Tool is whole: Unmarshal gives each
// command's tool its binary's fields and one Describe shared by the
// binary's commands, holding them all, sorted by name (the compiler locks
// them in that order); Marshal splits them again.

// wireTool is a tools entry as it is encoded: a tool of its own (Tool) or
// one command of a binary (Binary and Command, Tool nil). Its fields hide
// Tool's, which the lock does not write (json:"-").
type wireTool struct {
	*Tool
	Binary  string            `json:"binary,omitempty"`
	Command *protocol.Command `json:"command,omitempty"`
}

// wireLock is the lock as it is encoded and decoded; its Tools field hides
// Lock's.
type wireLock struct {
	*Lock
	Binaries map[string]*Tool     `json:"binaries,omitempty"`
	Tools    map[string]*wireTool `json:"tools"`
}

// toWire splits the commands' tools of l into binaries and references. It
// refuses (problems) what the format cannot store: two tools of one binary
// that differ in more than their command.
func toWire(l *Lock) (*wireLock, []string) {
	w := &wireLock{Lock: l, Tools: make(map[string]*wireTool, len(l.Tools))}
	first := map[string]*Tool{} // binary → its first command's tool
	firstName := map[string]string{}
	index := map[*protocol.Describe]map[string]*protocol.Command{}
	var problems []string
	for _, name := range sortedKeys(l.Tools) {
		t := l.Tools[name]
		if t == nil || t.Binary == "" {
			w.Tools[name] = &wireTool{Tool: t}
			continue
		}
		if f, ok := first[t.Binary]; !ok {
			first[t.Binary], firstName[t.Binary] = t, name
			if w.Binaries == nil {
				w.Binaries = map[string]*Tool{}
			}
			b := binaryOf(t)
			if t.Describe != nil {
				d := *t.Describe
				d.Commands = nil
				b.Describe = &d
			}
			w.Binaries[t.Binary] = &b
		} else if !reflect.DeepEqual(binaryOf(f), binaryOf(t)) {
			problems = append(problems, fmt.Sprintf("tools %q and %q are commands of binary %q but differ in more than their command", firstName[t.Binary], name, t.Binary))
			continue
		}
		wt := &wireTool{Binary: t.Binary, Command: &protocol.Command{Name: t.Command}}
		if t.Describe != nil {
			if _, ok := index[t.Describe]; !ok {
				index[t.Describe] = commandIndex(t.Describe)
			}
			if c := index[t.Describe][t.Command]; c != nil {
				wt.Command = c
			}
		}
		w.Tools[name] = wt
	}
	return w, problems
}

func commandIndex(d *protocol.Describe) map[string]*protocol.Command {
	m := make(map[string]*protocol.Command, len(d.Commands))
	for i := range d.Commands {
		m[d.Commands[i].Name] = &d.Commands[i]
	}
	return m
}

// binaryOf is t without what makes it one command of its binary.
func binaryOf(t *Tool) Tool {
	b := *t
	b.Binary, b.Command = "", ""
	return b
}

// fromWire makes w.Lock.Tools whole: each plain entry as it is, each
// command's tool from its binary's entry and its command. It reports what
// does not fit the format: a command's entry holding more than binary and
// command, naming a binary that is not there, or a command twice; a
// binary whose describe document lists commands itself, or that no tool
// uses.
func fromWire(w *wireLock) []string {
	var problems []string
	if w.Tools == nil {
		w.Lock.Tools = nil // Validate says it is missing
		return nil
	}
	w.Lock.Tools = make(map[string]*Tool, len(w.Tools))
	commands := map[string][]protocol.Command{} // binary → its commands
	members := map[string][]*Tool{}             // binary → its commands' tools
	owner := map[[2]string]string{}             // binary, command → tool
	for _, name := range sortedKeys(w.Tools) {
		wt := w.Tools[name]
		at := fmt.Sprintf("tool %q", name)
		switch {
		case wt == nil:
			w.Lock.Tools[name] = nil
			continue
		case wt.Binary == "" && wt.Command != nil:
			problems = append(problems, fmt.Sprintf("%s: a command names no binary", at))
			continue
		case wt.Binary == "":
			w.Lock.Tools[name] = wt.Tool
			if wt.Tool == nil {
				w.Lock.Tools[name] = &Tool{} // Validate says what it lacks
			}
			continue
		case wt.Tool != nil:
			problems = append(problems, fmt.Sprintf("%s: a command of binary %q holds only \"binary\" and \"command\"", at, wt.Binary))
			continue
		case wt.Command == nil:
			problems = append(problems, fmt.Sprintf("%s: binary %q without a command", at, wt.Binary))
			continue
		}
		b, ok := w.Binaries[wt.Binary]
		if !ok || b == nil {
			problems = append(problems, fmt.Sprintf("%s: binary %q is not in binaries", at, wt.Binary))
			continue
		}
		key := [2]string{wt.Binary, wt.Command.Name}
		if prev, dup := owner[key]; dup {
			problems = append(problems, fmt.Sprintf("%s: command %q of binary %q is tool %q already", at, wt.Command.Name, wt.Binary, prev))
			continue
		}
		owner[key] = name
		commands[wt.Binary] = append(commands[wt.Binary], *wt.Command)
		whole := *b
		whole.Binary, whole.Command = wt.Binary, wt.Command.Name
		w.Lock.Tools[name] = &whole
		members[wt.Binary] = append(members[wt.Binary], &whole)
	}
	// One describe document per binary, holding all its commands, shared
	// by its commands' tools.
	for _, name := range sortedKeys(w.Binaries) {
		b := w.Binaries[name]
		at := fmt.Sprintf("binary %q", name)
		switch {
		case b == nil:
			problems = append(problems, at+" is null")
			continue
		case commands[name] == nil:
			problems = append(problems, at+" is the binary of no tool")
			continue
		case b.Describe == nil:
			continue // Validate says a probed tool needs one
		case b.Describe.Commands != nil:
			problems = append(problems, at+": its describe document lists no commands; each is in its tool")
			continue
		}
		d := *b.Describe
		d.Commands = commands[name]
		slices.SortFunc(d.Commands, func(x, y protocol.Command) int { return cmp.Compare(x.Name, y.Name) })
		for _, t := range members[name] {
			t.Describe = &d
		}
	}
	return problems
}
