capability "c" {
  backends = [] # want: empty_backends.hcl:2:14: capability "c": backends is empty; list at least one tool
}
