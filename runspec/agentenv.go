package runspec

import (
	"crypto/rand"
	"fmt"
)

// The session variables agents-exe always sets for a tool's run (issue 12
// E): v1 tools read them to key caches, logs or scratch files by session.
const (
	AgentSessionID      = "AGENT_SESSION_ID"
	AgentConversationID = "AGENT_CONVERSATION_ID"
	AgentTurnID         = "AGENT_TURN_ID"
)

// setAgentIDs gives a run the three agent variables when env (the composed
// environment, the caller's AGENT_* variables already in it) lacks them:
//
//   - AGENT_SESSION_ID: the toolbox session (TOOLBOX_SESSION: the MCP
//     connection's session, `--session` or $TOOLBOX_SESSION of the CLI, the
//     daemon's session), else a fresh id;
//   - AGENT_CONVERSATION_ID: the session id (toolbox has one conversation
//     per session);
//   - AGENT_TURN_ID: a fresh id for every call.
//
// A value the caller (or, for a tool whose environment is not filtered,
// the envdir) already set is kept: a caller that knows its conversation and
// turn passes them through unchanged.
func setAgentIDs(env map[string]string) {
	if _, ok := env[AgentSessionID]; !ok {
		id := env["TOOLBOX_SESSION"]
		if id == "" {
			id = newID()
		}
		env[AgentSessionID] = id
	}
	if _, ok := env[AgentConversationID]; !ok {
		env[AgentConversationID] = env[AgentSessionID]
	}
	if _, ok := env[AgentTurnID]; !ok {
		env[AgentTurnID] = newID()
	}
}

// newID is a random UUID (version 4) in its canonical text form.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
