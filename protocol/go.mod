module github.com/toolbox-dev/toolbox/protocol

go 1.26.0

require (
	github.com/rogpeppe/go-internal v1.16.0
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	golang.org/x/text v0.42.0
)

require golang.org/x/tools v0.49.0 // indirect
