package cli

import (
	"sort"

	"github.com/spf13/cobra"

	"github.com/toolbox-dev/toolbox/catalog"
)

// completeNames completes the first argument with the names the lock of -f
// knows: capabilities and visible tools first (what a model sees), then
// the backends behind capabilities. Without a lock it offers nothing.
func completeNames(g *Globals) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		_, l, err := ReadLock(g)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		entries, _ := catalog.Build(l)
		seen := map[string]bool{}
		var out []cobra.Completion
		for _, e := range entries {
			seen[e.Name] = true
			out = append(out, cobra.CompletionWithDesc(e.Name, summary(e.Description)))
		}
		var rest []string
		for name := range l.Tools {
			if !seen[name] {
				rest = append(rest, name)
			}
		}
		sort.Strings(rest)
		for _, name := range rest {
			out = append(out, cobra.CompletionWithDesc(name, "backend"))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
