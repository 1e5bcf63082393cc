package compiler

import (
	"errors"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	src := "sandbox=\"auto\"\ntool \"a\" {\npath=\"x\"\n  timeout   = \"3s\"\n}\n"
	want := "sandbox = \"auto\"\ntool \"a\" {\n  path    = \"x\"\n  timeout = \"3s\"\n}\n"
	got, err := Format([]byte(src), "t.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("Format:\n%s\nwant:\n%s", got, want)
	}
	again, err := Format(got, "t.hcl")
	if err != nil || string(again) != string(got) {
		t.Errorf("Format is not idempotent:\n%s", again)
	}
}

func TestFormatRefusesSyntaxErrors(t *testing.T) {
	_, err := Format([]byte("tool \"a\" {\n  path = = 1\n}\n"), "bad.hcl")
	var ds Diagnostics
	if !errors.As(err, &ds) || !strings.HasPrefix(err.Error(), "bad.hcl:2:") {
		t.Fatalf("err = %v, want a located syntax error", err)
	}
}
