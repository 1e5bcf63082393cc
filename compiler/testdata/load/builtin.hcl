builtin "shell" {} # want: builtin.hcl:1:9: builtin "shell": unknown builtin "shell"; the only builtin is "process"
