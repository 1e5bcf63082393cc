builtin "process" {
  sandbox {
    net = "all"    # want: builtin_values.hcl:3:11: builtin "process": sandbox.net is "all"; write "host" or "none"
    tmp = "disk"   # want: builtin_values.hcl:4:11: builtin "process": sandbox.tmp is "disk"; write "shared" or "private"
    fs {
      read  = ["missing"] # want: builtin_values.hcl:6:15: builtin "process": sandbox.fs.read: path "missing" .*no such file or directory; create it
      write = 3           # want: builtin_values.hcl:7:15: builtin "process": write must be a list of strings
    }
  }
}
