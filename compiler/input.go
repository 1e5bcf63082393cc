package compiler

import (
	"errors"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/toolbox-dev/toolbox/internal/inputfile"
)

// Limits on a toolbox file, checked before the HCL parser sees it
// (DESIGN.md §3). The parser recurses once per level of nesting, so an
// expression nested 100,000 deep overflows the Go stack and kills the
// process, and it takes time growing with the square of a heredoc's
// length (80,000 lines took 15 s). No real toolbox file comes near these
// limits: one of 1000 tools is about 60 KiB with a nesting depth of 3.
const (
	// MaxToolboxFileBytes is the largest toolbox file read.
	MaxToolboxFileBytes = 256 << 10
	// MaxNestingDepth bounds nesting: brackets, braces (blocks included),
	// parentheses, strings and heredocs, `${…}` and `%{if}`/`%{for}`
	// directives, and each unary `!` or `-` applied to another one.
	MaxNestingDepth = 64
	// MaxHeredocLines bounds the text of all heredocs of a file together:
	// their lines, each `${…}` or `%{…}` sequence counting as one more.
	MaxHeredocLines = 2000
)

// ReadToolboxFile reads a toolbox file within MaxToolboxFileBytes. A path
// that is not a regular file (a FIFO, /dev/zero, a directory) is refused
// before anything is read. Errors are Diagnostics naming the file and the fix.
func ReadToolboxFile(path string) ([]byte, error) {
	src, err := inputfile.ReadFile(path, MaxToolboxFileBytes)
	if err == nil {
		return src, nil
	}
	fix := "pass the toolbox file with -f or set TOOLBOX_FILE"
	var tl *inputfile.TooLargeError
	switch {
	case errors.As(err, &tl):
		fix = fmt.Sprintf("a toolbox file holds at most %d bytes; split out what is not a declaration", MaxToolboxFileBytes)
	case errors.Is(err, inputfile.ErrNotRegular):
		fix = "name a regular file, not a pipe or a device"
	}
	return nil, Diagnostics{{File: path, Msg: fmt.Sprintf("reading the toolbox file: %v", err), Fix: fix}}
}

// checkShape refuses src, before it is parsed, when it nests deeper than
// MaxNestingDepth or its heredocs hold more than MaxHeredocLines; the
// diagnostic points at the token where the limit was passed. It runs
// HCL's lexer, which is a state machine and does not recurse. What the
// lexer cannot read is left to the parser to report.
func checkShape(src []byte, filename string) Diagnostics {
	toks, _ := hclsyntax.LexConfig(src, filename, hcl.InitialPos)
	var (
		stack     []hclsyntax.TokenType // open brackets, strings, heredocs, ${ and %{
		depth     int                   // open %{if} and %{for} directives
		unary     int                   // the current run of unary operators
		inHeredoc int                   // open heredocs
		heredoc   int                   // heredoc lines and sequences so far
		directive bool                  // the previous token opened a %{ sequence
	)
	for _, tok := range toks {
		switch tok.Type {
		case hclsyntax.TokenBang, hclsyntax.TokenMinus:
			unary++
		default:
			unary = 0
		}
		opened := false
		switch tok.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
			hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc, hclsyntax.TokenTemplateInterp,
			hclsyntax.TokenTemplateControl:
			stack = append(stack, tok.Type)
			opened = true
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen,
			hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc, hclsyntax.TokenTemplateSeqEnd:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case hclsyntax.TokenIdent:
			if directive {
				switch string(tok.Bytes) {
				case "if", "for":
					depth++
				case "endif", "endfor":
					depth = max(depth-1, 0)
				}
			}
		}
		directive = tok.Type == hclsyntax.TokenTemplateControl
		switch tok.Type {
		case hclsyntax.TokenOHeredoc:
			inHeredoc++
		case hclsyntax.TokenCHeredoc:
			inHeredoc = max(inHeredoc-1, 0)
		case hclsyntax.TokenStringLit, hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			if inHeredoc > 0 {
				heredoc++
			}
		}
		if opened || unary > 0 || tok.Type == hclsyntax.TokenIdent {
			if d := len(stack) + depth + unary; d > MaxNestingDepth {
				return Diagnostics{at(tok.Range, "", fmt.Sprintf("nesting deeper than %d levels", MaxNestingDepth),
					"nest brackets, blocks, strings, interpolations, directives and unary operators at most "+fmt.Sprint(MaxNestingDepth)+" deep")}
			}
		}
		if heredoc > MaxHeredocLines {
			return Diagnostics{at(tok.Range, "", fmt.Sprintf("heredocs longer than %d lines in all", MaxHeredocLines),
				fmt.Sprintf("keep the heredocs of a toolbox file under %d lines and ${…}/%%{…} sequences together", MaxHeredocLines))}
		}
	}
	return nil
}
