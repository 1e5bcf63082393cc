package sandbox

import (
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// benchStart starts and waits for /bin/true under m, b.N times, and also
// reports the median of one start+wait in milliseconds (the issue's
// targets are medians: landlock adds < 3 ms, bwrap < 15 ms).
func benchStart(b *testing.B, m Mechanism, l Limits) {
	requireMechanism(b, m)
	spec := pin(&Spec{Mechanism: m, ToolDir: b.TempDir(), Limits: l})
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		p, err := Start(spec, Command{Path: truePath(b)})
		if err != nil {
			b.Fatal(err)
		}
		if code, err := p.Wait(); code != 0 || err != nil {
			b.Fatalf("true under %s: exit %d, %v", m, code, err)
		}
		times = append(times, time.Since(t0))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-median")
}

func BenchmarkStartNone(b *testing.B)     { benchStart(b, None, Limits{}) }
func BenchmarkStartLandlock(b *testing.B) { benchStart(b, Landlock, Limits{}) }
func BenchmarkStartBwrap(b *testing.B)    { benchStart(b, Bwrap, Limits{}) }

// benchLimits are the toolbox file's defaults, less processes (which a
// root tool gets only with a delegated cgroup).
var benchLimits = Limits{Memory: 4 << 30, FileSize: 256 << 20, OpenFiles: 4096, TmpSize: 256 << 20}

func BenchmarkStartLimitsNone(b *testing.B)     { benchStart(b, None, benchLimits) }
func BenchmarkStartLimitsLandlock(b *testing.B) { benchStart(b, Landlock, benchLimits) }
func BenchmarkStartLimitsBwrap(b *testing.B)    { benchStart(b, Bwrap, benchLimits) }

// benchStartTrusted is benchStart as a run of a locked tool starts: with
// the toolbox's shared tmp, a dozen protected paths, and the binary
// opened and hashed once per start and executed from its descriptor.
func benchStartTrusted(b *testing.B, m Mechanism) {
	requireMechanism(b, m)
	dir := b.TempDir()
	tool := filepath.Join(dir, "true")
	copyFile(b, truePath(b), tool, 0o755)
	shared, _ := sharedTmpSized(b, 0)
	spec := pin(&Spec{Mechanism: m, ToolDir: dir, SharedTmp: shared})
	for i := range 12 {
		spec.Protected = append(spec.Protected, filepath.Join(dir, "p"+strconv.Itoa(i)))
	}
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		exe, err := OpenExecutable(tool)
		if err != nil {
			b.Fatal(err)
		}
		p, err := Start(spec, Command{Path: tool, Exe: exe})
		exe.Close()
		if err != nil {
			b.Fatal(err)
		}
		if code, err := p.Wait(); code != 0 || err != nil {
			b.Fatalf("true under %s: exit %d, %v", m, code, err)
		}
		times = append(times, time.Since(t0))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-median")
}

func BenchmarkStartTrustedNone(b *testing.B)     { benchStartTrusted(b, None) }
func BenchmarkStartTrustedLandlock(b *testing.B) { benchStartTrusted(b, Landlock) }
func BenchmarkStartTrustedBwrap(b *testing.B)    { benchStartTrusted(b, Bwrap) }
