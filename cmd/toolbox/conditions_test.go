package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/toolbox-dev/toolbox/internal/testenv"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// scriptCondition answers the [name] conditions of the scripts:
// [exec:prog] is built in; [rg] says ripgrep runs here; [bwrap],
// [landlock] and [root] say the sandbox can run, and fail the script
// instead when CI requires them (testenv.Required); [cgroup_pids] says a
// cgroup v2 pids controller is delegated here (sandbox.DetectCgroup);
// [mcpfs] says the npm filesystem MCP server is installed, installing it
// where npm is (then CI requires it too).
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "rg":
		return exec.Command("rg", "--version").Run() == nil, nil
	case "bwrap":
		s := sandbox.Detect()
		return testenv.Condition(cond, s.Bwrap, s.BwrapReason)
	case "landlock":
		s := sandbox.Detect()
		return testenv.Condition(cond, s.Landlock, s.LandlockReason)
	case "root":
		return testenv.Condition(cond, os.Geteuid() == 0, "not running as root")
	case "cgroup_pids":
		// Not a sandbox requirement: machines without a delegated cgroup
		// v2 run the scripts' other half (processes refused).
		return sandbox.DetectCgroup().Pids, nil
	case "mcpfs":
		// The official filesystem MCP server from npm: where npm is
		// installed it is installed once (mcpfsInstall) and CI requires it.
		if _, err := exec.LookPath("npm"); err != nil {
			if _, err := os.Stat(filepath.Join(mcpfsDir(), MCPFSEntry)); err != nil {
				return false, nil
			}
		}
		err := mcpfsInstall()
		return testenv.Condition(cond, err == nil, fmt.Sprint(err))
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// MCPFSVar, when set, names an npm prefix that holds the official
// filesystem MCP server (MCPFSPackage); scripts see the prefix as $MCPFS.
// Unset, the prefix is a directory of the user's cache, where the [mcpfs]
// condition installs the server with npm the first time it is needed.
// MCPFSEntry is the server's entry script below the prefix.
const (
	MCPFSVar     = "TOOLBOX_MCP_FS_DIR"
	MCPFSPackage = "@modelcontextprotocol/server-filesystem@2026.8.31"
	MCPFSEntry   = "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
)

// mcpfsDir is the npm prefix of the filesystem MCP server.
func mcpfsDir() string {
	if d := os.Getenv(MCPFSVar); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "toolbox-tests", strings.ReplaceAll(strings.TrimPrefix(MCPFSPackage, "@"), "/", "_"))
}

var (
	mcpfsOnce sync.Once
	mcpfsErr  error
)

// mcpfsInstall installs MCPFSPackage into mcpfsDir unless it is there:
// into a directory beside it, renamed into place, so that a concurrent or
// interrupted install never leaves half a server. The error says why the
// server is unavailable.
func mcpfsInstall() error {
	mcpfsOnce.Do(func() {
		dir := mcpfsDir()
		if _, err := os.Stat(filepath.Join(dir, MCPFSEntry)); err == nil {
			return
		}
		if os.Getenv(MCPFSVar) != "" {
			mcpfsErr = fmt.Errorf("$%s=%s does not hold %s", MCPFSVar, dir, MCPFSEntry)
			return
		}
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			mcpfsErr = err
			return
		}
		tmp, err := os.MkdirTemp(filepath.Dir(dir), ".install-*")
		if err != nil {
			mcpfsErr = err
			return
		}
		defer os.RemoveAll(tmp)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "install", "--prefix", tmp, "--no-audit", "--no-fund", "--loglevel=error", MCPFSPackage)
		if out, err := cmd.CombinedOutput(); err != nil {
			mcpfsErr = fmt.Errorf("npm install %s: %v\n%s", MCPFSPackage, err, out)
			return
		}
		if err := os.Rename(tmp, dir); err != nil {
			if _, serr := os.Stat(filepath.Join(dir, MCPFSEntry)); serr != nil {
				mcpfsErr = err // not another install's success
			}
		}
	})
	return mcpfsErr
}
