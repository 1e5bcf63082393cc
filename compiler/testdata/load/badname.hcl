tool "read.file" { path = "../tools/ok" } # want: badname.hcl:1:6: tool "read.file": invalid name "read.file"; use 1 to 64 letters
