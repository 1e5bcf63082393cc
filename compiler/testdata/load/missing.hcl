tool "gone" { path = "../tools/gone" } # want: missing.hcl:1:22: tool "gone": tool binary
