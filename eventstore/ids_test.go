package eventstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestEscapeID(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"task-1_A", "task-1_A"},
		{"a.b", "a%2Eb"},
		{"..", "%2E%2E"},
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
	for _, s := range []string{"a", "..", "a.b", "*", ">", "a/b", " ", "%", "%25", "ü", "\x00", "-_-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		esc, err := EscapeID(id)
		if err != nil {
			if id != "" && len(id) <= MaxIDLength {
				t.Fatalf("EscapeID(%q) refused a valid id: %v", id, err)
			}
			return
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
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("Decode error %v is not ErrInvalidRecord", err)
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		// The fast decoder must be no more lenient than encoding/json.
		spec, _ := LookupKind(r.Kind())
		if err := decodeOnce(json.NewDecoder(bytes.NewReader(data)), data, spec.New()); err != nil {
			t.Fatalf("go-json accepted what encoding/json refuses: %v\n%s", err, data)
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
