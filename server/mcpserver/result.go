package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbox-dev/toolbox/launcher"
	"github.com/toolbox-dev/toolbox/protocol"
	"github.com/toolbox-dev/toolbox/server/mcpserver/mcpnames"
)

// Failure is the structured content of every tool error (isError true):
// a tool that exited non-zero or timed out, a call refused before launch
// (stale lock, unknown name), bad arguments, a process operation that
// failed. The same facts are in the error's text content.
type Failure struct {
	// Tool is the locked tool (the backend, for a capability); Capability
	// the capability called, if one was.
	Tool       string `json:"tool,omitempty"`
	Backend    string `json:"backend,omitempty"`
	Capability string `json:"capability,omitempty"`
	// ExitCode is the tool's exit code, 124 for a timeout, or the code
	// `toolbox run` would use for a refusal (125 refused or bad arguments,
	// 126 not executable, 127 not found); 0 when nothing ran.
	ExitCode int  `json:"exit_code"`
	TimedOut bool `json:"timed_out,omitempty"`
	// Error says what went wrong, and the fix when there is one.
	Error string `json:"error"`
	// Output is what the tool printed on stdout (text, capped) before it
	// failed; StderrTail the end of its stderr.
	Output     string `json:"output,omitempty"`
	StderrTail string `json:"stderr_tail,omitempty"`
}

// EventsResult is the structured content of a jsonl tool's result and of a
// stream tool's: its events (invalid ones carry the raw line and the
// validation error), and for a stream how many came before the ones kept.
type EventsResult struct {
	Tool       string           `json:"tool"`
	Backend    string           `json:"backend,omitempty"`
	Capability string           `json:"capability,omitempty"`
	ExitCode   int              `json:"exit_code"`
	Events     []launcher.Event `json:"events"`
	// Count is every event the tool emitted; Elided = Count - len(Events).
	Count  int `json:"count"`
	Elided int `json:"elided"`
	// Truncated says the tool printed more than a result holds
	// (Options.MaxTextBytes): the first events of a oneshot, the last of a
	// stream are kept.
	Truncated bool `json:"truncated,omitempty"`
	// OutputCut: see launcher.Result.OutputCut.
	OutputCut bool `json:"output_cut,omitempty"`
}

// nonNil is events, or an empty list for none: EventsResult.Events is
// an array in JSON, never null.
func nonNil(events []launcher.Event) []launcher.Event {
	if events == nil {
		return []launcher.Event{}
	}
	return events
}

// DefaultMaxTextBytes bounds a text result (Options.MaxTextBytes).
const DefaultMaxTextBytes = 1 << 20

// failure is a tool error with f as its structured content.
func failure(f Failure) *mcp.CallToolResult {
	var b strings.Builder
	b.WriteString(f.Error)
	if f.ExitCode != 0 {
		fmt.Fprintf(&b, " (exit code %d)", f.ExitCode)
	}
	if f.Output != "" {
		b.WriteString("\n\nstdout:\n")
		b.WriteString(f.Output)
	}
	if f.StderrTail != "" {
		b.WriteString("\n\nstderr (tail):\n")
		b.WriteString(f.StderrTail)
	}
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: b.String()}},
		StructuredContent: f,
	}
}

// errorResult is the tool error of an error returned before or instead of
// a run (launcher or supervisor), with the exit code launcher.ExitCode
// gives it when it is a launcher error.
func errorResult(tool string, err error) *mcp.CallToolResult {
	f := Failure{Tool: tool, Error: err.Error()}
	var re *launcher.RefusedError
	var ae *launcher.ArgError
	if errors.As(err, &re) || errors.As(err, &ae) || errors.Is(err, launcher.ErrNotFound) || errors.Is(err, launcher.ErrNotExecutable) {
		f.ExitCode = launcher.ExitCode(err)
	}
	return failure(f)
}

// structured is a successful result whose structured content is v and
// whose text content is v's JSON (what the spec asks of a tool that
// returns structured content).
func structured(v any) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: jsonText(v)}},
		StructuredContent: v,
	}
}

