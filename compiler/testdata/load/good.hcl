sandbox     = "auto"
envdir_root = "env"
env_allowlist = ["PATH"]
tool "ok" {
  path         = "../tools/ok"
  timeout      = "30s"
  allow_run_as = false
}
tools "more" {
  dir    = "../tools"
  filter = ".sh"
}
capability "c" {
  description = "d"
  backends    = ["ok", "more"]
  required    = true
}
builtin "process" {
  sandbox {
    fs {
      read  = ["../tools"]
      write = ["."]
    }
    net = "none"
  }
}
