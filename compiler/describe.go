package compiler

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolbox-dev/toolbox/internal/shq"
	"github.com/toolbox-dev/toolbox/probe"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/protocol/validate"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// DescribeBinary runs `path describe` the way lock does (same timeout,
// output limit and environment, private HOME included; unsandboxed: it
// serves an author checking their own tool)
// and validates the document. With plugin set, path is started as a
// go-plugin tool and asked over gRPC instead. It returns the raw document
// too, so a caller can show what the tool printed.
func DescribeBinary(ctx context.Context, path string, plugin bool, callerEnv []string) (*protocol.Describe, []byte, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, nil, fmt.Errorf("tool binary %q: %w", path, unwrapPathError(err))
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return nil, nil, fmt.Errorf("tool binary %q is not an executable file; run chmod +x %s", path, shq.Quote(path))
	}
	p := &prober{opts: Options{CallerEnv: callerEnv, DescribeTimeout: DefaultDescribeTimeout}}
	home, removeHome, err := privateHome(nil)
	if err != nil {
		return nil, nil, err
	}
	defer removeHome()
	if plugin {
		d, _, err := p.describePlugin(ctx, &ToolDecl{Path: abs}, nil, nil, p.describeEnv(home))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		raw, _ := json.Marshal(d)
		return d, raw, nil
	}
	c, err := probe.Capture(ctx, nil, sandbox.Command{Path: abs, Args: []string{"describe"}, Env: p.describeEnv(home)}, DefaultDescribeTimeout)
	if err != nil {
		return nil, nil, fmt.Errorf("running %s describe: %w", path, err)
	}
	if f := c.Failure("describe", DefaultDescribeTimeout); f != nil {
		return nil, c.Stdout, fmt.Errorf("%s: %w (a go-plugin tool is described with --plugin)", path, f)
	}
	d, err := validate.ParseDescribe(c.Stdout)
	if err != nil {
		return nil, c.Stdout, fmt.Errorf("%s: invalid describe document: %w", path, err)
	}
	return d, c.Stdout, nil
}
