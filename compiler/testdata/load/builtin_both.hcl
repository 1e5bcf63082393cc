builtin "process" {
  unconfined = true
  sandbox { net = "none" } # want: builtin_both.hcl:3:3: builtin "process": both a sandbox block and unconfined = true; keep the sandbox block
}
