package launcher

import (
	"os"
	"testing"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// TestMain lets the test binary serve as the landlock helper, which
// re-executes it.
func TestMain(m *testing.M) {
	sandbox.Init()
	os.Exit(testenv.RunWithTmp(m))
}
