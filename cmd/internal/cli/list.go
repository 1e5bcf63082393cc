package cli

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/catalog"
	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/manifest"
)

// ListOptions are the inputs of the list command.
type ListOptions struct {
	*Globals
	JSON bool
	// All adds the backends: tools capabilities hide from the model.
	All bool
}

// NewCmdList builds the list command; runF, when not nil, replaces its run
// (tests check flag parsing with it).
func NewCmdList(g *Globals, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List what a model sees: capabilities, tools and services' send companions, from the lock",
		Args:  NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return listRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print entries as JSON, input schemas included")
	cmd.Flags().BoolVar(&opts.All, "all", false, "also list the backends: tools a capability serves, which a model does not see")
	return cmd
}

// loadCatalog reads the lock and says what a model sees of it, printing a
// warning for each capability left out. It returns the lock too.
func loadCatalog(g *Globals) ([]catalog.Entry, *manifest.Lock, error) {
	_, l, err := ReadLock(g)
	if err != nil {
		return nil, nil, err
	}
	return catalogOf(g, l), l, nil
}

// catalogOf is what a model sees of l, a warning printed for each
// capability left out.
func catalogOf(g *Globals, l *manifest.Lock) []catalog.Entry {
	entries, warnings := catalog.Build(l)
	for _, w := range warnings {
		fmt.Fprintf(g.IO.Err, "warning: %s\n", w)
	}
	return entries
}

// staleWarning opens each line list prints on stderr for what a run would
// refuse (launcher.CheckStale): the reason, with its fix, follows.
const staleWarning = "warning: toolbox run would refuse: "

func listRun(opts *ListOptions) error {
	lockPath, l, err := ReadLock(opts.Globals)
	if err != nil {
		return err
	}
	// A stale lock is listed as it is (exit 0), with a warning per problem
	// a run would refuse. Only toolbox-core's HCL parser tells whether a
	// toolbox file whose bytes changed changed its configuration, as run
	// hands such a call over too.
	tf := launcher.CheckToolboxFile(lockPath, l)
	if opts.Delegate != nil && tf.BytesChanged() {
		return opts.Delegate()
	}
	entries := catalogOf(opts.Globals, l)
	for _, problem := range launcher.CheckStale(lockPath, l, tf) {
		fmt.Fprintf(opts.IO.Err, "%s%v\n", staleWarning, problem)
	}
	if opts.All {
		entries = append(entries, catalog.Backends(l)...)
		sort.SliceStable(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
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
		desc := summary(e.Description)
		if e.Kind == catalog.KindBackend {
			desc = fmt.Sprintf("(backend of %s) %s", strings.Join(e.Capabilities, ", "), desc)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", e.ModelName, e.Kind, e.Backend, e.Mode, e.Status, desc)
		if e.Send != nil {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Send.ModelName, "send", e.Backend, e.Mode, e.Status, summary(e.Send.Description))
		}
	}
	return w.Flush()
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
