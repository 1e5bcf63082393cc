limits {
  memory      = "1.5GiB" # want: limits.hcl:2:17: limits: memory: "1.5GiB" is not a whole number \(write 1536MiB, not 1.5GiB\); write a whole number of bytes, a string such as "512MiB"
  file_size   = "512MB" # want: limits.hcl:3:17: limits: file_size: "512MB" has an unknown unit "MB" \(sizes use KiB, MiB, GiB, TiB: powers of 1024
  open_files  = 10 # want: limits.hcl:4:17: limits: open_files: 10 is below the least this program accepts, 64; write 64 or more
  cpu_seconds = 0 # want: limits.hcl:5:17: limits: cpu_seconds: 0 is not a limit; write "unlimited" for no limit, or a positive value
  processes   = "256" # want: limits.hcl:6:17: limits: processes: "256" is not a number; write a whole number, or "unlimited"
  tmp_size    = -1 # want: limits.hcl:7:17: limits: tmp_size: -1 is not a whole number; write a whole number of bytes
}
limits {} # want: limits.hcl:9:1: limits: duplicate limits block, first declared at .*limits.hcl:1:1; merge them into one limits block
tool "ok" {
  path = "../tools/ok"
  limits {
    memory    = "1MiB" # want: limits.hcl:13:17: tool "ok", limits: memory: 1MiB is below the least this program accepts, 64MiB; write 64MiB or more
    processes = 5000000 # want: limits.hcl:14:17: tool "ok", limits: processes: 5000000 is above 4194304, the most the kernel allows; write 4194304 or less, or "unlimited"
    swap      = "1GiB" # want: limits.hcl:15:5: tool "ok", limits: Unsupported argument: An argument named "swap" is not expected here
  }
}
tools "more" {
  dir    = "../tools"
  filter = ".sh"
  limits { file_size = true } # want: limits.hcl:21:24: tools "more", limits: file_size: got bool; write a whole number of bytes
}
builtin "process" {
  unconfined = true
  limits { open_files = 1.5 } # want: limits.hcl:25:25: builtin "process", limits: open_files: 1.5 is not a whole number; write a whole number, or "unlimited"
}
tool "huge" {
  path = "../tools/ok"
  limits {
    tmp_size    = 18446744073709551615 # want: limits.hcl:30:19: tool "huge", limits: tmp_size: 18446744073709551615 is above 1024TiB, the most a limit can be \(higher values would wrap to no limit\); write 1024TiB or less, or "unlimited"
    memory      = "1025TiB" # want: limits.hcl:31:19: tool "huge", limits: memory: 1025TiB is above 1024TiB, the most a limit can be
    cpu_seconds = 1099511627777 # want: limits.hcl:32:19: tool "huge", limits: cpu_seconds: 1099511627777 is above 1099511627776, the most a limit can be
    file_size   = "1024TiB"
  }
}
