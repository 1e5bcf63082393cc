package protocol

import (
	"strconv"
	"strings"
)

// isJSONNumber reports whether s is a number in JSON syntax (numberEnd).
func isJSONNumber(s string) bool {
	end, ok := numberEnd(s, 0)
	return ok && end == len(s)
}

// numberEnd reads the number in JSON syntax (RFC 8259 §6) that starts at
// s[i], -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, and returns where
// it ends; ok is false when s[i:] does not start with one.
func numberEnd[T string | []byte](s T, i int) (end int, ok bool) {
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = skipDigits(s, i)
	default:
		return 0, false
	}
	if i < len(s) && s[i] == '.' {
		j := skipDigits(s, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := skipDigits(s, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func skipDigits[T string | []byte](s T, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// Why integerText refused a number.
const (
	intOK = iota
	intNotNumber
	intFraction
	intRange
)

// maxExp bounds the exponent integerText looks at: anything beyond decides
// the same way (out of range, or a fraction) and big exponents cost nothing.
const maxExp = 1000

// integerText returns the canonical decimal text of a JSON number whose
// value is a whole number within int64 ("1.0" and "1e3" are whole; "-0" is
// "0"). It works on the decimal text, so it is exact where float64 would
// round (9007199254740993.0 stays 9007199254740993), and it never builds a
// huge number from a huge exponent.
func integerText(s string) (string, int) {
	if !isJSONNumber(s) {
		return "", intNotNumber
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, expPart, _ := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	exp := 0
	if expPart != "" {
		sign := 1
		if expPart[0] == '+' || expPart[0] == '-' {
			if expPart[0] == '-' {
				sign = -1
			}
			expPart = expPart[1:]
		}
		expPart = strings.TrimLeft(expPart, "0")
		if len(expPart) > 4 {
			exp = sign * maxExp * 10
		} else if expPart != "" {
			e, _ := strconv.Atoi(expPart)
			exp = sign * e
		}
	}
	// The value is 0.DIGITS × 10^point.
	digits := intPart + frac
	point := len(intPart) + exp
	trimmed := strings.TrimLeft(digits, "0")
	point -= len(digits) - len(trimmed)
	digits = strings.TrimRight(trimmed, "0")
	if digits == "" {
		return "0", intOK
	}
	if len(digits) > point {
		return "", intFraction
	}
	if point > 19 { // more digits than any int64
		return "", intRange
	}
	text := digits + strings.Repeat("0", point-len(digits))
	if neg {
		text = "-" + text
	}
	if _, err := strconv.ParseInt(text, 10, 64); err != nil {
		return "", intRange
	}
	return text, intOK
}
