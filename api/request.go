package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxBodyDepth bounds how deeply a request body may nest objects and
// arrays. No route takes more than a few levels; the bound keeps the
// duplicate-key walk's recursion small whatever a client sends.
const maxBodyDepth = 64

// decodeBody reads the request body into v strictly: one JSON object, no
// unknown field, no key twice in one object, no trailing data, at most
// MaxBody bytes and maxBodyDepth levels. An empty body is accepted,
// leaving v as it is, when optional is true.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any, optional bool) error {
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
	// The body is read whole, within MaxBody, so that it can be walked for
	// duplicate keys before it is decoded.
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return bodyError(err, v)
	}
	if len(bytes.TrimSpace(data)) == 0 && optional {
		return nil
	}
	if err := checkKeys(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyError(err, v)
	}
	var extra json.RawMessage
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return bodyError(err, v)
	}
	return invalidField("(body)", nil, "trailing data after the JSON object (want exactly one object)")
}

// checkKeys refuses a body whose first JSON value has a key twice in one
// object: encoding/json would keep the last value silently, so a client
// and the journal could disagree on what was sent. It also refuses
// nesting deeper than maxBodyDepth. Malformed JSON passes, for the
// decoder to report.
//
// It walks the bytes itself rather than through json.Decoder's tokens,
// which cost every request as much as decoding the body did.
func checkKeys(data []byte) error {
	k := keyCheck{data: data}
	k.value()
	return k.err
}

// keyCheck is one walk of checkKeys. A walk stops at the first duplicate
// or at too deep a nesting, with err set, or at malformed JSON, with err
// nil.
type keyCheck struct {
	data []byte
	i    int
	// path is the containers around the value being read, outermost
	// first: the key or index each is at.
	path []pathSeg
	err  error
	done bool
}

type pathSeg struct {
	key   string
	index int
	array bool
}

// keysInline is how many keys of one object are compared one by one before
// a map takes over, so that a hostile object of many keys stays linear.
const keysInline = 16

func (k *keyCheck) space() {
	for k.i < len(k.data) {
		switch k.data[k.i] {
		case ' ', '\t', '\n', '\r':
			k.i++
		default:
			return
		}
	}
}

// value reads one value; an object or array is walked, anything else
// passed over.
func (k *keyCheck) value() {
	k.space()
	if k.i >= len(k.data) {
		k.done = true
		return
	}
	switch k.data[k.i] {
	case '{', '[':
		k.container(k.data[k.i] == '{')
	case '"':
		if _, ok := k.str(); !ok {
			k.done = true
		}
	default:
		// A number or a literal: the decoder judges it.
		for k.i < len(k.data) && !strings.ContainsRune(",]} \t\n\r", rune(k.data[k.i])) {
			k.i++
		}
	}
}

// str reads a string at k.i and returns it as its JSON text, quotes
// included.
func (k *keyCheck) str() ([]byte, bool) {
	start := k.i
	for k.i++; k.i < len(k.data); k.i++ {
		switch k.data[k.i] {
		case '\\':
			k.i++
		case '"':
			k.i++
			return k.data[start:k.i], true
		}
	}
	return nil, false
}

// container walks an object or array at k.i.
func (k *keyCheck) container(object bool) {
	if len(k.path) >= maxBodyDepth {
		k.err = invalidField("(body)", nil, "objects and arrays nest deeper than %d levels (want at most %d)", maxBodyDepth, maxBodyDepth)
		k.done = true
		return
	}
	closing := byte(']')
	if object {
		closing = '}'
	}
	k.i++
	if k.next(closing) {
		return
	}
	var keys keySet
	for n := 0; ; n++ {
		seg := pathSeg{index: n, array: !object}
		if object {
			if seg.key, k.done = k.key(); k.done {
				return
			}
			if keys.add(seg.key) {
				k.err = invalidField(clip(jsonPath(k.segments(seg.key)), maxFieldLen), nil,
					"key %q appears more than once in the same object (want each key once)", clip(seg.key, maxFieldLen))
				k.done = true
				return
			}
			if k.done = !k.next(':'); k.done {
				return
			}
		}
		k.path = append(k.path, seg)
		k.value()
		k.path = k.path[:len(k.path)-1]
		switch {
		case k.done:
			return
		case k.next(closing):
			return
		case !k.next(','):
			k.done = true
			return
		}
	}
}

