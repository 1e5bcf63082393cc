package compiler

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Diagnostic is one problem found in a toolbox file or while probing.
// File, Line and Col locate it (Line 0 when there is no position, e.g. a
// probe failure); Block names the block ("tool \"read_file\""); Fix says
// what to do.
type Diagnostic struct {
	File  string
	Line  int
	Col   int
	Block string
	Msg   string
	Fix   string
	// Err is the underlying error when there is one (e.g. a
	// *sandbox.RefusalError), reachable with errors.As.
	Err error
}

// Unwrap returns Err.
func (d *Diagnostic) Unwrap() error { return d.Err }

// Error renders `file:line:col: block: message; fix`.
func (d *Diagnostic) Error() string {
	var b strings.Builder
	if d.File != "" {
		b.WriteString(d.File)
		if d.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", d.Line, d.Col)
		}
		b.WriteString(": ")
	}
	if d.Block != "" {
		b.WriteString(d.Block)
		b.WriteString(": ")
	}
	b.WriteString(d.Msg)
	if d.Fix != "" {
		b.WriteString("; ")
		b.WriteString(d.Fix)
	}
	return b.String()
}

// Diagnostics is every problem found; its Error joins them one per line.
type Diagnostics []*Diagnostic

func (ds Diagnostics) Error() string {
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = d.Error()
	}
	return strings.Join(lines, "\n")
}

// Err returns ds as an error, or nil when empty.
func (ds Diagnostics) Err() error {
	if len(ds) == 0 {
		return nil
	}
	return ds
}

// at builds a diagnostic located at r.
func at(r hcl.Range, block, msg, fix string) *Diagnostic {
	return &Diagnostic{File: r.Filename, Line: r.Start.Line, Col: r.Start.Column, Block: block, Msg: msg, Fix: fix}
}

// fromHCL converts the HCL library's diagnostics (syntax errors, unknown
// attributes) into ours, keeping their position.
func fromHCL(hd hcl.Diagnostics, block string) Diagnostics {
	var out Diagnostics
	for _, d := range hd {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + strings.TrimSuffix(d.Detail, ".")
		}
		out = append(out, &Diagnostic{Block: block, Msg: msg})
		if d.Subject != nil {
			out[len(out)-1].File = d.Subject.Filename
			out[len(out)-1].Line = d.Subject.Start.Line
			out[len(out)-1].Col = d.Subject.Start.Column
		}
	}
	return out
}
