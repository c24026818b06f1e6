package strictjson

import (
	"cmp"
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode"

	gojson "github.com/goccy/go-json"
)

// Shape is what a walk knows of a destination type: which keys its objects
// may hold and the shape of each value. Build one with ShapeOf.
type Shape struct {
	kind   shapeKind
	fields []shapeField // shapeStruct, in encoding order
	elem   *Shape       // shapeMap and shapeList
}

type shapeField struct {
	name  string
	shape *Shape
}

type shapeKind uint8

const (
	// shapeAny takes any value: interfaces, and types that decode
	// themselves.
	shapeAny shapeKind = iota
	shapeScalar
	shapeStruct
	shapeMap
	shapeList
)

var (
	anyShape    = &Shape{kind: shapeAny}
	scalarShape = &Shape{kind: shapeScalar}
	shapes      sync.Map // reflect.Type → *Shape
)

// decodesItself lists the interfaces through which a type reads its own
// JSON, go-json's among them; a walk leaves such values to it.
var decodesItself = []reflect.Type{
	reflect.TypeFor[json.Unmarshaler](),
	reflect.TypeFor[gojson.UnmarshalerContext](),
	reflect.TypeFor[encoding.TextUnmarshaler](),
}

// ShapeOf returns the shape of t as encoding/json decodes into it,
// computed once per type: a struct takes the keys of its fields, a map or
// a slice the shape of its elements, an interface or a type that decodes
// itself any value.
func ShapeOf(t reflect.Type) *Shape {
	if s, ok := shapes.Load(t); ok {
		return s.(*Shape)
	}
	s := buildShape(t, map[reflect.Type]*Shape{})
	shapes.Store(t, s)
	return s
}

// Keys lists the keys an object of a struct shape may hold, in field
// order; nil for any other shape.
func (s *Shape) Keys() []string {
	var out []string
	for _, f := range s.fields {
		out = append(out, f.name)
	}
	return out
}

// buildShape follows encoding/json's view of t. seen holds the composite
// types being built, so a recursive type refers to itself.
func buildShape(t reflect.Type, seen map[reflect.Type]*Shape) *Shape {
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
		s := &Shape{kind: shapeMap}
		seen[t] = s
		s.elem = buildShape(t.Elem(), seen)
		return s
	case reflect.Slice, reflect.Array:
		s := &Shape{kind: shapeList}
		seen[t] = s
		s.elem = buildShape(t.Elem(), seen)
		return s
	case reflect.Struct:
		s := &Shape{kind: shapeStruct}
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
// order: embedded structs flattened (through pointers too), and of fields
// sharing a name the shallowest, or the only tagged one among the
// shallowest. Names that stay ambiguous are left out, so that their keys
// are refused.
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

// field returns the shape of the field named key. Encoders write fields in
// order, so the search starts after the previous match (*next).
func (s *Shape) field(key []byte, next *int) (*Shape, bool) {
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
