# Every form a limit may take; TestLoadLimits checks what each becomes.
limits {
  memory      = "512MiB"
  file_size   = 1048576
  open_files  = 1024
  cpu_seconds = "unlimited"
  processes   = 256
  tmp_size    = "64 MiB"
}
tool "ok" {
  path = "../tools/ok"
  limits {
    memory   = "2GiB"
    tmp_size = "unlimited"
  }
}
tools "more" {
  dir    = "../tools"
  filter = ".sh"
  limits { file_size = "1TiB" }
}
builtin "process" {
  unconfined = true
  limits { processes = 64 }
}
