// Command ratio times commands against each other in one run, alternating
// them so that machine noise hits all alike, and prints each one's median
// and its ratio to the first (the reference).
//
// Usage: ratio [-n 200] [-vs NAME] NAME1 'cmd1 args' NAME2 'cmd2 args' ...
// -vs adds a column: each median's ratio to the named command's.
// -any-exit times commands whatever their exit status (a program started
// without its input, to time its start alone).
// -cpu adds the median CPU time (user + system) each run took, the
// command's and that of every descendant it waited for, and its ratio to
// the reference's: the work done, which other load on the machine moves
// much less than the elapsed time.
// Commands are split on spaces (no shell); their output is discarded.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
)

func main() {
	n := flag.Int("n", 200, "runs per command")
	warm := flag.Int("warmup", 10, "untimed runs per command first")
	vs := flag.String("vs", "", "a second reference: print each ratio to this command too")
	cpu := flag.Bool("cpu", false, "also print the median CPU time (user+system, the command and the descendants it waited for)")
	anyExit := flag.Bool("any-exit", false, "accept any exit status (only a failure to start is an error)")
	flag.Parse()
	args := flag.Args()
	if len(args) < 2 || len(args)%2 != 0 {
		fmt.Fprintln(os.Stderr, "usage: ratio [-n N] NAME 'CMD' [NAME 'CMD']...")
		os.Exit(2)
	}
	type cmdSpec struct {
		name string
		argv []string
		ds   []time.Duration
		cpu  []time.Duration
	}
	var cmds []*cmdSpec
	for i := 0; i < len(args); i += 2 {
		cmds = append(cmds, &cmdSpec{name: args[i], argv: strings.Fields(args[i+1])})
	}
	runOnce := func(c *cmdSpec) (time.Duration, time.Duration) {
		start := time.Now()
		cmd := exec.Command(c.argv[0], c.argv[1:]...)
		err := cmd.Run()
		if _, exited := err.(*exec.ExitError); exited && *anyExit {
			err = nil
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", c.name, err)
			os.Exit(1)
		}
		return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	for i := 0; i < *warm; i++ {
		for _, c := range cmds {
			runOnce(c)
		}
	}
	for i := 0; i < *n; i++ {
		for _, c := range cmds {
			d, u := runOnce(c)
			c.ds, c.cpu = append(c.ds, d), append(c.cpu, u)
		}
	}
	median := func(ds []time.Duration) time.Duration {
		s := append([]time.Duration(nil), ds...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[len(s)/2]
	}
	ref := median(cmds[0].ds)
	var ref2 time.Duration
	head := fmt.Sprintf("%-28s %12s %8s", "command", "median", "ratio")
	for _, c := range cmds {
		if c.name == *vs {
			ref2 = median(c.ds)
			head += fmt.Sprintf("  %s", "vs "+c.name)
		}
	}
	refCPU := median(cmds[0].cpu)
	if *cpu {
		head += fmt.Sprintf("  %10s %8s", "cpu", "ratio")
	}
	fmt.Println(head)
	for _, c := range cmds {
		m := median(c.ds)
		line := fmt.Sprintf("%-28s %12s %7.2fx", c.name, m.Round(10*time.Microsecond), float64(m)/float64(ref))
		if ref2 > 0 {
			line += fmt.Sprintf("  %7.2fx", float64(m)/float64(ref2))
		}
		if *cpu {
			u := median(c.cpu)
			line += fmt.Sprintf("  %10s %7.2fx", u.Round(10*time.Microsecond), float64(u)/float64(refCPU))
		}
		fmt.Println(line)
	}
}
