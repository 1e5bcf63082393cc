tool "ok" { path = "../tools/ok" }
capability "c" {
  backends = ["ok", "nope"] # want: unknown_backend.hcl:3:14: capability "c": unknown backend "nope"; name a tool or plugin declared in this file
}
