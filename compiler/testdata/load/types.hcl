env_allowlist = "PATH" # want: types.hcl:1:17: env_allowlist: env_allowlist must be a list of strings, got string
capability "c" {
  backends = ["x"] # want: types.hcl:3:14: capability "c": unknown backend "x"
  required = "yes" # want: types.hcl:4:14: capability "c": required must be a bool, got string
}
