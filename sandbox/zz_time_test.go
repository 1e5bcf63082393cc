package sandbox

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestZZTime(t *testing.T) {
	phases := map[string][]int64{}
	var order []string
	for i := 0; i < 300; i++ {
		var errb bytes.Buffer
		t0 := time.Now()
		prev := t0.UnixMicro()
		p, err := Start(&Spec{Mechanism: Landlock, ToolDir: "/tmp/smoke"}, Command{Path: "/bin/true", Stderr: &errb})
		if err != nil {
			t.Fatal(err)
		}
		tStarted := time.Now().UnixMicro()
		p.Wait()
		tEnd := time.Now().UnixMicro()
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		lines = append(lines, fmt.Sprintf("T hostStarted %d", tStarted), fmt.Sprintf("T hostEnd %d", tEnd))
		slices.SortFunc(lines, func(a, b string) int { x, _ := strconv.ParseInt(strings.Fields(a)[2], 10, 64); y, _ := strconv.ParseInt(strings.Fields(b)[2], 10, 64); return int(x - y) })
		for _, l := range lines {
			f := strings.Fields(l)
			v, _ := strconv.ParseInt(f[2], 10, 64)
			if i == 0 {
				order = append(order, f[1])
			}
			phases[f[1]] = append(phases[f[1]], v-prev)
			prev = v
		}
		phases["total"] = append(phases["total"], tEnd-t0.UnixMicro())
	}
	for _, k := range append(order, "total") {
		v := phases[k]
		slices.Sort(v)
		t.Logf("%-12s median %d us", k, v[len(v)/2])
	}
}
