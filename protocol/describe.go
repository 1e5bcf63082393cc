package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Describe is the document a tool prints for `TOOL describe` (DESIGN.md §2).
// Protocol 0 or 1 is a v1 document; 2 opts in to the v2 keys (Process,
// Runtime, Commands, Check). Unknown keys are ignored, as v1 requires.
type Describe struct {
	// Protocol is 1 for v1 documents (also when the key is absent) and 2 for v2.
	Protocol int `json:"protocol,omitempty"`
	// Slug is the tool's own name for itself.
	Slug        string `json:"slug"`
	Description string `json:"description"`
	// Args is required by v1 and may be empty.
	Args []Arg `json:"args"`
	// EmptyResult says what an exactly empty stdout becomes; nil = nothing.
	EmptyResult     *EmptyResult `json:"empty-result,omitempty"`
	OutputMediaType string       `json:"output-media-type,omitempty"`
	// Check says that `TOOL check` is a cheap read-only self-test (v2).
	Check    bool      `json:"check,omitempty"`
	Process  *Process  `json:"process,omitempty"`
	Runtime  *Runtime  `json:"runtime,omitempty"`
	Commands []Command `json:"commands,omitempty"`
}

// Arg is one declared argument. All six fields are required by v1.
// BackingType values other than the four named below are treated as
// "string" everywhere (validation, encoding and InputSchema).
type Arg struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Type is free text shown to the model.
	Type string `json:"type"`
	// BackingType becomes the JSON Schema type of the argument (string,
	// integer, number, boolean).
	BackingType string `json:"backing_type"`
	// Arity is AritySingle (required) or ArityOptional.
	Arity string `json:"arity"`
	// Mode is one of the Mode* constants.
	Mode string `json:"mode"`
}

// Backing types that change validation and rendering (DESIGN.md §2).
const (
	BackingString  = "string"
	BackingInteger = "integer"
	BackingNumber  = "number"
	BackingBoolean = "boolean"
)

// Arities and modes of v1 (DESIGN.md §2).
const (
	AritySingle   = "single"
	ArityOptional = "optional"

	ModePositional    = "positional"
	ModeDashDashSpace = "dashdashspace"
	ModeDashDashEqual = "dashdashequal"
	ModeStdin         = "stdin"
	ModeEnv           = "env"
)

// EmptyResult is v1's `empty-result`: Tag "DoNothing" or "AddMessage" (with
// Contents, the message an exactly empty stdout becomes).
type EmptyResult struct {
	Tag      string `json:"tag"`
	Contents string `json:"contents,omitempty"`
}

// Empty-result tags of v1 (DESIGN.md §2).
const (
	EmptyDoNothing  = "DoNothing"
	EmptyAddMessage = "AddMessage"
)

// MarshalJSON writes contents whenever Tag is AddMessage, even when it is
// empty, because the schema requires it there; other tags omit it when empty.
func (e EmptyResult) MarshalJSON() ([]byte, error) {
	if e.Tag == EmptyAddMessage {
		return json.Marshal(struct {
			Tag      string `json:"tag"`
			Contents string `json:"contents"`
		}{e.Tag, e.Contents})
	}
	type plain EmptyResult // no methods: avoids recursion
	return json.Marshal(plain(e))
}

// Process is v2's `process` object.
type Process struct {
	// Mode is ProcessOneshot (default), ProcessStream or ProcessService.
	Mode   string  `json:"mode,omitempty"`
	Output *Output `json:"output,omitempty"`
	Input  *Input  `json:"input,omitempty"`
	Ready  *Ready  `json:"ready,omitempty"`
	Digest *Digest `json:"digest,omitempty"`
}

// Process modes and output framings of v2 (DESIGN.md §2, §5).
const (
	ProcessOneshot = "oneshot"
	ProcessStream  = "stream"
	ProcessService = "service"

	FramingJSONL  = "jsonl"
	FramingLines  = "lines"
	FramingChunks = "chunks"
)

// Output is how stdout is framed: Framing "jsonl" (v2 default), "lines" or
// "chunks"; Event is a JSON Schema every jsonl line is validated against.
type Output struct {
	Framing string          `json:"framing,omitempty"`
	Event   json.RawMessage `json:"event,omitempty"`
}

// Input is how events are written to a service's stdin: Framing "jsonl" or "lines".
type Input struct {
	Framing string          `json:"framing,omitempty"`
	Event   json.RawMessage `json:"event,omitempty"`
}

// Ready says when a started service is up: Kind "line" (Match is a regexp
// tested on each stdout line), "exit" or "immediate".
type Ready struct {
	Kind  string `json:"kind"`
	Match string `json:"match,omitempty"`
}

// Digest says how a service's events are grouped into mail: Per "round",
// "events" (every N events) or "seconds" (every N seconds).
type Digest struct {
	Per string `json:"per"`
	N   int    `json:"n,omitempty"`
}

