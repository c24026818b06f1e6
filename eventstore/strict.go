package eventstore

import (
	"bytes"
	"cmp"
	"encoding"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
)

// shape is what knownKeys knows of a destination type: which keys its
// objects may hold and the shape of each value. decodeStrict's fast path
// needs it because go-json's non-stream decoder ignores unknown keys.
type shape struct {
	kind   shapeKind
	fields []shapeField // shapeStruct, in encoding order
	elem   *shape       // shapeMap and shapeList
}

type shapeField struct {
	name  string
	shape *shape
}

type shapeKind uint8

const (
	// shapeAny takes any value: interfaces, and types that decode
	// themselves (Signal checks its own keys strictly).
	shapeAny shapeKind = iota
	shapeScalar
	shapeStruct
	shapeMap
	shapeList
)

var (
	anyShape    = &shape{kind: shapeAny}
	scalarShape = &shape{kind: shapeScalar}
	shapes      sync.Map // reflect.Type → *shape
)

// decodesItself lists the interfaces through which a type reads its own
// JSON; the key check leaves such values to it.
var decodesItself = []reflect.Type{
	reflect.TypeFor[json.Unmarshaler](),
	reflect.TypeFor[gojson.UnmarshalerContext](),
	reflect.TypeFor[encoding.TextUnmarshaler](),
}

// shapeOf returns the shape of t, computed once per type.
func shapeOf(t reflect.Type) *shape {
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	s := buildShape(t, map[reflect.Type]*shape{})
	shapes.Store(t, s)
	return s
}

// buildShape follows encoding/json's view of t. seen holds the composite
// types being built, so a recursive type refers to itself.
func buildShape(t reflect.Type, seen map[reflect.Type]*shape) *shape {
	if s, ok := seen[t]; ok {
		return s
	}
	for _, u := range decodesItself {
		if t.Implements(u) || reflect.PointerTo(t).Implements(u) {
			return anyShape
		}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return buildShape(t.Elem(), seen)
	case reflect.Interface:
		return anyShape
	case reflect.Map:
		s := &shape{kind: shapeMap}
		seen[t] = s
		s.elem = buildShape(t.Elem(), seen)
		return s
	case reflect.Slice, reflect.Array:
		s := &shape{kind: shapeList}
		seen[t] = s
		s.elem = buildShape(t.Elem(), seen)
		return s
	case reflect.Struct:
		s := &shape{kind: shapeStruct}
		seen[t] = s
		for _, f := range visibleFields(t) {
			s.fields = append(s.fields, shapeField{f.name, buildShape(f.typ, seen)})
		}
		return s
	}
	return scalarShape
}

type namedField struct {
	name   string
	typ    reflect.Type
	depth  int
	tagged bool
}

// visibleFields lists the fields encoding/json decodes into, in encoding
// order: embedded structs flattened (through pointers too, as in decodeAs's
// MessageAccepted wrapper), and of fields sharing a name the shallowest, or
// the only tagged one among the shallowest. Names that stay ambiguous are
// left out, so their keys take the slow path.
func visibleFields(t reflect.Type) []namedField {
	all := collectFields(t, 0, nil)
	var out []namedField
	for i := range all {
		if dominant(i, all) {
			out = append(out, all[i])
		}
	}
	return out
}

// collectFields lists the named fields of t and of the structs it embeds
// untagged, depth counting the embedding levels. path holds the embedding
// structs, so that a struct embedding itself ends.
func collectFields(t reflect.Type, depth int, path []reflect.Type) []namedField {
	var out []namedField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		ft := f.Type
		if f.Anonymous && ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if !f.IsExported() && !(f.Anonymous && ft.Kind() == reflect.Struct) {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if !validTagName(name) {
			name = ""
		}
		if name == "" && f.Anonymous && ft.Kind() == reflect.Struct {
			if !slices.Contains(path, ft) {
				out = append(out, collectFields(ft, depth+1, append(path, t))...)
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		out = append(out, namedField{name: cmp.Or(name, f.Name), typ: f.Type, depth: depth, tagged: name != ""})
	}
	return out
}

// dominant reports whether all[i] is the field encoding/json decodes its
// name into.
func dominant(i int, all []namedField) bool {
	f := all[i]
	for j, g := range all {
		if j == i || g.name != f.name {
			continue
		}
		if g.depth < f.depth || g.depth == f.depth && (g.tagged || !f.tagged) {
			return false
		}
	}
	return true
}

// validTagName is encoding/json's rule for a usable name in a json tag.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c) && !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			return false
		}
	}
	return true
}

// field returns the shape of the field named key. Records are written in
// field order, so the search starts after the previous match (*next).
func (s *shape) field(key []byte, next *int) (*shape, bool) {
	j := *next
	for range s.fields {
		if j == len(s.fields) {
			j = 0
		}
		if string(key) == s.fields[j].name {
			*next = j + 1
			return s.fields[j].shape, true
		}
		j++
	}
	return nil, false
}