// jsonText is v as compact JSON, without HTML escaping.
func jsonText(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%q", err.Error())
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// runResult turns a finished oneshot (or plugin stream) run into a result:
// a failure when it exited non-zero or timed out; else its message, text,
// lines, events (structured) or binary output (an embedded resource).
func (s *Server) runResult(res *launcher.Result, runErr error) *mcp.CallToolResult {
	if res.MCPResult != nil && !res.TimedOut && !res.Canceled && runErr == nil {
		if out := s.passOn(res); out != nil {
			return out
		}
	}
	if res.TimedOut || res.ExitCode != 0 || runErr != nil {
		f := Failure{
			Tool: res.Tool, Backend: res.Backend, Capability: res.Capability,
			ExitCode: res.ExitCode, TimedOut: res.TimedOut, StderrTail: res.StderrTail,
			Error: fmt.Sprintf("%s failed", res.Tool),
		}
		switch {
		case res.TimedOut:
			f.ExitCode = launcher.ExitTimeout
			f.Error = fmt.Sprintf("%s timed out after %s and was stopped", res.Tool, res.Elapsed.Round(time.Millisecond))
		case res.Canceled:
			f.Error = fmt.Sprintf("%s was stopped: the call was canceled", res.Tool)
		case runErr != nil:
			f.Error = fmt.Sprintf("running %s: %v", res.Tool, runErr)
		}
		switch {
		case res.Events != nil:
			f.Output = s.capText(jsonText(res.Events))
		case !res.Binary:
			f.Output = s.capText(resultText(res))
		}
		return failure(f)
	}
	var out *mcp.CallToolResult
	switch {
	case res.Message != "":
		out = s.text(res.Message)
	case res.Events != nil || res.Framing == protocol.FramingJSONL:
		// A jsonl tool's result is always structured (its output schema
		// says so), no events included.
		return structured(EventsResult{
			Tool: res.Tool, Backend: res.Backend, Capability: res.Capability,
			Events: nonNil(res.Events), Count: len(res.Events), Truncated: res.Truncated,
		})
	case res.Binary:
		out = &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI:      fmt.Sprintf("toolbox://result/%s/%d", mcpnames.MCPName(res.Tool), s.seq.Add(1)),
			MIMEType: res.MediaType,
			Blob:     res.Output,
		}}}}
	default:
		out = s.text(resultText(res))
	}
	if res.Truncated {
		out.Content = append(out.Content, &mcp.TextContent{Text: fmt.Sprintf("[the tool printed %d bytes; only what fits in %d bytes of result was kept]", res.StdoutBytes, s.opts.MaxTextBytes)})
	}
	if res.OutputCut {
		out.Content = append(out.Content, &mcp.TextContent{Text: "[" + launcher.OutputCutNote + "]"})
	}
	if res.Capability != "" {
		out.Content = append(out.Content, &mcp.TextContent{Text: servedBy(res.Capability, res.Backend)})
	}
	return out
}

// passOn is the answer of an MCP tool's server as it came (its content,
// structured content and isError), each text capped at MaxTextBytes; nil
// when it does not decode.
func (s *Server) passOn(res *launcher.Result) *mcp.CallToolResult {
	out := new(mcp.CallToolResult)
	if err := json.Unmarshal(res.MCPResult, out); err != nil {
		s.log.Warn("an MCP backend's result does not decode", "tool", res.Tool, "error", err)
		return nil
	}
	for _, c := range out.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			t.Text = s.capText(t.Text)
		}
	}
	if out.Content == nil {
		out.Content = []mcp.Content{}
	}
	if res.Capability != "" {
		out.Content = append(out.Content, &mcp.TextContent{Text: servedBy(res.Capability, res.Backend)})
	}
	return out
}

// servedBy names the backend that served a capability (the v2 spec: every
// result carries the backend that served it).
func servedBy(capability, backend string) string {
	return fmt.Sprintf("[capability %q was served by backend %q]", capability, backend)
}

// resultText is a text result's stdout: the lines joined, or the output.
func resultText(res *launcher.Result) string {
	if res.Lines != nil {
		return strings.Join(res.Lines, "\n")
	}
	return string(res.Output)
}

// text is a text result, capped at MaxTextBytes.
func (s *Server) text(t string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s.capText(t)}}}
}

// capText cuts t to MaxTextBytes on a character boundary and says so.
func (s *Server) capText(t string) string {
	max := s.opts.MaxTextBytes
	if len(t) <= max {
		return t
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(t[cut]) {
		cut--
	}
	return t[:cut] + fmt.Sprintf("\n[output truncated: the first %d of %d bytes are shown]", cut, len(t))
}