// next passes over white space and, when c comes next, over c too,
// reporting whether it did.
func (k *keyCheck) next(c byte) bool {
	k.space()
	if k.i < len(k.data) && k.data[k.i] == c {
		k.i++
		return true
	}
	return false
}

// key reads an object's key as the decoder reads it; malformed says the
// key is not a JSON string.
func (k *keyCheck) key() (key string, malformed bool) {
	k.space()
	if k.i >= len(k.data) || k.data[k.i] != '"' {
		return "", true
	}
	raw, ok := k.str()
	if !ok {
		return "", true
	}
	key, ok = keyText(raw)
	return key, !ok
}

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

// keyText is a key's string as the decoder reads it. Only a key with an
// escape or a byte outside ASCII needs decoding: the decoder also turns
// invalid UTF-8 into U+FFFD, and two keys may meet there.
func keyText(raw []byte) (string, bool) {
	plain := true
	for _, c := range raw {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(raw[1 : len(raw)-1]), true
	}
	var key string
	if err := json.Unmarshal(raw, &key); err != nil {
		return "", false
	}
	return key, true
}

// segments is the path of key in the object being walked, as jsonPath
// joins it.
func (k *keyCheck) segments(key string) []string {
	segs := make([]string, 0, len(k.path)+1)
	for _, p := range k.path {
		if p.array {
			segs = append(segs, "["+strconv.Itoa(p.index)+"]")
		} else {
			segs = append(segs, p.key)
		}
	}
	return append(segs, key)
}

// jsonPath joins path segments the way error fields name them:
// signal.payload.text, command[0].
func jsonPath(segs []string) string {
	var b strings.Builder
	for i, s := range segs {
		if i > 0 && !strings.HasPrefix(s, "[") {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// bodyError turns a decoding error into one that names the field.
func bodyError(err error, v any) error {
	var tooBig *http.MaxBytesError
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &tooBig):
		return err
	case errors.Is(err, io.EOF):
		return invalidField("(body)", nil, "the body is empty (want a JSON object)")
	case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF):
		return invalidField("(body)", nil, "not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return invalidField("(body)", nil, "got JSON %s (want an object)", typeErr.Value)
		}
		return invalidField(jsonFieldPath(typeErr.Field, v), nil, "got JSON %s, want %s", typeErr.Value, jsonTypeName(typeErr.Type))
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return invalidField(clip(strings.Trim(name, `"`), maxFieldLen), jsonFields(v), "unknown field")
	}
	// Errors of a field's own decoder (a signal names its field itself).
	return err
}

// jsonFieldPath is the path in the body of a decoding error's field:
// encoding/json names a field promoted from an embedded struct after the
// struct's Go name (Observation.rawText), which the body does not hold.
func jsonFieldPath(field string, v any) string {
	t := reflect.TypeOf(v)
	for {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		first, rest, ok := strings.Cut(field, ".")
		if t.Kind() != reflect.Struct || !ok {
			return field
		}
		f, found := t.FieldByName(first)
		if !found || !f.Anonymous || f.Tag.Get("json") != "" {
			return field
		}
		field, t = rest, f.Type
	}
}

// jsonFields lists the JSON field names of the struct v points to, in the
// order they are declared: an embedded struct's in its place (a body
// decoded as a wire type with some fields given another form), each name
// once.
func jsonFields(v any) []string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if name != "" && name != "-" && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	walk(t)
	return out
}

func jsonTypeName(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("a whole number from 0 to %d", uint64(1)<<(t.Bits())-1)
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

// checkQuery refuses query parameters the route does not take.
func checkQuery(r *http.Request, allowed ...string) error {
	for name := range r.URL.Query() {
		if !slices.Contains(allowed, name) {
			if len(allowed) == 0 {
				return invalidField(name, nil, "unknown query parameter (this route takes none)")
			}
			return invalidField(name, allowed, "unknown query parameter")
		}
	}
	return nil
}

// uintParam reads an optional whole-number query parameter within [lo, hi];
// def when absent.
func uintParam(r *http.Request, name string, def, lo, hi uint64) (uint64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, invalidField(name, nil, "%q is not accepted (want a whole number from %d to %d)", v, lo, hi)
	}
	return n, nil
}
