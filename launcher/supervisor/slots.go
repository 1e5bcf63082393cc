package supervisor

import "path/filepath"

// The host-wide count of live processes (DESIGN.md §5: 32 live processes
// per host, issue 11 #15). Every supervisor that shares a slots directory
// (`toolbox serve` and every `toolbox mcp` of one state dir) shares one
// semaphore: the directory holds one slot file per allowed process
// (slot-00, slot-01, …), and a live process holds an exclusive flock on
// one of them from its reservation to its final state. The kernel drops a
// lock when its holder dies, so a supervisor killed with SIGKILL frees its
// slots at once; nothing needs cleaning up.
//
// What it does not cover: supervisors of different slots directories
// (other state dirs: another --state-dir, $XDG_STATE_HOME or user) count
// apart, each up to its own limit, and a supervisor without a state dir
// counts only its own processes. A process whose supervisor died (lost)
// no longer holds a slot, whether or not it still runs.

// slotsDirName is the slots directory under a state dir.
const slotsDirName = "slots"

// DefaultSlotsDir is where a supervisor keeps the host-wide count when
// Config.SlotsDir is empty: <StateDir>/slots ("" without a state dir).
func DefaultSlotsDir(stateDir string) string {
	if stateDir == "" {
		return ""
	}
	return filepath.Join(stateDir, slotsDirName)
}
