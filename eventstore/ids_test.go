package eventstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestEscapeID(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"task-1_A", "task-1_A"},
		{"a.b", "a%2Eb"},
		{"..a", "%2E%2Ea"},
		{"../etc/passwd", "%2E%2E%2Fetc%2Fpasswd"},
		{"*", "%2A"},
		{">", "%3E"},
		{"a b", "a%20b"},
		{"%", "%25"},
		{"ü", "%C3%BC"},
	} {
		got, err := EscapeID(c.in)
		if err != nil || got != c.want {
			t.Errorf("EscapeID(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
		back, err := UnescapeID(got)
		if err != nil || back != c.in {
			t.Errorf("UnescapeID(%q) = %q, %v; want %q", got, back, err, c.in)
		}
	}
	for _, bad := range []string{"", strings.Repeat("x", MaxIDLength+1)} {
		if _, err := EscapeID(bad); !errors.Is(err, ErrInvalidID) {
			t.Errorf("EscapeID(%d bytes): got %v, want ErrInvalidID", len(bad), err)
		}
	}
	// Only the canonical spelling unescapes, so each id has one file name.
	for _, bad := range []string{"", "a.b", "%2e", "%41", "%4", "%", "a%zz", "a/b"} {
		if _, err := UnescapeID(bad); !errors.Is(err, ErrInvalidID) {
			t.Errorf("UnescapeID(%q): got %v, want ErrInvalidID", bad, err)
		}
	}
}

// An id that is not UTF-8 is refused, naming the bad byte: a record would
// store it as U+FFFD while subjects and derived ids kept the byte.
func TestIDsMustBeUTF8(t *testing.T) {
	const bad = "t-\xff\xfe"
	for _, tc := range []struct {
		name string
		try  func() (string, error) // returns what was made from the id
	}{
		{"NewReference owner id", func() (string, error) {
			ref, err := NewReference(OwnerTask, bad, "ae-1")
			return ref.OwnerID + ref.JournalID, err
		}},
		{"NewReference execution id", func() (string, error) {
			ref, err := NewReference(OwnerTask, "t-1", bad)
			return ref.AgentExecutionID + ref.JournalID, err
		}},
		{"NewAgentExecutionID owner id", func() (string, error) {
			return NewAgentExecutionID(OwnerTask, bad, "seed")
		}},
		{"EscapeID", func() (string, error) { return EscapeID(bad) }},
		{"UnescapeID", func() (string, error) { return UnescapeID("t-%FF%FE") }},
		{"ParseSubject", func() (string, error) {
			ref, err := ParseSubject("journal", "journal.Task.t-%FF%FE.ae-1")
			return ref.OwnerID, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.try()
			if !errors.Is(err, ErrInvalidID) {
				t.Fatalf("got error %v, want ErrInvalidID", err)
			}
			for _, want := range []string{"not UTF-8", "byte 0xFF at offset 2", `"t-\xff\xfe"`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("got error %q, want it to contain %q", err, want)
				}
			}
			if got != "" {
				t.Errorf("got %q made from the id, want nothing", got)
			}
		})
	}
	// UTF-8 beyond ASCII is an id like any other.
	for _, id := range []string{"tâche-ü", "任务-1", "\U0001F680"} {
		if _, err := NewReference(OwnerTask, id, id); err != nil {
			t.Errorf("NewReference(%q): got %v, want no error", id, err)
		}
	}
}

