package compiler

import (
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// Format returns src in canonical HCL layout (hclwrite.Format). It parses
// src first, because hclwrite formats even text it cannot parse: a syntax
// error is returned as Diagnostics (located at filename) and nothing is
// formatted. A file beyond the limits of checkShape (MaxNestingDepth,
// MaxHeredocLines) is refused before it is parsed. Formatting is idempotent: Format of its own output is the same.
func Format(src []byte, filename string) ([]byte, error) {
	if ds := checkShape(src, filename); ds != nil {
		return nil, ds
	}
	if _, hd := hclparse.NewParser().ParseHCL(src, filename); hd.HasErrors() {
		return nil, fromHCL(hd, "")
	}
	return hclwrite.Format(src), nil
}
