tool "svc" {
  path = "../tools/ok"
  send = "no" # want: send.hcl:3:10: tool "svc": send must be a bool, got string
}
plugin "plug" {
  path = "../tools/ok"
  send = false # want: send.hcl:7:10: plugin "plug": send is set on a plugin; remove send
}
tool "quiet" {
  path = "../tools/ok"
  send = false
}
