package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

var (
	// ErrSyntax reports text that is not one JSON value with nothing but
	// white space after it.
	ErrSyntax = errors.New("strictjson: not a JSON value")
	// ErrShape reports a value that does not fit Checks.Shape: an object
	// key that names no field exactly as it is written (a key with an
	// escape, or matching a field only ignoring case, included), or an
	// object or array where the type takes another kind of value.
	ErrShape = errors.New("strictjson: value does not fit its type")
	// ErrDuplicateKey reports a key twice in one object. See
	// DuplicateKeyError.
	ErrDuplicateKey = errors.New("strictjson: key appears more than once in an object")
	// ErrTooDeep reports objects and arrays nested more than
	// Checks.MaxDepth levels.
	ErrTooDeep = errors.New("strictjson: objects and arrays nest too deep")
	// ErrNotPlain reports, under Checks.Plain, a string decoders read
	// differently: bytes that are not UTF-8, or a \u escape of a high
	// surrogate not followed by another \u escape.
	ErrNotPlain = errors.New("strictjson: string decoders read differently")
)

// DuplicateKeyError is a key found twice in one object.
type DuplicateKeyError struct {
	// Path leads to the object, outermost first: the key of each object
	// member and, for an array element, its index in brackets ("[1]").
	Path []string
	// Key is the key as encoding/json reads it: escapes decoded, bytes
	// that are not UTF-8 read as U+FFFD (two keys can meet there).
	Key string
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("strictjson: key %q appears more than once in the object at %q", e.Key, e.Path)
}

// Is makes errors.Is(err, ErrDuplicateKey) true.
func (e *DuplicateKeyError) Is(target error) bool { return target == ErrDuplicateKey }

// Checks says what Check refuses besides text that is not JSON.
type Checks struct {
	// Shape, when set, is the shape of the type the value decodes into;
	// a value that does not fit it is ErrShape.
	Shape *Shape
	// Duplicates refuses a key twice in one object, keys compared as
	// encoding/json reads them.
	Duplicates bool
	// MaxDepth, when above zero, refuses objects and arrays nested more
	// than that many levels; the walk recurses once per level.
	MaxDepth int
	// Plain refuses strings that decoders read differently (ErrNotPlain).
	Plain bool
}

// Check walks data, which must hold one JSON value and nothing but white
// space after it, and returns the first problem it meets, in the order of
// the text: ErrSyntax, ErrShape, ErrTooDeep, ErrNotPlain or a
// *DuplicateKeyError; nil for none.
func Check(data []byte, c Checks) error {
	w := walk{Checks: c}
	if w.Shape == nil {
		w.Shape = anyShape
	}
	i := w.value(data, skipSpace(data, 0), w.Shape, 0)
	if i < 0 {
		if d, ok := w.err.(*DuplicateKeyError); ok {
			// The path was gathered on the way out, innermost first.
			slices.Reverse(d.Path)
		}
		return w.err
	}
	if skipSpace(data, i) != len(data) {
		return ErrSyntax
	}
	return nil
}

// walk is one Check. Its functions return the index after what they read,
// or -1 with err set.
type walk struct {
	Checks
	err error
}

func (w *walk) fail(err error) int {
	w.err = err
	return -1
}

func (w *walk) value(b []byte, i int, s *Shape, depth int) int {
	if i >= len(b) {
		return w.fail(ErrSyntax)
	}
	switch b[i] {
	case '{':
		switch s.kind {
		case shapeStruct, shapeMap, shapeAny:
			return w.object(b, i, s, depth+1)
		}
		return w.fail(ErrShape)
	case '[':
		switch s.kind {
		case shapeList:
			return w.array(b, i, s.elem, depth+1)
		case shapeAny:
			return w.array(b, i, anyShape, depth+1)
		}
		return w.fail(ErrShape)
	case '"':
		end, st := stringEnd(b, i)
		if end < 0 {
			return w.fail(ErrSyntax)
		}
		if w.Plain && !w.plain(b[i+1:end], st) {
			return w.fail(ErrNotPlain)
		}
		return end + 1
	}
	if i = literalEnd(b, i); i < 0 {
		return w.fail(ErrSyntax)
	}
	return i
}

// plain reports whether the string s, quotes left out, reads the same in
// every decoder.
func (w *walk) plain(s []byte, st str) bool {
	return !st.loneHigh && (st.ascii || utf8.Valid(s))
}

