// Package proto holds the generated gRPC code of toolbox.proto, the contract
// between toolbox and its Go plugins. Edit toolbox.proto, never the .pb.go
// files, then regenerate:
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
//	go generate ./plugins/sdk/proto
//
// protoc itself comes from the system (Debian: protobuf-compiler).
package proto

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative toolbox.proto
