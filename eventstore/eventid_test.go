package eventstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
)

// The canonicalization is RFC 8785's: its own examples (sections 3.2.2 and
// 3.2.3) pin number formatting, string escaping and UTF-16 key order.
func TestCanonicalizationRFC8785Vectors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"values", `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`, `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
		{"key order", `{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := jcs.Transform([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestEventIDShape(t *testing.T) {
	for k, r := range validRecords() {
		id, err := EventID(r)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if !validEventID(id) {
			t.Fatalf("%s: event id %q is not sha256:<64 lowercase hex>", k, id)
		}
	}
	if _, err := EventIDOfJSON([]byte(`{"type":"journal.header"}`)); err == nil {
		t.Fatal("an invalid record got an event id")
	}
}

// reorder writes v with every object's keys in a random order and random
// whitespace between tokens: the same JSON value, other bytes.
func reorder(rng *rand.Rand, v any, out *bytes.Buffer) {
	ws := func() {
		out.WriteString([]string{"", " ", "\n", "\t  "}[rng.IntN(4)])
	}
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		out.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				out.WriteByte(',')
			}
			ws()
			kb, _ := json.Marshal(k)
			out.Write(kb)
			ws()
			out.WriteByte(':')
			ws()
			reorder(rng, v[k], out)
		}
		ws()
		out.WriteByte('}')
	case []any:
		out.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				out.WriteByte(',')
			}
			ws()
			reorder(rng, e, out)
		}
		out.WriteByte(']')
	default:
		b, _ := json.Marshal(v)
		out.Write(b)
	}
}

func decodeAny(t *testing.T, data []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// randomRecord is a valid record of a random kind with random ids, text and
// position.
func randomRecord(rng *rand.Rand) Record {
	word := func() string {
		const letters = "abcdefghijklmnopqrstuvwxyzé€😀-_ "
		rs := []rune(letters)
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			b.WriteRune(rs[rng.IntN(len(rs))])
		}
		return strings.TrimSpace(b.String()) + "x"
	}
	kinds := Kinds()
	k := kinds[rng.IntN(len(kinds))]
	r := validRecords()[k]
	b := r.RecordBase()
	if k != KindHeader {
		b.Sequence = 2 + rng.Uint64N(1<<40)
	}
	b.RecordID = RecordID(b.JournalID, k, word())
	b.OccurredAt = b.OccurredAt.Add(time.Duration(rng.Int64N(1 << 50)))
	switch r := r.(type) {
	case *Header:
		r.WorkingDirectory = "/" + word()
		r.SessionID = word()
	case *MessageAccepted:
		r.MessageID = word()
		r.Payload, _ = json.Marshal(map[string]any{"text": word(), "n": rng.IntN(1000), "z": []any{word(), true, nil}})
	case *MessageDelivery:
		r.Reason = word()
	case *Observation:
		r.ObservationID = word()
	case *Decision:
		r.Reason = word()
	case *StateChanged:
		r.Reason = word()
	case *ActivityUpdated:
		r.Progress.Summary = word()
	case *OwnerEffect:
		r.Payload = map[string]any{word(): word(), "n": float64(rng.IntN(1 << 20))}
	case *ProjectionRecorded:
		r.Payload = map[string]any{"kind": word(), "n": json.Number("7"), "ok": true}
	case *Interruption:
		r.Detail = word()
	}
	return r
}

// Identical records give identical ids however their bytes are laid out,
// and a record read back from its encoding keeps its id.
func TestEventIDStableAcrossEncodings(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		r := randomRecord(rng)
		want, err := EventID(r)
		if err != nil {
			t.Fatalf("case %d %s: %v", i, r.Kind(), err)
		}
		data, err := Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode(data)
		if err != nil {
			t.Fatalf("case %d: Decode(%s): %v", i, data, err)
		}
		if got, _ := EventID(back); got != want {
			t.Fatalf("case %d %s: decoded record has id %s, want %s", i, r.Kind(), got, want)
		}
		var shuffled bytes.Buffer
		reorder(rng, decodeAny(t, data), &shuffled)
		got, err := EventIDOfJSON(shuffled.Bytes())
		if err != nil {
			t.Fatalf("case %d: reordered %s: %v", i, shuffled.Bytes(), err)
		}
		if got != want {
			t.Fatalf("case %d %s: reordered bytes give %s, want %s\n%s\n%s", i, r.Kind(), got, want, data, shuffled.Bytes())
		}
	}
}

// Changing any one field of a record, at any depth, changes its id.
func TestEventIDChangesWithAnyField(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 40 {
		r := randomRecord(rng)
		data, err := Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := EventID(r)
		changed := 0
		for _, path := range leaves(decodeAny(t, data), "") {
			v := decodeAny(t, data)
			if !changeLeaf(v, path) {
				continue
			}
			out, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			got, err := EventIDOfJSON(out)
			if err != nil {
				continue // the change made the record invalid: no id at all
			}
			changed++
			if got == want {
				t.Fatalf("case %d %s: changing %s kept the id %s", i, r.Kind(), path, got)
			}
		}
		if changed < 5 {
			t.Fatalf("case %d %s: only %d fields could be changed validly", i, r.Kind(), changed)
		}
	}
}

// leaves lists the paths of a JSON value's scalars, "a.b.0.c".
func leaves(v any, path string) []string {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			out = append(out, leaves(e, join(k))...)
		}
	case []any:
		for i, e := range v {
			out = append(out, leaves(e, join(fmt.Sprint(i)))...)
		}
	default:
		out = append(out, path)
	}
	return out
}

// changeLeaf changes the scalar at path to another value of its type.
func changeLeaf(v any, path string) bool {
	parts := strings.Split(path, ".")
	for len(parts) > 1 {
		switch c := v.(type) {
		case map[string]any:
			v = c[parts[0]]
		case []any:
			var i int
			fmt.Sscan(parts[0], &i)
			v = c[i]
		}
		parts = parts[1:]
	}
	set := func(old any) (any, bool) {
		switch o := old.(type) {
		case string:
			if strings.HasSuffix(path, "occurredAt") {
				return strings.Replace(o, "2026", "2027", 1), true
			}
			return o + "y", true
		case json.Number:
			return json.Number(o.String() + "1"), true
		case bool:
			return !o, true
		}
		return nil, false
	}
	switch c := v.(type) {
	case map[string]any:
		n, ok := set(c[parts[0]])
		c[parts[0]] = n
		return ok
	case []any:
		var i int
		fmt.Sscan(parts[0], &i)
		n, ok := set(c[i])
		c[i] = n
		return ok
	}
	return false
}

// FuzzEventID: whatever the bytes, a record either gets no id or an id of
// the right shape that its own encoding gives again.
func FuzzEventID(f *testing.F) {
	for _, r := range validRecords() {
		data, err := Encode(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"a":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		id, err := EventIDOfJSON(data)
		if err != nil {
			return
		}
		if !validEventID(id) {
			t.Fatalf("id %q has the wrong shape", id)
		}
		r, err := Decode(data)
		if err != nil {
			t.Fatalf("an id without a record: %v", err)
		}
		again, err := Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		if id2, err := EventIDOfJSON(again); err != nil || id2 != id {
			t.Fatalf("re-encoded record: id %q (%v), want %q", id2, err, id)
		}
	})
}