// object reads an object whose keys s declares: a struct's field names,
// or any key for a map or a free-form value.
func (w *walk) object(b []byte, i int, s *Shape, depth int) int {
	i, done := w.enter(b, i, '}', depth)
	if done {
		return i
	}
	var keys keySet
	next := 0
	for {
		end, st := stringEnd(b, i)
		if end < 0 {
			return w.fail(ErrSyntax)
		}
		if w.Plain && !w.plain(b[i+1:end], st) {
			return w.fail(ErrNotPlain)
		}
		elem := s
		switch s.kind {
		case shapeStruct:
			var ok bool
			if elem, ok = s.field(b[i+1:end], &next); st.escaped || !ok {
				return w.fail(ErrShape)
			}
		case shapeMap:
			elem = s.elem
		}
		var key string
		if w.Duplicates {
			var ok bool
			if key, ok = keyText(b[i:end+1], st); !ok {
				return w.fail(ErrSyntax)
			}
			if keys.add(key) {
				return w.fail(&DuplicateKeyError{Key: key})
			}
		}
		if i = skipSpace(b, end+1); i >= len(b) || b[i] != ':' {
			return w.fail(ErrSyntax)
		}
		if i = w.value(b, skipSpace(b, i+1), elem, depth); i < 0 {
			return w.under(key, 0, false)
		}
		if i, done = w.nextItem(b, i, '}'); done {
			return i
		}
	}
}

func (w *walk) array(b []byte, i int, elem *Shape, depth int) int {
	i, done := w.enter(b, i, ']', depth)
	if done {
		return i
	}
	for n := 0; ; n++ {
		if i = w.value(b, i, elem, depth); i < 0 {
			return w.under("", n, true)
		}
		if i, done = w.nextItem(b, i, ']'); done {
			return i
		}
	}
}

// under is the failure of a member (at key) or an element (index n) of the
// value being read. A duplicate found inside it gets that step of its path;
// the steps gather innermost first.
func (w *walk) under(key string, n int, element bool) int {
	if d, ok := w.err.(*DuplicateKeyError); ok {
		if element {
			key = "[" + strconv.Itoa(n) + "]"
		}
		d.Path = append(d.Path, key)
	}
	return -1
}

// enter steps into the object or array that opens at b[i]. It returns the
// index of its first item, or true with where the walk goes on when there
// is none: past an empty one, or the failure of one nested too deep.
func (w *walk) enter(b []byte, i int, close byte, depth int) (int, bool) {
	if w.MaxDepth > 0 && depth > w.MaxDepth {
		return w.fail(ErrTooDeep), true
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == close {
		return i + 1, true
	}
	return i, false
}

// nextItem reads what follows a member or an element at i: a comma, and
// returns the index of the next one, or close, and returns the index after
// it and done. Anything else fails, done.
func (w *walk) nextItem(b []byte, i int, close byte) (int, bool) {
	if i = skipSpace(b, i); i >= len(b) {
		return w.fail(ErrSyntax), true
	}
	switch b[i] {
	case ',':
		return skipSpace(b, i+1), false
	case close:
		return i + 1, true
	}
	return w.fail(ErrSyntax), true
}

// keyText is a key, quotes included, as encoding/json reads it; false for
// one it refuses (stringEnd lets control characters pass). Only a key with
// an escape or a byte outside ASCII needs decoding: encoding/json also
// reads bytes that are not UTF-8 as U+FFFD, and two keys may meet there.
func keyText(raw []byte, st str) (string, bool) {
	if !st.escaped && st.ascii {
		return string(raw[1 : len(raw)-1]), true
	}
	var key string
	if err := json.Unmarshal(raw, &key); err != nil {
		return "", false
	}
	return key, true
}

// keysInline is how many keys of one object are compared one by one before
// a map takes over, so that a hostile object of many keys stays linear.
const keysInline = 16

// keySet holds an object's keys: the first keysInline in a list, compared
// one by one, and all of them in a map once there are more.
type keySet struct {
	inline [keysInline]string
	n      int
	many   map[string]struct{}
}

// add adds key and reports whether it was there already.
func (s *keySet) add(key string) (dup bool) {
	if s.many != nil {
		if _, dup = s.many[key]; !dup {
			s.many[key] = struct{}{}
		}
		return dup
	}
	if slices.Contains(s.inline[:s.n], key) {
		return true
	}
	if s.n < keysInline {
		s.inline[s.n] = key
		s.n++
		return false
	}
	s.many = make(map[string]struct{}, 2*keysInline)
	for _, k := range s.inline {
		s.many[k] = struct{}{}
	}
	s.many[key] = struct{}{}
	return false
}