// maxKeyDepth bounds the key check's recursion; deeper input takes the slow
// path.
const maxKeyDepth = 1000

// knownKeys reports whether b is one JSON value, with nothing but white
// space after it, whose object keys all name fields of s exactly. It never
// says yes for a key that would match a field only ignoring case or after
// unescaping: the slow path decides those as it always has.
//
// The functions below take the index to read at and return the index after
// what they read, or -1 for anything they do not follow; that only sends the
// input to the slow path.
func knownKeys(b []byte, s *shape) bool {
	i := keyValue(b, skipSpace(b, 0), s, 0)
	return i >= 0 && skipSpace(b, i) == len(b)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && jsonSpace[b[i]] {
		i++
	}
	return i
}

var jsonSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

func keyValue(b []byte, i int, s *shape, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '{':
		switch s.kind {
		case shapeStruct, shapeMap, shapeAny:
			return keyObject(b, i, s, depth+1)
		}
		return -1 // a type error, which the slow path words
	case '[':
		switch s.kind {
		case shapeList:
			return keyArray(b, i, s.elem, depth+1)
		case shapeAny:
			return keyArray(b, i, anyShape, depth+1)
		}
		return -1
	case '"':
		end, _ := stringEnd(b, i)
		if end < 0 {
			return -1
		}
		return end + 1
	}
	return literalEnd(b, i)
}

// keyObject reads an object whose keys s declares: a struct's field
// names, or any key for a map or a free-form value.
func keyObject(b []byte, i int, s *shape, depth int) int {
	if depth > maxKeyDepth {
		return -1
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	next := 0
	for {
		end, escaped := stringEnd(b, i)
		if end < 0 {
			return -1
		}
		elem := s
		switch s.kind {
		case shapeStruct:
			var ok bool
			if elem, ok = s.field(b[i+1:end], &next); escaped || !ok {
				return -1
			}
		case shapeMap:
			elem = s.elem
		}
		if i = skipSpace(b, end+1); i >= len(b) || b[i] != ':' {
			return -1
		}
		if i = keyValue(b, skipSpace(b, i+1), elem, depth); i < 0 {
			return -1
		}
		var done bool
		if i, done = nextItem(b, i, '}'); done {
			return i
		}
	}
}

func keyArray(b []byte, i int, elem *shape, depth int) int {
	if depth > maxKeyDepth {
		return -1
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1
	}
	for {
		if i = keyValue(b, i, elem, depth); i < 0 {
			return -1
		}
		var done bool
		if i, done = nextItem(b, i, ']'); done {
			return i
		}
	}
}

// nextItem reads what follows a member or an element at i: a comma, and
// returns the index of the next one, or close, and returns the index after
// it and done. Anything else is -1 and done.
func nextItem(b []byte, i int, close byte) (int, bool) {
	if i = skipSpace(b, i); i >= len(b) {
		return -1, true
	}
	switch b[i] {
	case ',':
		return skipSpace(b, i+1), false
	case close:
		return i + 1, true
	}
	return -1, true
}

// stringEnd returns the index of the quote that ends the string starting at
// b[i], and whether the string holds an escape; -1 if b[i] starts no string
// or the string is not UTF-8: go-json's stream decoder turns bad bytes in
// strings into U+FFFD, as encoding/json does, and the non-stream decoder
// keeps them.
func stringEnd(b []byte, i int) (end int, escaped bool) {
	if i >= len(b) || b[i] != '"' {
		return -1, false
	}
	j, ascii := quoteOrBackslash(b, i+1)
	for j < len(b) && b[j] == '\\' {
		n := escapeLen(b[j:])
		if n == 0 {
			return -1, false
		}
		escaped = true
		var a bool
		j, a = quoteOrBackslash(b, j+n)
		ascii = ascii && a
	}
	if j == len(b) || !ascii && !utf8.Valid(b[i+1:j]) {
		return -1, false
	}
	return j, escaped
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
// if it is not one JSON has or the fast path should not read. go-json's
// non-stream decoder looks for the pair of a high surrogate (\ud800 to
// \udbff) 11 bytes on, past the end of its buffer when the input ends
// sooner, which checkptr (-race) stops as an invalid pointer; so a high
// surrogate must be followed by another \u escape.
func escapeLen(s []byte) int {
	if len(s) < 2 {
		return 0
	}
	switch s[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if len(s) < 6 {
			return 0
		}
		r, ok := hex4(s[2:6])
		if !ok || 0xd800 <= r && r < 0xdc00 && !bytes.HasPrefix(s[6:], []byte(`\u`)) {
			return 0
		}
		return 6
	}
	return 0
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
// them: go-json's non-stream decoder reads a lone "-" as a number, which
// its stream decoder refuses.
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
