tool "ok" {
  path    = "../tools/ok"
  timeout = "-3s" # want: timeout.hcl:3:13: tool "ok": invalid timeout "-3s"; write a positive duration
}
