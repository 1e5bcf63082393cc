tool "x" {
  path = = "x" # want: syntax.hcl:2:10: Invalid expression
}
