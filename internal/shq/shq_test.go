package shq

import (
	"os/exec"
	"testing"
)

// Every quoted word reaches a real shell as exactly one argument holding
// the original text; plain paths are left readable.
func TestQuote(t *testing.T) {
	for _, s := range []string{"/tmp/x", "/tmp/o14 op/proj a/tools/x", "it's", "$HOME;rm -rf /", "a\nb", "`id`", "", "*", "~user"} {
		out, err := exec.Command("sh", "-c", "printf %s "+Quote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("Quote(%q) = %s: the shell gave %q, %v", s, Quote(s), out, err)
		}
	}
	if got := Quote("/usr/local/bin/tool-1.2_x"); got != "/usr/local/bin/tool-1.2_x" {
		t.Errorf("a plain path was quoted: %s", got)
	}
}
