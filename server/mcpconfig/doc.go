// Package mcpconfig writes what an MCP client needs to start `toolbox mcp`
// (issue 12 C): for each supported client, the entry in its own
// configuration format and the file it reads, and a careful merge of that
// entry into the file.
//
// Formats, as each client documents them:
//
//	claude-code     .mcp.json in the project           {"mcpServers": {NAME: {"type": "stdio", "command", "args"}}}
//	claude-desktop  claude_desktop_config.json          {"mcpServers": {NAME: {"command", "args"}}}
//	cursor          .cursor/mcp.json in the project     {"mcpServers": {NAME: {"command", "args"}}}
//	vscode          .vscode/mcp.json in the project     {"servers": {NAME: {"type": "stdio", "command", "args"}}}
//	codex           $CODEX_HOME/config.toml             [mcp_servers.NAME] command = …, args = […]
//	gemini          .gemini/settings.json in the project {"mcpServers": {NAME: {"command", "args"}}}
//
// The project is the workspace the entry confines toolbox to: a client that
// reads a configuration from the project it has open gets the entry there,
// so that it starts this toolbox only for that project. Claude Desktop has
// no project (its file is the user's, under the OS's application data), and
// Codex reads a project's file only once the project is trusted, so theirs
// is the user's file. Claude Code's user file (~/.claude.json) is its own
// state, rewritten while it runs: it is never written here.
//
// Merge keeps every other key of the file and its order; JSON is laid out
// again with two-space indentation, TOML is edited as text (only the
// lines of the entry's own table change). A file that cannot be read is
// refused with ParseError, never rewritten: JSON with comments or trailing
// commas (which VS Code and Gemini CLI accept), TOML that the scanner here
// cannot follow, an entry defined in a form that cannot be replaced as a
// table. The caller then prints the entry for the operator to paste.
//
// Deliberately not here: a TOML parser (the scanner checks the file's
// structure: tables, keys, strings, brackets; not every value's syntax),
// and clients' other scopes and transports.
package mcpconfig
