sandbox = auto # want: bareword.hcl:1:11: sandbox: Variables not allowed: .*; a string is written in double quotes: sandbox = "auto"$
tool "ok" {
  path = tools/ok # want: bareword.hcl:3:10: tool "ok": Variables not allowed: .*; a string is written in double quotes: path = "tools/ok"$
}
capability "c" {
  backends = ["ok", more] # want: bareword.hcl:6:21: capability "c": Variables not allowed: .*; a string is written in double quotes: "more"$
}
