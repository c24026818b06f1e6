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

	"github.com/agentjournal/agentjournal/internal/strictjson"
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

// checkKeys refuses a body whose JSON value has a key twice in one object:
// encoding/json would keep the last value silently, so a client and the
// journal could disagree on what was sent. It also refuses nesting deeper
// than maxBodyDepth. Malformed JSON passes, for the decoder to report.
//
// It walks the bytes (strictjson) rather than json.Decoder's tokens, which
// cost every request as much as decoding the body did.
func checkKeys(data []byte) error {
	err := strictjson.Check(data, strictjson.Checks{Duplicates: true, MaxDepth: maxBodyDepth})
	var dup *strictjson.DuplicateKeyError
	switch {
	case errors.As(err, &dup):
		return invalidField(clip(jsonPath(append(dup.Path, dup.Key)), maxFieldLen), nil,
			"key %q appears more than once in the same object (want each key once)", clip(dup.Key, maxFieldLen))
	case errors.Is(err, strictjson.ErrTooDeep):
		return invalidField("(body)", nil, "objects and arrays nest deeper than %d levels (want at most %d)", maxBodyDepth, maxBodyDepth)
	}
	return nil
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

// decodeRequest reads the request of a route that takes a JSON body and no
// query parameter: an unknown parameter is refused before the body is read,
// and the body is decoded into v as decodeBody does.
func (s *Server) decodeRequest(w http.ResponseWriter, r *http.Request, v any, optional bool) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	return s.decodeBody(w, r, v, optional)
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
