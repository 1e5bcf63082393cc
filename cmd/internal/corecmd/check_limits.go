package corecmd

import (
	"fmt"
	"text/tabwriter"

	"github.com/toolbox-dev/toolbox/sandbox"
)

// printLimits prints which limits this machine enforces: one line per
// limit, "yes" or "no", how, and what is missing here.
func printLimits(w *tabwriter.Writer, ls []sandbox.LimitEnforcement) {
	fmt.Fprintln(w, "limits enforced on this machine:")
	for _, l := range ls {
		yes := "yes"
		if !l.Enforced {
			yes = "no"
		}
		fmt.Fprintf(w, "  %s\t%s\t%s", l.Limit, yes, l.How)
		if l.Missing != "" {
			fmt.Fprintf(w, " (%s)", l.Missing)
		}
		fmt.Fprintln(w)
	}
}
