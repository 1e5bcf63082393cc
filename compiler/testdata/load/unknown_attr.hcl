tool "ok" {
  path   = "../tools/ok"
  colour = "red" # want: unknown_attr.hcl:3:3: tool "ok": Unsupported argument: An argument named "colour" is not expected here
}
