package jsonstrict

import (
	"bytes"
	"encoding/json"
	"iter"
	"strings"
	"unicode/utf8"
)

// The scanners below step over valid JSON (the caller has checked it);
// each takes the index of a token's first byte and returns the index just
// past it.

// skipSpace skips the whitespace JSON allows.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString steps over the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; ; i++ {
		switch b[i] {
		case '\\':
			i++ // the escaped byte (for \u, its hex digits are plain bytes)
		case '"':
			return i + 1
		}
	}
}

// skipValue steps over the value starting at b[i]: a string, an object or
// array (with everything in it), or a number or literal.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	for i < len(b) && !strings.ContainsRune(",]} \t\r\n", rune(b[i])) {
		i++
	}
	return i
}

// readKey reads the object key starting at b[i] == '"' as the decoder
// reads it (unescaped, invalid UTF-8 as U+FFFD) and returns it with the
// index just past it. A plain key is a slice of b: nothing is copied.
func readKey(b []byte, i int) ([]byte, int) {
	end := skipString(b, i)
	key := b[i+1 : end-1]
	if bytes.IndexByte(key, '\\') < 0 && utf8.Valid(key) {
		return key, end
	}
	var s string
	_ = json.Unmarshal(b[i:end], &s) // valid JSON: cannot fail
	return []byte(s), end
}

// SplitArray returns the elements of the valid JSON array b, as slices of
// b.
func SplitArray(b []byte) []json.RawMessage {
	var items []json.RawMessage
	i := skipSpace(b, 1)
	for b[i] != ']' {
		end := skipValue(b, i)
		items = append(items, b[i:end:end])
		if i = skipSpace(b, end); b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return items
}

// Members yields the keys (as the decoder reads them) and values (as
// slices of b) of the valid JSON object b, in document order, duplicates
// included.
func Members(b []byte) iter.Seq2[string, []byte] {
	return func(yield func(string, []byte) bool) {
		i := skipSpace(b, 1)
		for b[i] != '}' {
			key, end := readKey(b, i)
			i = skipSpace(b, skipSpace(b, end)+1) // past the colon
			end = skipValue(b, i)
			if !yield(string(key), b[i:end:end]) {
				return
			}
			if i = skipSpace(b, end); b[i] == ',' {
				i = skipSpace(b, i+1)
			}
		}
	}
}
