tool "ok" { path = "../tools/ok" }
tool "ok" { path = "../tools/ok" } # want: duplicate.hcl:2:6: tool "ok": duplicate name "ok", first declared at .*duplicate.hcl:1:6; give every tool and capability its own name