// Runtime is v2's `runtime` object. Every field is optional; absent means
// v1 behaviour. Relative paths are relative to the tool's directory.
type Runtime struct {
	RunAs       *RunAs            `json:"run_as,omitempty"`
	Sandbox     *Sandbox          `json:"sandbox,omitempty"`
	Envdir      string            `json:"envdir,omitempty"`
	Environment map[string]string `json:"environment,omitempty"`
	Rundir      string            `json:"rundir,omitempty"`
	Timeout     *Timeout          `json:"timeout,omitempty"`
	// OnExit is "report", "restart" or "fail".
	OnExit string `json:"on_exit,omitempty"`
	// Cancel is "SIGTERM", "SIGINT" or {"send": EVENT}.
	Cancel *Cancel `json:"cancel,omitempty"`
	// Concurrency (plugins only) is how many calls one process of the
	// plugin serves at once when `toolbox mcp` or `serve` keeps it warm:
	// 1 to MaxConcurrency; 0 (absent) means 1. An operator may lower it.
	Concurrency int `json:"concurrency,omitempty"`
}

// MaxConcurrency bounds runtime.concurrency: more calls at once than this
// in one process is a mistake, not a need.
const MaxConcurrency = 256

// RunAs names the user and group a tool runs as (names or numeric ids).
type RunAs struct {
	User  string `json:"user,omitempty"`
	Group string `json:"group,omitempty"`
}

// Sandbox is what a tool may touch (DESIGN.md §2, §6).
type Sandbox struct {
	FS *FS `json:"fs,omitempty"`
	// Net is "host" (default) or "none".
	Net string `json:"net,omitempty"`
	// Tmp is "shared" (default) or "private".
	Tmp string `json:"tmp,omitempty"`
}

// FS lists the paths a sandboxed tool may read and write.
type FS struct {
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
}

// Timeout holds the runtime timeouts in seconds (0 to 366 days); nil means
// unset.
type Timeout struct {
	Start *float64 `json:"start,omitempty"`
	// Stop is the grace between the cancel signal and SIGKILL.
	Stop *float64 `json:"stop,omitempty"`
	Idle *float64 `json:"idle,omitempty"`
}

// Cancel is either a signal name (Signal: "SIGTERM" or "SIGINT") or an event
// written to the process's stdin (Send, raw JSON). Exactly one is set in a
// parsed document. It marshals as the string or as {"send": EVENT}.
type Cancel struct {
	Signal string
	Send   json.RawMessage
}

// Cancel signals of v2 (DESIGN.md §2).
const (
	SignalTerm = "SIGTERM"
	SignalInt  = "SIGINT"
)

// MarshalJSON writes the signal name, or {"send": EVENT} when Send is set.
// A Cancel with neither set is an error.
func (c Cancel) MarshalJSON() ([]byte, error) {
	switch {
	case len(c.Send) > 0 && c.Signal != "":
		return nil, errors.New("marshaling cancel: both a signal and a send event are set")
	case len(c.Send) > 0:
		return json.Marshal(struct {
			Send json.RawMessage `json:"send"`
		}{c.Send})
	case c.Signal != "":
		return json.Marshal(c.Signal)
	}
	return nil, errors.New("marshaling cancel: neither a signal nor a send event is set")
}

// UnmarshalJSON reads a signal name or {"send": EVENT}. It checks the shape
// only; ParseDescribe also checks the signal name and the event.
func (c *Cancel) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var sig string
		if err := json.Unmarshal(data, &sig); err != nil {
			return fmt.Errorf("reading cancel: %w", err)
		}
		*c = Cancel{Signal: sig}
		return nil
	}
	var obj struct {
		Send json.RawMessage `json:"send"`
	}
	if err := json.Unmarshal(data, &obj); err != nil {
		return fmt.Errorf("reading cancel: want %q, %q or {\"send\": EVENT}: %w", SignalTerm, SignalInt, err)
	}
	if len(obj.Send) == 0 {
		return fmt.Errorf("reading cancel: want %q, %q or {\"send\": EVENT}, got %s", SignalTerm, SignalInt, data)
	}
	*c = Cancel{Send: obj.Send}
	return nil
}

// Command is one entry of v2's `commands`: one binary, several tools named
// slug.name.
type Command struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Args        []Arg  `json:"args"`
}

// CheckResult is what `TOOL check` prints.
type CheckResult struct {
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
	Fix    string `json:"fix,omitempty"`
}

// EffectiveProtocol is 2 for a v2 document and 1 otherwise (an absent
// "protocol" key means v1). A nil Describe is v1.
func (d *Describe) EffectiveProtocol() int {
	if d != nil && d.Protocol == 2 {
		return 2
	}
	return 1
}

// Framing is how the tool's stdout is framed: "" for v1 (the result is the
// raw bytes), otherwise process.output.framing, which defaults to
// FramingJSONL in v2.
func (d *Describe) Framing() string {
	if d.EffectiveProtocol() != 2 {
		return ""
	}
	if d.Process != nil && d.Process.Output != nil && d.Process.Output.Framing != "" {
		return d.Process.Output.Framing
	}
	return FramingJSONL
}

// Mode is process.mode, ProcessOneshot when absent and always for v1.
func (d *Describe) Mode() string {
	if d.EffectiveProtocol() == 2 && d.Process != nil && d.Process.Mode != "" {
		return d.Process.Mode
	}
	return ProcessOneshot
}

// CommandArgs returns the args of the command named name, or the top-level
// args when name is "" (the tool called by its bare slug). ok is false when
// no command has that name.
func (d *Describe) CommandArgs(name string) (args []Arg, ok bool) {
	if d == nil {
		return nil, false
	}
	if name == "" {
		return d.Args, true
	}
	for _, c := range d.Commands {
		if c.Name == name {
			return c.Args, true
		}
	}
	return nil, false
}
