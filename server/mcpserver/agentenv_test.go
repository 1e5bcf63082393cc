package mcpserver

import (
	"regexp"
	"strings"
	"testing"
)

// TestAgentIDs: a tool called over MCP gets AGENT_SESSION_ID and
// AGENT_CONVERSATION_ID from the connection's session (the same for every
// call of the connection) and a fresh AGENT_TURN_ID per call, as
// agents-exe sets them.
func TestAgentIDs(t *testing.T) {
	f := newFixture(t)
	f.AddTool(t, "ids", `env | grep -E '^(AGENT|TOOLBOX)_' | sort`, v1("ids"))
	e := f.start(t, func(o *Options) { o.CallerEnv = []string{"PATH=/usr/bin:/bin"} })

	vars := func() map[string]string {
		res := e.call("ids", map[string]any{})
		wantOK(t, res)
		m := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(text(res)), "\n") {
			k, v, _ := strings.Cut(line, "=")
			m[k] = v
		}
		return m
	}
	a, b := vars(), vars()
	session := a["TOOLBOX_SESSION"]
	if !strings.HasPrefix(session, "mcp-") {
		t.Fatalf("TOOLBOX_SESSION = %q", session)
	}
	for _, m := range []map[string]string{a, b} {
		if m["AGENT_SESSION_ID"] != session || m["AGENT_CONVERSATION_ID"] != session {
			t.Errorf("session ids %q, %q; want the connection's session %q", m["AGENT_SESSION_ID"], m["AGENT_CONVERSATION_ID"], session)
		}
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if !uuid.MatchString(a["AGENT_TURN_ID"]) || a["AGENT_TURN_ID"] == b["AGENT_TURN_ID"] {
		t.Errorf("turn ids %q, %q; want a fresh UUID per call", a["AGENT_TURN_ID"], b["AGENT_TURN_ID"])
	}
}
