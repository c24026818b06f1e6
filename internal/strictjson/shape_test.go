package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Types whose fields share names, embedded at various depths.
type (
	shapeInner struct {
		X int `json:"x"`
		Y int
		W int `json:"w"`
	}
	shapeOther struct {
		X int `json:"x"`
		V int `json:"v"`
	}
	shapeDeep struct {
		shapeOther
		Y int `json:"Y"`
	}
	shapeTree struct {
		Next  *shapeTree  `json:"next"`
		Items []shapeTree `json:"items"`
	}
	shapeC1    struct{ C int }
	shapeC2    struct{ C int }
	shapeOuter struct {
		shapeInner
		shapeDeep
		shapeC1
		shapeC2
		Tagged   shapeOther `json:"tagged"`
		W        string     `json:"w,omitempty"`
		Skipped  int        `json:"-"`
		Dash     int        `json:"-,"`
		Invalid  int        `json:"a\\b"`
		Untagged int
		hidden   int
	}
)

// knownKeys is the check the event store makes before its fast decoder.
func knownKeys(data []byte, s *Shape) bool {
	return Check(data, Checks{Shape: s, MaxDepth: 1000, Plain: true}) == nil
}

func TestShapeFollowsEncodingJSON(t *testing.T) {
	s := ShapeOf(reflect.TypeFor[*shapeOuter]())
	if got, want := s.Keys(), []string{"x", "v", "Y", "tagged", "w", "-", "Invalid", "Untagged"}; !slices.Equal(got, want) {
		t.Errorf("shape fields %v, want %v", got, want)
	}
	for _, key := range []string{"x", "X", "y", "Y", "w", "v", "V", "C", "tagged", "Tagged", "-", "Skipped", "Dash",
		"Invalid", "Untagged", "untagged", "hidden", "shapeInner", "shapeDeep"} {
		data := []byte(`{"` + key + `":null}`)
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		err := dec.Decode(&shapeOuter{})
		if err != nil && !strings.Contains(err.Error(), "unknown field") {
			t.Fatalf("%s: %v", data, err)
		}
		if knownKeys(data, s) && err != nil {
			t.Errorf("key %q: the key check accepts a field encoding/json does not have", key)
		}
	}
	tree := ShapeOf(reflect.TypeFor[*shapeTree]())
	if !knownKeys([]byte(`{"next":{"next":{}},"items":[{"next":null,"items":[]}]}`), tree) ||
		knownKeys([]byte(`{"next":{"items":[{"nxt":1}]}}`), tree) {
		t.Error("the key check does not follow a recursive type")
	}
}

type selfDecoding struct{ seen []byte }

func (s *selfDecoding) UnmarshalJSON(b []byte) error { s.seen = b; return nil }

func TestShapeKinds(t *testing.T) {
	type record struct {
		Tags  []string          `json:"tags"`
		Attrs map[string]int    `json:"attrs"`
		Free  any               `json:"free"`
		Own   selfDecoding      `json:"own"`
		Items []shapeOther      `json:"items"`
		Index map[string]*Shape `json:"-"`
	}
	s := ShapeOf(reflect.TypeFor[record]())
	cases := []struct {
		name, data string
		want       error
	}{
		{"fits", `{"tags":["a"],"attrs":{"any key":1},"free":{"x":[{"y":1}]},"own":{"whatever":[]},"items":[{"x":1,"v":2}]}`, nil},
		{"unknown key", `{"tag":[]}`, ErrShape},
		{"key in another case", `{"Tags":[]}`, ErrShape},
		{"escaped key", `{"t\u0061gs":[]}`, ErrShape},
		{"unknown key in an element", `{"items":[{"x":1},{"w":1}]}`, ErrShape},
		{"object for a list", `{"tags":{}}`, ErrShape},
		{"array for a struct", `{"items":[[]]}`, ErrShape},
		{"object for a scalar", `{"attrs":{"a":{}}}`, ErrShape},
		{"array for a map", `{"attrs":[]}`, ErrShape},
		{"null and scalars anywhere", `{"tags":null,"attrs":{"a":"x"},"items":[null,1]}`, nil},
		{"array at the top", `[]`, ErrShape},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Check([]byte(c.data), Checks{Shape: s}); !errors.Is(got, c.want) || (got == nil) != (c.want == nil) {
				t.Errorf("Check(%s) = %v, want %v", c.data, got, c.want)
			}
		})
	}
}
