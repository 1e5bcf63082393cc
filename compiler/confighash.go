package compiler

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// The lock pins the toolbox file's parsed configuration, not its bytes
// (DESIGN.md §4, issue 12 F): a comment, blank lines or `toolbox fmt`
// change nothing that matters, so they need no new lock. The configuration
// is encoded canonically, then hashed:
//
//	body      = {"attributes": {NAME: value, ...}, "blocks": [block, ...]}
//	block     = {"type": TYPE, "labels": [LABEL, ...], "body": body}
//	value     = {"type": CTY_TYPE, "value": CTY_VALUE}
//
// as JSON with object keys sorted and no insignificant space (encoding/json
// of maps). Attributes are keyed by name, so their order does not matter;
// blocks keep the file's order, which a toolbox file's meaning may follow.
// A value is its evaluated literal (HCL has no variables here) in
// go-cty's JSON encoding, with its type: "30s" and `"30s"` written as a
// heredoc are the same value, the number 30 and the string "30" are not.
// The digest is the hex SHA-256 of that encoding. Any change a reader of
// the file would call a change of configuration changes the digest;
// nothing else does.

// ConfigDigest returns the digest of the configuration in src (the toolbox
// file's bytes; filename names it in errors). Errors: src does not parse,
// nests too deep for the parser (checkShape, as Load), or a value is not
// a literal; the first diagnostic is returned, located.
func ConfigDigest(src []byte, filename string) (string, error) {
	if ds := checkShape(src, filename); ds != nil {
		return "", ds[0]
	}
	f, hd := hclparse.NewParser().ParseHCL(src, filename)
	if hd.HasErrors() {
		return "", fromHCL(hd, "")[0]
	}
	return digestOf(f)
}

// digestOf is the digest of a parsed toolbox file.
func digestOf(f *hcl.File) (string, error) {
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		return "", errors.New("digesting the configuration: not HCL native syntax")
	}
	enc, err := encodeBody(body)
	if err != nil {
		return "", err
	}
	data, err := json.Marshal(enc)
	if err != nil {
		return "", fmt.Errorf("digesting the configuration: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// ConfigDigestFile is ConfigDigest of the file at path, read as Load reads
// it (ReadToolboxFile: a regular file of at most MaxToolboxFileBytes).
func ConfigDigestFile(path string) (string, error) {
	src, err := ReadToolboxFile(path)
	if err != nil {
		return "", err
	}
	return ConfigDigest(src, path)
}

type encodedBlock struct {
	Type   string      `json:"type"`
	Labels []string    `json:"labels"`
	Body   encodedBody `json:"body"`
}

type encodedBody struct {
	Attributes map[string]encodedValue `json:"attributes"`
	Blocks     []encodedBlock          `json:"blocks"`
}

type encodedValue struct {
	Type  json.RawMessage `json:"type"`
	Value json.RawMessage `json:"value"`
}

func encodeBody(b *hclsyntax.Body) (encodedBody, error) {
	out := encodedBody{Attributes: map[string]encodedValue{}, Blocks: []encodedBlock{}}
	for name, a := range b.Attributes {
		v, hd := a.Expr.Value(nil)
		if hd.HasErrors() {
			return out, fromHCL(hd, name)[0]
		}
		typ, err := ctyjson.MarshalType(v.Type())
		if err != nil {
			return out, fmt.Errorf("digesting %s: %w", name, err)
		}
		val, err := ctyjson.Marshal(v, v.Type())
		if err != nil {
			return out, at(a.Expr.Range(), name, fmt.Sprintf("digesting the value: %v", err), "write a literal value")
		}
		out.Attributes[name] = encodedValue{Type: typ, Value: val}
	}
	for _, blk := range b.Blocks {
		body, err := encodeBody(blk.Body)
		if err != nil {
			return out, err
		}
		labels := blk.Labels
		if labels == nil {
			labels = []string{}
		}
		out.Blocks = append(out.Blocks, encodedBlock{Type: blk.Type, Labels: labels, Body: body})
	}
	return out, nil
}
