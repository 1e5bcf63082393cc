package compiler

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/toolbox-dev/toolbox/manifest"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/sandbox"
)

// ProcessDecl is the builtin "process" block (background commands,
// DESIGN.md §5): exactly one of a sandbox block (Sandbox set) or
// unconfined = true.
//
//	builtin "process" {
//	  sandbox {
//	    fs {
//	      read  = ["."]      # relative to the toolbox file's directory
//	      write = ["out"]
//	    }
//	    net = "none"         # host (default) | none
//	    tmp = "shared"       # shared (default) | private
//	  }
//	}
//
// The sandbox block takes the fields of a tool's runtime.sandbox, with the
// same meaning and the same refusal rules (net "none" and tmp "private"
// need bwrap). A limits block (D5) belongs beside it once the toolbox
// file has one; it is not read yet.
type ProcessDecl struct {
	Unconfined bool
	// Sandbox has its defaults filled in (net "host", tmp "shared"); its
	// paths are as written, relative to Config.Dir unless absolute.
	Sandbox *protocol.Sandbox
	// Range is the block's, for refusals at lock time.
	Range hcl.Range
}

const processBlock = `builtin "process"`

// processFix is the fix of a builtin "process" block that says neither how
// to confine its commands nor that they are unconfined.
const processFix = `confine the commands: sandbox { fs { read = ["."] write = ["."] } net = "none" } (paths relative to this file), or write unconfined = true to run them unsandboxed as the user of toolbox serve or mcp`

var (
	processSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "unconfined"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "sandbox"}, {Type: "limits"}},
	}
	processSandboxSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "net"}, {Name: "tmp"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "fs"}},
	}
	processFSSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "read"}, {Name: "write"}},
	}
)

// processBuiltin reads a builtin "process" block into l.cfg.Process.
func (l *loader) processBuiltin(b *hcl.Block, block string) {
	if prev := l.cfg.Process; prev != nil {
		l.add(at(b.DefRange, processBlock, fmt.Sprintf("declared twice, first at %s:%d:%d", prev.Range.Filename, prev.Range.Start.Line, prev.Range.Start.Column), "keep one builtin \"process\" block"))
		return
	}
	d := &ProcessDecl{Range: b.DefRange}
	l.cfg.Process = d
	c, hd := b.Body.Content(processSchema)
	l.diags = append(l.diags, fromHCL(hd, processBlock)...)
	if hd.HasErrors() {
		return
	}
	if a := c.Attributes["unconfined"]; a != nil {
		if v, ok := l.boolean(a, processBlock); ok {
			d.Unconfined = v
		}
	}
	if lim, _ := l.limitsBlock(c.Blocks, block); lim != nil {
		if l.cfg.BuiltinLimits == nil {
			l.cfg.BuiltinLimits = map[string]*LimitsDecl{}
		}
		l.cfg.BuiltinLimits[b.Labels[0]] = lim
	}
	sandboxes := blocksOf(c.Blocks, "sandbox")
	switch n := len(sandboxes); {
	case n > 1:
		l.add(at(sandboxes[1].DefRange, processBlock, "sandbox is declared twice", "keep one sandbox block"))
		return
	case n == 1 && d.Unconfined:
		l.add(at(sandboxes[0].DefRange, processBlock, "both a sandbox block and unconfined = true", "keep the sandbox block to confine the commands, or remove it to run them unconfined"))
		return
	case n == 0 && !d.Unconfined:
		l.add(at(b.DefRange, processBlock, "background commands need a sandbox declaration or unconfined = true", processFix))
		return
	case n == 1:
		d.Sandbox = l.sandboxBlock(sandboxes[0], processBlock)
	}
}

// blocksOf are the blocks of type typ among blocks, in order.
func blocksOf(blocks hcl.Blocks, typ string) hcl.Blocks {
	var out hcl.Blocks
	for _, b := range blocks {
		if b.Type == typ {
			out = append(out, b)
		}
	}
	return out
}

