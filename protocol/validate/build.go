package validate

import (
	"github.com/toolbox-dev/toolbox/protocol"

	"encoding/json"
	"strconv"
)

// buildDescribe converts a validated document into a Describe. It reads the
// decoded value, not the bytes again, because encoding/json matches struct
// fields case-insensitively: a key "ARGS" that the schema ignored as unknown
// would otherwise replace the validated "args". Only exact keys are read.
// v2-only keys are read only when v2 is set.
func buildDescribe(obj map[string]any, v2 bool) *protocol.Describe {
	d := &protocol.Describe{
		Slug:            str(obj, "slug"),
		Description:     str(obj, "description"),
		Args:            buildArgs(obj["args"]),
		OutputMediaType: str(obj, "output-media-type"),
	}
	if n, ok := obj["protocol"].(json.Number); ok {
		d.Protocol, _ = strconv.Atoi(n.String())
	}
	if er, ok := obj["empty-result"].(map[string]any); ok {
		d.EmptyResult = &protocol.EmptyResult{Tag: str(er, "tag"), Contents: str(er, "contents")}
	}
	if !v2 {
		return d
	}
	d.Check, _ = obj["check"].(bool)
	if p, ok := obj["process"].(map[string]any); ok {
		d.Process = buildProcess(p)
	}
	if r, ok := obj["runtime"].(map[string]any); ok {
		d.Runtime = buildRuntime(r)
	}
	// Empty lists and maps stay nil: they marshal as absent (omitempty), so
	// that a marshalled Describe parses back to the same value.
	if cmds, ok := obj["commands"].([]any); ok && len(cmds) > 0 {
		d.Commands = make([]protocol.Command, 0, len(cmds))
		for _, c := range cmds {
			m, _ := c.(map[string]any)
			d.Commands = append(d.Commands, protocol.Command{
				Name:        str(m, "name"),
				Description: str(m, "description"),
				Args:        buildArgs(m["args"]),
			})
		}
	}
	return d
}

// buildArgs never returns nil, so that an empty list marshals as [] (args is
// required) and a Describe round-trips.
func buildArgs(v any) []protocol.Arg {
	list, _ := v.([]any)
	args := make([]protocol.Arg, 0, len(list))
	for _, a := range list {
		m, _ := a.(map[string]any)
		args = append(args, protocol.Arg{
			Name:        str(m, "name"),
			Description: str(m, "description"),
			Type:        str(m, "type"),
			BackingType: str(m, "backing_type"),
			Arity:       str(m, "arity"),
			Mode:        str(m, "mode"),
		})
	}
	return args
}

func buildProcess(m map[string]any) *protocol.Process {
	p := &protocol.Process{Mode: str(m, "mode")}
	if o, ok := m["output"].(map[string]any); ok {
		p.Output = &protocol.Output{Framing: str(o, "framing"), Event: rawJSON(o, "event")}
	}
	if i, ok := m["input"].(map[string]any); ok {
		p.Input = &protocol.Input{Framing: str(i, "framing"), Event: rawJSON(i, "event")}
	}
	if r, ok := m["ready"].(map[string]any); ok {
		p.Ready = &protocol.Ready{Kind: str(r, "kind"), Match: str(r, "match")}
	}
	if dg, ok := m["digest"].(map[string]any); ok {
		p.Digest = &protocol.Digest{Per: str(dg, "per")}
		if n, ok := dg["n"].(json.Number); ok {
			p.Digest.N, _ = strconv.Atoi(n.String())
		}
	}
	return p
}

func buildRuntime(m map[string]any) *protocol.Runtime {
	r := &protocol.Runtime{
		Envdir: str(m, "envdir"),
		Rundir: str(m, "rundir"),
		OnExit: str(m, "on_exit"),
	}
	if ra, ok := m["run_as"].(map[string]any); ok {
		r.RunAs = &protocol.RunAs{User: str(ra, "user"), Group: str(ra, "group")}
	}
	if sb, ok := m["sandbox"].(map[string]any); ok {
		r.Sandbox = &protocol.Sandbox{Net: str(sb, "net"), Tmp: str(sb, "tmp")}
		if fs, ok := sb["fs"].(map[string]any); ok {
			r.Sandbox.FS = &protocol.FS{Read: strs(fs, "read"), Write: strs(fs, "write")}
		}
	}
	if env, ok := m["environment"].(map[string]any); ok && len(env) > 0 {
		r.Environment = make(map[string]string, len(env))
		for k, v := range env {
			r.Environment[k], _ = v.(string)
		}
	}
	if n, ok := m["concurrency"].(json.Number); ok {
		r.Concurrency, _ = strconv.Atoi(n.String())
	}
	if t, ok := m["timeout"].(map[string]any); ok {
		r.Timeout = &protocol.Timeout{Start: seconds(t, "start"), Stop: seconds(t, "stop"), Idle: seconds(t, "idle")}
	}
	switch c := m["cancel"].(type) {
	case string:
		r.Cancel = &protocol.Cancel{Signal: c}
	case map[string]any:
		r.Cancel = &protocol.Cancel{Send: rawJSON(c, "send")}
	}
	return r
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func strs(m map[string]any, key string) []string {
	list, ok := m[key].([]any)
	if !ok || len(list) == 0 {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, v := range list {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

func seconds(m map[string]any, key string) *float64 {
	n, ok := m[key].(json.Number)
	if !ok {
		return nil
	}
	f, err := n.Float64()
	if err != nil {
		return nil
	}
	return &f
}

// rawJSON re-encodes a decoded value; numbers keep their text (json.Number).
func rawJSON(m map[string]any, key string) json.RawMessage {
	v, ok := m[key]
	if !ok {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
