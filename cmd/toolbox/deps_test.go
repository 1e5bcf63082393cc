package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/sandbox"
)

// goList returns the packages `go list -deps` names for pkgs.
func goList(t *testing.T, pkgs ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	return strings.Fields(string(out))
}

// TestFastBinaryDeps keeps the toolbox binary fast to start: it must not
// link the packages whose init is costly (the JSON Schema library compiles
// its meta-schemas at init) or that only lock time and plugins need, nor
// debug/buildinfo's ELF and DWARF readers and decompressors (0.7 ms of a
// run; sandbox.SameBuild reads the build information itself).
func TestFastBinaryDeps(t *testing.T) {
	banned := []string{"github.com/santhosh-tekuri/jsonschema", "github.com/hashicorp/hcl", "google.golang.org/grpc", "github.com/hashicorp/go-plugin", "github.com/modelcontextprotocol", "github.com/toolbox-dev/toolbox/compiler", "github.com/toolbox-dev/toolbox/protocol/validate", "debug/", "compress/", "internal/zstd"}
	if runtime.GOARCH == "amd64" {
		// Its seccomp programs are pre-assembled (sandbox/internal/seccompasm):
		// the library's package initialisation cost 0.3 ms.
		banned = append(banned, "github.com/elastic/go-seccomp-bpf")
	}
	for _, p := range goList(t, "github.com/toolbox-dev/toolbox/cmd/toolbox") {
		for _, b := range banned {
			if strings.HasPrefix(p, b) {
				t.Errorf("cmd/toolbox links %s", p)
			}
		}
	}
}

// TestReaperBinaryDeps keeps toolbox-reaper static and small: the sandbox
// helper runs at every start of a tool not under bwrap, and a binary that
// links cgo (net, os/user, libcap's psx through go-landlock) is linked
// dynamically, which cost 1.4 ms per start on these machines (issue 13).
func TestReaperBinaryDeps(t *testing.T) {
	banned := []string{"runtime/cgo", "net", "os/user", "kernel.org/pub/linux/libs/security/libcap", "github.com/landlock-lsm", "github.com/elastic/go-seccomp-bpf", "github.com/toolbox-dev/toolbox/sandbox"}
	for _, p := range goList(t, "github.com/toolbox-dev/toolbox/cmd/toolbox-reaper") {
		for _, b := range banned {
			if p == b || strings.HasPrefix(p, b+"/") && p != "github.com/toolbox-dev/toolbox/sandbox/helper" {
				t.Errorf("cmd/toolbox-reaper links %s", p)
			}
		}
	}
}

// TestFlowOfDependencies: data flows one way (DESIGN.md §1): the compiler
// and the launcher never import each other, and no library imports cobra.
func TestFlowOfDependencies(t *testing.T) {
	rules := map[string][]string{
		"github.com/toolbox-dev/toolbox/compiler": {"github.com/toolbox-dev/toolbox/launcher"},
		"github.com/toolbox-dev/toolbox/launcher": {"github.com/toolbox-dev/toolbox/compiler"},
		"github.com/toolbox-dev/toolbox/manifest": {"github.com/toolbox-dev/toolbox/compiler", "github.com/toolbox-dev/toolbox/launcher", "github.com/spf13/cobra"},
		"github.com/toolbox-dev/toolbox/protocol": {"github.com/toolbox-dev/toolbox/compiler", "github.com/toolbox-dev/toolbox/launcher", "github.com/toolbox-dev/toolbox/manifest", "github.com/spf13/cobra"},
		"github.com/toolbox-dev/toolbox/sandbox":  {"github.com/toolbox-dev/toolbox/compiler", "github.com/toolbox-dev/toolbox/launcher", "github.com/spf13/cobra"},
		"github.com/toolbox-dev/toolbox/plugins":  {"github.com/toolbox-dev/toolbox/compiler", "github.com/toolbox-dev/toolbox/launcher", "github.com/spf13/cobra"},
		"github.com/toolbox-dev/toolbox/runspec":  {"github.com/toolbox-dev/toolbox/compiler", "github.com/toolbox-dev/toolbox/launcher", "github.com/spf13/cobra"},
		"github.com/toolbox-dev/toolbox/probe":    {"github.com/toolbox-dev/toolbox/compiler", "github.com/toolbox-dev/toolbox/launcher", "github.com/spf13/cobra", "google.golang.org/grpc"},
	}
	for pkg, never := range rules {
		for _, dep := range goList(t, pkg) {
			for _, n := range never {
				if dep == n || strings.HasPrefix(dep, n+"/") {
					t.Errorf("%s imports %s", pkg, dep)
				}
			}
		}
	}
}

// TestProgramsStatic: the three programs build with CGO_ENABLED=0, as the
// README installs them, into static executables. A dynamically linked
// toolbox pays the dynamic loader and the cgo runtime at every start of a
// tool (~0.6 ms; DESIGN.md §7), so a dependency that needs cgo must fail
// here rather than silently slow every call. That the README installs
// them so is TestInstallsStatic's.
func TestProgramsStatic(t *testing.T) {
	toolbox, _ := programs(t)
	dir := filepath.Dir(toolbox)
	for _, name := range []string{"toolbox", "toolbox-core", "toolbox-reaper"} {
		f, err := elf.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				t.Errorf("%s is dynamically linked (program header %v)", name, p.Type)
			}
		}
		f.Close()
	}
	if out, err := exec.Command(toolbox, "--version").CombinedOutput(); err != nil {
		t.Fatalf("static toolbox --version: %v\n%s", err, out)
	}
}

// TestInstallsStatic: every command that builds or installs the programs
// (./cmd/... or .../cmd/...@version), in the README, the default toolbox's
// README and the fix toolbox prints when its binaries do not belong
// together, sets CGO_ENABLED=0: the static build TestProgramsStatic checks
// and DESIGN.md §7's figures assume (without it go links them against
// libc).
func TestInstallsStatic(t *testing.T) {
	for _, file := range []string{"README.md", "toolboxes/default/README.md"} {
		data, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(file)))
		if err != nil {
			t.Fatal(err)
		}
		if bad := dynamicInstalls(string(data)); len(bad) > 0 {
			t.Errorf("%s builds toolbox without CGO_ENABLED=0 (put it before go):\n%s", file, strings.Join(bad, "\n"))
		}
	}
	if bad := dynamicInstalls(sandbox.InstallFix); len(bad) > 0 {
		t.Errorf("sandbox.InstallFix builds toolbox without CGO_ENABLED=0:\n%s", strings.Join(bad, "\n"))
	}
}

// dynamicInstalls returns each go build or go install of the programs in
// text (one per && or ; separated command of a line, in code or prose)
// not preceded by CGO_ENABLED=0.
func dynamicInstalls(text string) []string {
	var bad []string
	for _, line := range strings.Split(text, "\n") {
		for _, part := range strings.FieldsFunc(line, func(r rune) bool { return r == '&' || r == ';' || r == '`' || r == '(' }) {
			fields := strings.Fields(part)
			for i, f := range fields {
				if f != "go" || i+1 >= len(fields) || (fields[i+1] != "build" && fields[i+1] != "install") {
					continue
				}
				if !strings.Contains(part, "/cmd/...") {
					continue
				}
				if i == 0 || fields[i-1] != "CGO_ENABLED=0" {
					bad = append(bad, strings.TrimSpace(part))
				}
			}
		}
	}
	return bad
}
