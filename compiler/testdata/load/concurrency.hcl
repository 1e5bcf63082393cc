plugin "plug" {
  path        = "../tools/ok"
  concurrency = 0 # want: concurrency.hcl:3:17: plugin "plug": concurrency 0 is out of range; write a whole number from 1 to 256
}
plugin "frac" {
  path        = "../tools/ok"
  concurrency = 1.5 # want: concurrency.hcl:7:17: plugin "frac": concurrency 1.5 is out of range
}
plugin "word" {
  path        = "../tools/ok"
  concurrency = "4" # want: concurrency.hcl:11:17: plugin "word": concurrency must be a number, got string
}
tool "exec" {
  path        = "../tools/ok"
  concurrency = 4 # want: concurrency.hcl:15:3: tool "exec": Unsupported argument
}
plugin "good" {
  path        = "../tools/ok"
  concurrency = 4
}
