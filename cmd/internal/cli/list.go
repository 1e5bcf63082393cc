package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/catalog"
	"github.com/toolbox-dev/toolbox/manifest"
)

// ListOptions are the inputs of the list command.
type ListOptions struct {
	*Globals
	JSON bool
}

// NewCmdList builds the list command; runF, when not nil, replaces its run
// (tests check flag parsing with it).
func NewCmdList(g *Globals, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List what a model sees: capabilities and tools, from the lock",
		Args:  NoArgs,
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
func readLock(g *Globals) (string, *manifest.Lock, error) {
	return readLockWith(g, manifest.Read)
}

// readLockWith is readLock with the reader given (launcher.ReadLock for
// one call).
func readLockWith(g *Globals, read func(path string) (*manifest.Lock, error)) (string, *manifest.Lock, error) {
	path := manifest.LockPath(g.ToolboxFile())
	l, err := read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, nil, WithCode(ExitError, fmt.Errorf("%s does not exist; run `toolbox lock` first", path))
	}
	if err != nil && !strings.Contains(err.Error(), "toolbox lock") {
		// A lock that does not decode was edited or cut short: only
		// `toolbox lock` writes it.
		err = fmt.Errorf("%w; run `toolbox lock` to write it again", err)
	}
	return path, l, err
}

// loadCatalog reads the lock and says what a model sees of it, printing a
// warning for each capability left out.
func loadCatalog(g *Globals) ([]catalog.Entry, error) {
	_, l, err := readLock(g)
	if err != nil {
		return nil, err
	}
	entries, warnings := catalog.Build(l)
	for _, w := range warnings {
		fmt.Fprintf(g.IO.Err, "warning: %s\n", w)
	}
	return entries, nil
}

func listRun(opts *ListOptions) error {
	entries, err := loadCatalog(opts.Globals)
	if err != nil {
		return err
	}
	if opts.JSON {
		if entries == nil {
			entries = []catalog.Entry{}
		}
		return WriteJSON(opts.IO.Out, entries)
	}
	w := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tKIND\tBACKEND\tMODE\tSTATUS\tDESCRIPTION")
	for _, e := range entries {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", e.ModelName, e.Kind, e.Backend, e.Mode, e.Status, summary(e.Description))
	}
	return w.Flush()
}

// SchemaOptions are the inputs of the schema command.
type SchemaOptions struct{ *Globals }

// NewCmdSchema builds the schema command; runF, when not nil, replaces its run
// (tests check flag parsing with it).
func NewCmdSchema(g *Globals, runF func(*SchemaOptions) error) *cobra.Command {
	opts := &SchemaOptions{Globals: g}
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the tool definitions a model is given (name, description, input schema) as JSON",
		Args:  NoArgs,
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

func schemaRun(opts *SchemaOptions) error {
	entries, err := loadCatalog(opts.Globals)
	if err != nil {
		return err
	}
	out := make([]modelTool, 0, len(entries))
	for _, e := range entries {
		out = append(out, modelTool{Name: e.ModelName, Description: e.Description, InputSchema: e.InputSchema})
	}
	return WriteJSON(opts.IO.Out, out)
}

// summary is the first sentence of a description, at most 80 bytes (cut
// on a character boundary): the table shows it, --json has it whole.
func summary(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	if len(s) <= 80 {
		return s
	}
	cut := 77
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