func TestDeterministicIDs(t *testing.T) {
	a, err := NewAgentExecutionID(OwnerTask, "task-1", "attempt-1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewAgentExecutionID(OwnerTask, "task-1", "attempt-1")
	c, _ := NewAgentExecutionID(OwnerTask, "task-1", "attempt-2")
	d, _ := NewAgentExecutionID(OwnerMission, "task-1", "attempt-1")
	if a != b {
		t.Fatalf("same inputs gave %s and %s", a, b)
	}
	if a == c || a == d {
		t.Fatalf("different inputs gave the same id %s", a)
	}
	if esc, _ := EscapeID(a); esc != a {
		t.Fatalf("execution id %q needs escaping; ids should be subject-safe as they are", a)
	}
	if _, err := NewAgentExecutionID("Planet", "x", "y"); err == nil {
		t.Fatal("unknown owner entity accepted")
	}
	// Length-prefixed parts: moving a boundary changes the id.
	if RecordID("j", KindMessage, "ab") == RecordID("j", KindMessage+"a", "b") {
		t.Fatal("record ids collide across part boundaries")
	}
}

func TestSubjectRoundTrip(t *testing.T) {
	ref, err := NewReference(OwnerRepository, "github.com/x/y", "exec.*>")
	if err != nil {
		t.Fatal(err)
	}
	subj, err := ref.Subject("journal")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(subj, "."); n != 3 {
		t.Fatalf("subject %q has %d dots, want 3 (four tokens)", subj, n)
	}
	back, err := ParseSubject("journal", subj)
	if err != nil || back != ref {
		t.Fatalf("ParseSubject(%q) = %+v, %v; want %+v", subj, back, err, ref)
	}
}

func FuzzEscapeID(f *testing.F) {
	for _, s := range []string{"a", "..", "a.b", "*", ">", "a/b", " ", "%", "%25", "ü", "\x00", "-_-", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		esc, err := EscapeID(id)
		if err != nil {
			if id != "" && len(id) <= MaxIDLength && utf8.ValidString(id) && strings.Trim(id, ".") != "" {
				t.Fatalf("EscapeID(%q) refused a valid id: %v", id, err)
			}
			return
		}
		if !utf8.ValidString(id) {
			t.Fatalf("EscapeID(%q) = %q, want an error: the id is not UTF-8", id, esc)
		}
		if esc == "" || esc == "." || esc == ".." || strings.Contains(esc, "..") {
			t.Fatalf("EscapeID(%q) = %q: empty or dot name", id, esc)
		}
		for i := 0; i < len(esc); i++ {
			if c := esc[i]; !keep(c) && c != '%' {
				t.Fatalf("EscapeID(%q) = %q holds %q", id, esc, c)
			}
		}
		back, err := UnescapeID(esc)
		if err != nil || back != id {
			t.Fatalf("UnescapeID(EscapeID(%q)) = %q, %v", id, back, err)
		}
	})
}

func FuzzUnescapeID(f *testing.F) {
	for _, s := range []string{"a", "%2E", "%2e", "%41", "%", "a%2", "%C3%BC"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := UnescapeID(s)
		if err != nil {
			return
		}
		// Anything accepted must be the canonical spelling of its id.
		esc, err := EscapeID(id)
		if err != nil || esc != s {
			t.Fatalf("UnescapeID(%q) = %q but EscapeID gives %q, %v", s, id, esc, err)
		}
	})
}

