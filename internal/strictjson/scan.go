package strictjson

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// The functions below read JSON's tokens. Each takes the index to read at
// and returns the index after what it read, or -1 for text that is not
// JSON.

func skipSpace(b []byte, i int) int {
	for i < len(b) && jsonSpace[b[i]] {
		i++
	}
	return i
}

var jsonSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

// str is what stringEnd learnt of a string.
type str struct {
	// escaped: the string holds an escape.
	escaped bool
	// ascii: every byte of the string is ASCII.
	ascii bool
	// loneHigh: a \u escape of a high surrogate (\ud800 to \udbff) is not
	// followed by another \u escape.
	loneHigh bool
}

// stringEnd returns the index of the quote that ends the string starting at
// b[i], and what the string holds; -1 if b[i] starts no string, the string
// does not end or holds an escape JSON does not have.
func stringEnd(b []byte, i int) (int, str) {
	if i >= len(b) || b[i] != '"' {
		return -1, str{}
	}
	var s str
	j, ascii := quoteOrBackslash(b, i+1)
	for j < len(b) && b[j] == '\\' {
		n, loneHigh := escapeLen(b[j:])
		if n == 0 {
			return -1, str{}
		}
		s.escaped = true
		s.loneHigh = s.loneHigh || loneHigh
		var a bool
		j, a = quoteOrBackslash(b, j+n)
		ascii = ascii && a
	}
	if j == len(b) {
		return -1, str{}
	}
	s.ascii = ascii
	return j, s
}

// quoteOrBackslash returns the index of the first '"' or '\\' in b at or
// after i, or len(b), and false if a byte before it, or one of the few
// after it, is not ASCII. It reads eight bytes at a time: most of a record
// is long ids.
func quoteOrBackslash(b []byte, i int) (int, bool) {
	const highs = 0x8080808080808080
	var read uint64
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i : i+8])
		read |= w
		if m := bytesEqual(w, '"') | bytesEqual(w, '\\'); m != 0 {
			return i + bits.TrailingZeros64(m)/8, read&highs == 0
		}
	}
	for ; i < len(b) && b[i] != '"' && b[i] != '\\'; i++ {
		read |= uint64(b[i])
	}
	return i, read&highs == 0
}

// bytesEqual sets the high bit of the first byte of w that equals b, and
// maybe of later ones, which quoteOrBackslash does not look at.
func bytesEqual(w uint64, b byte) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	x := w ^ ones*uint64(b)
	return (x - ones) &^ x & highs
}

// escapeLen returns the length of the escape sequence s starts with, or 0
// if it is not one JSON has, and whether it is a high surrogate not
// followed by another \u escape.
func escapeLen(s []byte) (n int, loneHigh bool) {
	if len(s) < 2 {
		return 0, false
	}
	switch s[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, false
	case 'u':
		if len(s) < 6 {
			return 0, false
		}
		r, ok := hex4(s[2:6])
		if !ok {
			return 0, false
		}
		return 6, 0xd800 <= r && r < 0xdc00 && !bytes.HasPrefix(s[6:], []byte(`\u`))
	}
	return 0, false
}

func hex4(s []byte) (rune, bool) {
	var r rune
	for _, h := range s {
		switch {
		case '0' <= h && h <= '9':
			h -= '0'
		case 'a' <= h && h <= 'f':
			h -= 'a' - 10
		case 'A' <= h && h <= 'F':
			h -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(h)
	}
	return r, true
}

// literalEnd reads true, false, null or a number, spelled as JSON spells
// them (a lone "-", which some decoders read as a number, is not).
func literalEnd(b []byte, i int) int {
	for _, w := range [...]string{"true", "false", "null"} {
		if len(b)-i >= len(w) && string(b[i:i+len(w)]) == w {
			return i + len(w)
		}
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch n := countDigits(b, i); {
	case n == 0:
		return -1
	case b[i] == '0':
		i++
	default:
		i += n
	}
	if i < len(b) && b[i] == '.' {
		n := countDigits(b, i+1)
		if n == 0 {
			return -1
		}
		i += 1 + n
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		n := countDigits(b, i)
		if n == 0 {
			return -1
		}
		i += n
	}
	return i
}

// countDigits returns how many decimal digits b holds from i on.
func countDigits(b []byte, i int) int {
	n := 0
	for i+n < len(b) && '0' <= b[i+n] && b[i+n] <= '9' {
		n++
	}
	return n
}
