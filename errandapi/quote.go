package errandapi

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// quoteMax is how many bytes of a caller's value a refusal quotes.
const quoteMax = 128

// Quote quotes a caller's value as errand's refusals do: at most its first
// 128 bytes (cut at a character's start) and then how long it was, so
// that a megabyte sent where a word belongs is not echoed back whole.
// Every name and id errand takes (at most 100 bytes) is quoted whole.
func Quote(s string) string {
	if len(s) <= quoteMax {
		return strconv.Quote(s)
	}
	return strconv.Quote(CutUTF8(s, quoteMax)) + fmt.Sprintf("… (%d bytes)", len(s))
}

// CutUTF8 is the longest prefix of s of at most n bytes that does not end
// inside a character.
func CutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
