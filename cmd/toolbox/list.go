package main

import (
	"errors"
	"fmt"
	"io/fs"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"toolbox/catalog"
	"toolbox/manifest"
)

type listOptions struct {
	*globals
	JSON bool
}

func newCmdList(g *globals, runF func(*listOptions) error) *cobra.Command {
	opts := &listOptions{globals: g}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List what a model sees: capabilities and tools, from the lock",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return listRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print entries as JSON, input schemas included")
	return cmd
}

// readLock reads the lock of the toolbox file, saying how to make one.
func readLock(g *globals) (string, *manifest.Lock, error) {
	path := manifest.LockPath(g.toolboxFile())
	l, err := manifest.Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, nil, withCode(exitError, fmt.Errorf("%s does not exist; run `toolbox lock` first", path))
	}
	return path, l, err
}

func listRun(opts *listOptions) error {
	_, l, err := readLock(opts.globals)
	if err != nil {
		return err
	}
	entries, warnings := catalog.Build(l)
	for _, w := range warnings {
		fmt.Fprintf(opts.IO.Err, "warning: %s\n", w)
	}
	if opts.JSON {
		if entries == nil {
			entries = []catalog.Entry{}
		}
		return writeJSON(opts.IO.Out, entries)
	}
	w := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tKIND\tBACKEND\tMODE\tSTATUS\tDESCRIPTION")
	for _, e := range entries {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Name, e.Kind, e.Backend, e.Mode, e.Status, e.Description)
	}
	return w.Flush()
}

type schemaOptions struct{ *globals }

func newCmdSchema(g *globals, runF func(*schemaOptions) error) *cobra.Command {
	opts := &schemaOptions{globals: g}
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the tool definitions a model is given (name, description, input schema) as JSON",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return schemaRun(opts)
		},
	}
}

// modelTool is the common shape of a tool definition for a model.
type modelTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"input_schema"`
}

func schemaRun(opts *schemaOptions) error {
	_, l, err := readLock(opts.globals)
	if err != nil {
		return err
	}
	entries, warnings := catalog.Build(l)
	for _, w := range warnings {
		fmt.Fprintf(opts.IO.Err, "warning: %s\n", w)
	}
	out := make([]modelTool, 0, len(entries))
	for _, e := range entries {
		out = append(out, modelTool{Name: e.Name, Description: e.Description, InputSchema: e.InputSchema})
	}
	return writeJSON(opts.IO.Out, out)
}
