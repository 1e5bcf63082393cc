tool "ok" {
  path = "../tools/ok"
  bind "a" { # want: bind.hcl:3:3: tool "ok", bind "a": set exactly one of value and env
    value = "x"
    env   = "X"
  }
  bind "b" {
    env    = "B"
    secret = true
  }
  bind "c" {
    env    = "1BAD" # want: bind.hcl:12:14: tool "ok", bind "c": invalid variable name "1BAD"
  }
  bind "d" {
    value  = "x"
    secret = "yes" # want: bind.hcl:16:14: tool "ok", bind "d": secret must be a bool, got string
  }
  bind "b" { value = 1 } # want: bind.hcl:18:8: tool "ok", bind "b": the arg is bound twice
}
capability "c" {
  backends    = ["ok"]
  fallback_on = [0] # want: bind.hcl:22:17: capability "c": fallback_on: 0 is not an exit code
}
