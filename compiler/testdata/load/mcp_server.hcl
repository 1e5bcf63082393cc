sandbox = "auto"

mcp_server "ok" {
  command = ["../tools/ok", "../tools/more.sh", "--flag", "plain"]
  env     = { A = "1" }
  sandbox {
    fs {
      read = ["../tools"]
    }
    net = "none"
  }
  tools   = ["a", "b"]
  rename  = { a = "ok_a" }
  timeout = "5s"
}

mcp_server "neither" { # want: mcp_server.hcl:17:1: mcp_server "neither": an MCP server needs a sandbox declaration or unconfined = true; confine the server
  command = ["../tools/ok"]
}

mcp_server "both" {
  command    = ["../tools/ok"]
  unconfined = true
  sandbox { net = "none" } # want: mcp_server.hcl:24:3: mcp_server "both": both a sandbox block and unconfined = true
}

mcp_server "web" {
  url = "ftp://127.0.0.1:1/mcp" # want: mcp_server.hcl:28:9: mcp_server "web": url "ftp://127.0.0.1:1/mcp": scheme "ftp" is not http or https
}

mcp_server "nocmd" { # want: mcp_server.hcl:31:1: mcp_server "nocmd": command is missing
  unconfined = true
}

mcp_server "empty" {
  command    = [] # want: mcp_server.hcl:36:16: mcp_server "empty": command is empty
  unconfined = true
}

mcp_server "path" {
  command    = ["no-such-program-anywhere"] # want: mcp_server.hcl:41:16: mcp_server "path": command "no-such-program-anywhere" is not on PATH; install it, or give its path
  unconfined = true
}

mcp_server "plain" {
  command    = ["../tools/plain.txt"] # want: mcp_server.hcl:46:16: mcp_server "plain": tool binary .*plain.txt" is not executable
  unconfined = true
}

mcp_server "renames" {
  command    = ["../tools/ok"]
  unconfined = true
  tools      = ["a"]
  rename     = { b = "x", a = "not ok" } # want: mcp_server.hcl:54:16: mcp_server "renames": rename: invalid name "not ok" for tool "a"
  # want: mcp_server.hcl:54:16: mcp_server "renames": rename: tool "b" is not in tools
}

mcp_server "envdir" {
  command    = ["../tools/ok"]
  unconfined = true
  envdir     = true # want: mcp_server.hcl:61:16: mcp_server "envdir": envdir = true but the toolbox file sets no envdir_root
}

mcp_server "entry" {
  command    = ["../tools/ok"]
  unconfined = true
  entry      = "../tools" # want: mcp_server.hcl:67:16: mcp_server "entry": entry "../tools" is not a file
}

mcp_server "ok" { # want: duplicate name "ok"
  command    = ["../tools/ok"]
  unconfined = true
}
