sandbox = "jail" # want: mechanism.hcl:1:11: sandbox: unknown mechanism "jail"; use "bwrap", "landlock", "auto" or "none"
