// Package shq quotes words for the shell commands toolbox's errors suggest
// ("run chmod +x PATH"), so that an operator can paste them whatever the
// path holds: spaces (a project in "My Projects"), quotes, `$` or `;`.
package shq

import "strings"

// Quote returns s as one POSIX shell word: unchanged when it holds only
// characters no shell treats specially (letters, digits and
// `_-./:@%+=,`), else in single quotes, each single quote inside written
// as quote, backslash, quote, quote. The empty string is two single quotes.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	if strings.IndexFunc(s, func(r rune) bool { return !plain(r) }) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func plain(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("_-./:@%+=,", r)
}
