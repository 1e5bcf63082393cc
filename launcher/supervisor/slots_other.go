//go:build !linux

package supervisor

// hostSlots counts nothing off Linux: the per-host limit is then this
// supervisor's own count (Supervisor.live).
type hostSlots struct{}

func openHostSlots(dir string, n int) (*hostSlots, error) { return &hostSlots{}, nil }

func (h *hostSlots) acquire() int  { return 0 }
func (h *hostSlots) release(i int) {}
func (h *hostSlots) close()        {}