func FuzzDecode(f *testing.F) {
	for _, r := range validRecords() {
		data, err := Encode(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"type":"state.changed","currentInputRequestId":""}`))
	f.Add([]byte(`{"type":"observation.recorded","signal":{"type":"usage","payload":{}}}`))
	for _, c := range strictCases(f) {
		f.Add(c.data)
	}
	obs, err := Encode(validRecords()[KindObservation])
	if err != nil {
		f.Fatal(err)
	}
	for _, odd := range oddValues {
		f.Add(bytes.Replace(obs, []byte(`"sequence":4`), []byte(`"sequence":`+odd), 1))
		f.Add(bytes.Replace(obs, []byte(`"Which branch?"`), []byte(odd), 1))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// decodeStrict's fast path answers exactly as the slow path would,
		// error text included, at every level of the record.
		for _, target := range strictTargets(data, fuzzKind(data)) {
			if err := strictAgree(target); err != nil {
				t.Fatalf("decoding %s: %v\n%s", target.name, err, target.data)
			}
		}
		r, err := Decode(data)
		std, stdErr := decodeStd(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("Decode error %v is not ErrInvalidRecord", err)
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			// Decode is no stricter than encoding/json either, but for
			// mutatesContext, which it requires and encoding/json defaults,
			// and keys that match a field only ignoring case, which go-json
			// refuses for some fields (those of embedded structs among them).
			if stdErr == nil && !missingMutatesContext(err, data) && !inexactKey(err) {
				t.Fatalf("Decode refuses what encoding/json accepts: %v\n%s", err, data)
			}
			return
		}
		// The fast decoder must be no more lenient than encoding/json, and
		// read the same record. go-json reads some malformed JSON that
		// encoding/json refuses (a NUL after the value, control characters
		// in strings); that is as old as the go-json decoder and stays.
		if stdErr != nil {
			if !json.Valid(data) {
				return
			}
			t.Fatalf("go-json accepted what encoding/json refuses: %v\n%s", stdErr, data)
		}
		if !reflect.DeepEqual(std, r) { // cmp.Diff is slow on deep nesting
			t.Fatalf("go-json and encoding/json read different records (-encoding/json +Decode):\n%s\n%s", cmp.Diff(std, r), data)
		}
		// Whatever decodes must validate, encode, and decode to the same bytes.
		if err := Validate(r); err != nil {
			t.Fatalf("decoded record fails validation: %v", err)
		}
		enc, err := Encode(r)
		if err != nil {
			t.Fatalf("decoded record does not encode: %v", err)
		}
		r2, err := Decode(enc)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", enc, err)
		}
		enc2, err := Encode(r2)
		if err != nil || string(enc2) != string(enc) {
			t.Fatalf("encoding is not stable:\n%s\n%s", enc, enc2)
		}
	})
}

// fuzzKind is the kind Decode would decode data as, or, for input too
// broken to say, observation.recorded, the kind with the deepest nesting.
func fuzzKind(data []byte) Kind {
	if k, ok := sniffKind(data); ok {
		return k
	}
	var peek struct {
		Type Kind `json:"type"`
	}
	if json.Unmarshal(data, &peek) == nil {
		if _, ok := LookupKind(peek.Type); ok {
			return peek.Type
		}
	}
	return KindObservation
}

// decodeStd is Decode with encoding/json, strict, for the record kind the
// type field names. A signal's payload still goes through decodeStrict,
// from Signal.UnmarshalJSON; FuzzDecode checks it against the slow path.
func decodeStd(data []byte) (Record, error) {
	var peek struct {
		Type Kind `json:"type"`
	}
	if err := json.Unmarshal(data, &peek); err != nil {
		return nil, err
	}
	spec, ok := LookupKind(peek.Type)
	if !ok {
		return nil, fmt.Errorf("unknown record type %q", peek.Type)
	}
	r := spec.New()
	if err := decodeOnce(json.NewDecoder(bytes.NewReader(data)), data, r); err != nil {
		return nil, err
	}
	if err := Validate(r); err != nil {
		return nil, err
	}
	return r, nil
}

// inexactKey reports an unknown field refused for a key that is not
// spelled exactly as any accepted field.
func inexactKey(err error) bool {
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Problem != "unknown field" {
		return false
	}
	p := ve.Problems[0]
	key := p.Field[strings.LastIndexAny(p.Field, ".]")+1:]
	for _, a := range p.Accepted {
		if strings.EqualFold(a, key) {
			return a != key
		}
	}
	return false
}

// missingMutatesContext reports the one refusal encoding/json cannot make:
// a message.accepted without mutatesContext, or with null.
func missingMutatesContext(err error, data []byte) bool {
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Kind != KindMessage || len(ve.Problems) != 1 ||
		ve.Problems[0].Field != "mutatesContext" || ve.Problems[0].Problem != "required (true or false)" {
		return false
	}
	var m struct {
		MutatesContext *bool `json:"mutatesContext"`
	}
	return json.Unmarshal(data, &m) == nil && m.MutatesContext == nil
}