// sandboxBlock reads a sandbox block of the toolbox file (builtin
// "process", mcp_server), the fields of a tool's runtime.sandbox; block
// names the enclosing block in diagnostics. nil when it has errors
// (reported).
func (l *loader) sandboxBlock(b *hcl.Block, block string) *protocol.Sandbox {
	c, hd := b.Body.Content(processSandboxSchema)
	l.diags = append(l.diags, fromHCL(hd, block)...)
	if hd.HasErrors() {
		return nil
	}
	sb := &protocol.Sandbox{Net: "host", Tmp: "shared"}
	ok := true
	for _, f := range []struct {
		name    string
		dst     *string
		allowed []string
	}{{"net", &sb.Net, []string{"host", "none"}}, {"tmp", &sb.Tmp, []string{"shared", "private"}}} {
		a := c.Attributes[f.name]
		if a == nil {
			continue
		}
		v, vok := l.str(a, block)
		switch {
		case !vok:
			ok = false
		case v != f.allowed[0] && v != f.allowed[1]:
			l.add(at(a.Expr.Range(), block, fmt.Sprintf("sandbox.%s is %q", f.name, v), fmt.Sprintf("write %q or %q", f.allowed[0], f.allowed[1])))
			ok = false
		default:
			*f.dst = v
		}
	}
	if len(c.Blocks) > 1 {
		l.add(at(c.Blocks[1].DefRange, block, "sandbox.fs is declared twice", "keep one fs block"))
		return nil
	}
	if len(c.Blocks) == 1 {
		fc, hd := c.Blocks[0].Body.Content(processFSSchema)
		l.diags = append(l.diags, fromHCL(hd, block)...)
		if hd.HasErrors() {
			return nil
		}
		sb.FS = &protocol.FS{}
		for _, f := range []struct {
			name string
			dst  *[]string
		}{{"read", &sb.FS.Read}, {"write", &sb.FS.Write}} {
			a := fc.Attributes[f.name]
			if a == nil {
				continue
			}
			list, lok := l.strList(a, block)
			if !lok {
				ok = false
				continue
			}
			for _, p := range list {
				if _, named, err := protocol.WorkspacePath(p); err != nil {
					l.add(at(a.Expr.Range(), block, fmt.Sprintf("sandbox.fs.%s: %v", f.name, err), "write "+protocol.WorkspaceToken+" or "+protocol.WorkspaceToken+"/RELATIVE/PATH"))
					ok = false
					continue
				} else if named {
					continue // the workspace is chosen at each call
				}
				if _, err := os.Stat(l.resolve(p)); err != nil {
					l.add(at(a.Expr.Range(), block, fmt.Sprintf("sandbox.fs.%s: path %q (%s): %v", f.name, p, l.resolve(p), unwrapPathError(err)), "create it, or fix the path (relative paths are relative to the toolbox file)"))
					ok = false
				}
			}
			*f.dst = list
		}
	}
	if !ok {
		return nil
	}
	return sb
}

// resolveProcess turns the builtin "process" declaration into the lock's
// ProcessBuiltin: the mechanism the operator's request gives for its
// sandbox (sandbox.Resolve, as for a tool), paths relative to the lock's
// directory. A sandbox no mechanism here can honour, or any sandbox under
// mechanism "none", is an error naming the field and the fix: background
// commands never run weaker than declared.
func resolveProcess(cfg *Config, mech string) (*manifest.ProcessBuiltin, error) {
	d := cfg.Process
	if d == nil {
		return nil, nil
	}
	if d.Unconfined {
		return &manifest.ProcessBuiltin{Unconfined: true, Mechanism: string(sandbox.None)}, nil
	}
	fail := func(msg, fix string, err error) error {
		return &Diagnostic{File: d.Range.Filename, Line: d.Range.Start.Line, Col: d.Range.Start.Column, Block: processBlock, Msg: msg, Fix: fix, Err: err}
	}
	sb := d.Sandbox
	if sb == nil {
		return nil, fail("no sandbox", processFix, nil) // Load reported why
	}
	m, out, err := resolveDeclaredSandbox(processBlock, sb, mech, fail)
	if err != nil {
		return nil, err
	}
	return &manifest.ProcessBuiltin{Mechanism: string(m), Sandbox: out}, nil
}

// resolveDeclaredSandbox resolves a sandbox block of the toolbox file
// (builtin "process", mcp_server, named by block) as a tool's
// runtime.sandbox is resolved: the mechanism the operator's request mech
// gives for the declared fields (sandbox.Resolve), or the refusal, with
// "runtime." left out of the field it names; any sandbox under "none" is
// refused. It returns the sandbox as the lock keeps it (lockPaths). fail
// locates an error at the block.
func resolveDeclaredSandbox(block string, sb *protocol.Sandbox, mech string, fail func(msg, fix string, err error) error) (sandbox.Mechanism, *protocol.Sandbox, error) {
	if mech == string(sandbox.None) {
		return "", nil, fail(`the toolbox file sets sandbox = "none" but `+block+` declares a sandbox`,
			`set sandbox = "auto" (or "bwrap", "landlock"), or replace the sandbox block by unconfined = true`, nil)
	}
	need := sandbox.Need{Sandbox: true, NetNone: sb.Net == "none", TmpPrivate: sb.Tmp == "private"}
	if sb.FS != nil {
		need.HasReadWrite = len(sb.FS.Write) > 0
	}
	m, err := sandbox.Resolve(sandbox.Mechanism(mech), need)
	if err != nil {
		var r *sandbox.RefusalError
		if errors.As(err, &r) {
			rc := *r
			rc.Field, rc.Block = strings.TrimPrefix(rc.Field, "runtime."), "" // the diagnostic names the block
			return "", nil, fail(rc.Error(), rc.Fix, &rc)
		}
		return "", nil, fail(err.Error(), "", err)
	}
	out := &protocol.Sandbox{Net: sb.Net, Tmp: sb.Tmp}
	if sb.FS != nil {
		out.FS = &protocol.FS{Read: lockPaths(sb.FS.Read), Write: lockPaths(sb.FS.Write)}
	}
	return m, out, nil
}

// lockPaths writes declared paths as the lock keeps them: cleaned slash
// paths, relative ones still relative (to the toolbox file's directory,
// which is the lock's).
func lockPaths(paths []string) []string {
	if paths == nil {
		return nil
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.ToSlash(filepath.Clean(p))
	}
	return out
}
