package eventstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/internal/strictjson"
	"github.com/google/go-cmp/cmp"
)

// strictCase is one input for comparing the strict decoding paths.
type strictCase struct {
	name string
	data []byte
}

// strictEdit changes the encoding of the named record of strictRecords by
// replacing old with new once.
type strictEdit struct {
	record   string
	name     string
	old, new string
}

// strictEdits put unknown, case-variant, escaped, duplicated and null keys
// and values at every nesting level of the valid records.
var strictEdits = []strictEdit{
	{"journal.header", "unknown in protocolDescriptor", `"protocolDescriptor":{`, `"protocolDescriptor":{"extra":1,`},
	{"journal.header", "unknown in messages[0]", `"messages":[{`, `"messages":[{"extra":1,`},
	{"journal.header", "unknown in messages[1]", `{"type":"compact",`, `{"type":"compact","extra":{"a":[1]},`},
	{"journal.header", "unknown in transportState", `"transportState":{`, `"transportState":{"Extra":true,`},
	{"journal.header", "case variant in protocolDescriptor", `"posture"`, `"Posture"`},
	{"journal.header", "case variant in messages[1]", `"adapterId"`, `"adapterID"`},
	{"journal.header", "escaped key in protocolDescriptor", `"posture"`, `"\u0070osture"`},
	{"journal.header", "escaped key in messages[0]", `"label"`, `"lab\u0065l"`},
	{"journal.header", "empty message object", `"messages":[{`, `"messages":[{},{`},
	{"message.accepted", "no mutatesContext", `,"mutatesContext":false`, ``},
	{"message.accepted", "null mutatesContext", `"mutatesContext":false`, `"mutatesContext":null`},
	{"message.accepted", "case variant mutatesContext", `"mutatesContext"`, `"MutatesContext"`},
	{"message.accepted", "escaped mutatesContext", `"mutatesContext"`, `"mutates\u0043ontext"`},
	{"message.accepted", "duplicate mutatesContext", `"mutatesContext":false`, `"mutatesContext":true,"mutatesContext":false`},
	{"message.accepted", "escaped key inside raw payload", `{"text"`, `{"t\u0065xt"`},
	{"message.accepted", "unknown key inside raw payload", `{"text"`, `{"anything":1,"text"`},
	{"observation.recorded", "unknown in signal", `"signal":{`, `"signal":{"extra":1,`},
	{"observation.recorded", "unknown in signal.payload", `"payload":{`, `"payload":{"extra":1,`},
	{"observation.recorded", "case variant in signal", `"type":"needs_input"`, `"Type":"needs_input"`},
	{"observation.recorded", "case variant in signal.payload", `"question"`, `"Question"`},
	{"observation.recorded", "escaped key in signal.payload", `"requestId"`, `"request\u0049d"`},
	{"observation.recorded", "escaped key in signal", `"payload":{`, `"p\u0061yload":{`},
	{"observation.recorded", "duplicate in signal.payload", `"question":`, `"question":"first","question":`},
	{"observation.recorded", "trailing data in signal", `"choices":["main","dev"]}}`, `"choices":["main","dev"]}}x`},
	{"activity.updated", "unknown in progress.units", `"units":{`, `"units":{"extra":1,`},
	{"activity.updated", "case variant in progress.units", `"completed"`, `"Completed"`},
	{"activity.updated", "escaped key in telemetry", `"inputTokens"`, `"input\u0054okens"`},
	{"activity.updated", "duplicate capabilities", `"capabilities":{"streaming":true}`, `"capabilities":{"streaming":true,"streaming":false}`},
	{"activity.updated", "duplicate nested object", `"progress":{`, `"progress":{"units":{"completed":1},"units":{"total":9},"summary":"x"},"progress":{`},
	{"state.changed", "null currentInputRequestId", `"currentInputRequestId":"req-1"`, `"currentInputRequestId":null`},
	{"state.changed", "empty currentInputRequestId", `"currentInputRequestId":"req-1"`, `"currentInputRequestId":""`},
	{"owner-effect.recorded", "escaped key inside free-form payload", `{"taskId"`, `{"task\u0049d"`},
	{"owner-effect.recorded", "unusual keys inside free-form payload", `{"taskId"`, `{"TaskId":1,"":{"\"":[]},"taskId"`},
	{"progress", "unknown in signal.payload.units", `"units":{`, `"units":{"extra":1,`},
	{"progress", "case variant in signal.payload.units", `"unit":`, `"Unit":`},
	{"progress", "escaped key in signal.payload.units", `"unit":`, `"\u0075nit":`},
	{"progress", "escaped keys in free-form payload", `"tool":{`, `"t\u006fol":{"\u0000":null,`},
	{"usage", "case variant in usage", `"cumulative"`, `"CUMULATIVE"`},
	{"usage", "unknown in usage", `"cumulative"`, `"cumulativ":0,"cumulative"`},
}

// strictValueEdits replace the JSON value that follows old with new.
var strictValueEdits = []strictEdit{
	{"journal.header", "null protocolDescriptor", `"protocolDescriptor":`, `null`},
	{"journal.header", "null transportState", `"transportState":`, `null`},
	{"journal.header", "null messages", `"messages":`, `null`},
	{"journal.header", "empty protocolDescriptor", `"protocolDescriptor":`, `{}`},
	{"journal.header", "array for transportState", `"transportState":`, `[]`},
	{"journal.header", "object for signals", `"signals":`, `{"a":1}`},
	{"message.accepted", "empty payload object", `"payload":`, `{}`},
	{"observation.recorded", "null signal", `"signal":`, `null`},
	{"observation.recorded", "empty signal", `"signal":`, `{}`},
	{"observation.recorded", "null signal.payload", `"payload":`, `null`},
	{"observation.recorded", "null choices", `"choices":`, `null`},
	{"observation.recorded", "object for choices", `"choices":`, `{"main":"dev"}`},
	{"observation.recorded", "empty signal.payload", `"payload":`, `{}`},
	{"activity.updated", "empty units", `"units":`, `{}`},
	{"activity.updated", "null units", `"units":`, `null`},
	{"activity.updated", "null completed", `"completed":`, `null`},
	{"activity.updated", "string for progress", `"progress":`, `"x"`},
	{"projection.recorded", "null payload", `"payload":`, `null`},
	{"owner-effect.recorded", "empty payload", `"payload":`, `{}`},
	{"progress", "null signal.payload.units", `"units":`, `null`},
	{"progress", "empty signal.payload.units", `"units":`, `{}`},
	{"progress", "array for signal.payload.units", `"units":`, `[{}]`},
	{"progress", "deep free-form payload", `"tool":`, `[[[[{"a":[[{"b":{}}]]}]]]]`},
	{"owner-effect.recorded", "nesting deeper than the key check follows", `"payload":`,
		`{"deep":` + strings.Repeat("[", maxKeyDepth+1) + strings.Repeat("]", maxKeyDepth+1) + `}`},
}

// strictRecords are the valid records, named by kind, and two more whose
// signals nest deeper.
func strictRecords() map[string]Record {
	out := map[string]Record{}
	for k, r := range validRecords() {
		out[string(k)] = r
	}
	out["progress"] = &Observation{Base: base(KindObservation, 10), ObservationID: "obs-2", Source: ObservedMCP,
		Confidence: ConfidenceAuthoritative, RawText: "ran the tests",
		Signal:  NewSignal(&ProgressSignal{Summary: "testing", Units: &Units{Completed: i64(1), Total: i64(3), Unit: "packages"}}),
		Payload: map[string]any{"tool": map[string]any{"name": "go", "args": []any{"test", 1.5, true, nil}}}}
	out["usage"] = &Observation{Base: base(KindObservation, 11), ObservationID: "obs-3", Source: ObservedMCP,
		Confidence: ConfidenceAuthoritative, Signal: NewSignal(&UsageSignal{InputTokens: i64(5), Cumulative: true})}
	return out
}

// strictCases returns the records of strictRecords and, for the strict
// decoders to agree on, inputs changed at every nesting level.
func strictCases(tb testing.TB) []strictCase {
	tb.Helper()
	records := strictRecords()
	encoded := map[string][]byte{}
	for _, name := range slices.Sorted(maps.Keys(records)) {
		data, err := Encode(records[name])
		if err != nil {
			tb.Fatal(err)
		}
		encoded[name] = data
	}
	var out []strictCase
	for _, name := range slices.Sorted(maps.Keys(encoded)) {
		s := string(encoded[name])
		top := strings.TrimPrefix(s, "{")
		for _, c := range []struct{ name, data string }{
			{"valid", s},
			{"unknown top-level field", `{"extra":1,` + top},
			{"case variant top-level key", `{"RecordId"` + strings.TrimPrefix(top, `"recordId"`)},
			{"escaped top-level key", `{"record\u0049d"` + strings.TrimPrefix(top, `"recordId"`)},
			{"escaped first letter", `{"\u0072ecordId"` + strings.TrimPrefix(top, `"recordId"`)},
			{"escaped unknown key", `{"x\"y":1,` + top},
			{"prefix of a known key", `{"record":1,` + top},
			{"known key and more", `{"recordIdx":1,` + top},
			{"duplicate top-level key", `{"recordId":"rec-other",` + top},
			{"null top-level value", `{"recordId":null,` + top},
			{"trailing object", s + ` {}`},
			{"trailing garbage", s + `x`},
			{"trailing NUL", s + "\x00"},
			{"trailing whitespace", s + " \t\r\n"},
			{"leading whitespace", "\n " + s},
			{"white space everywhere", strings.NewReplacer(",", " ,\n", ":", "\t: ", "{", "{ ", "}", " }", "[", "[ ", "]", " ]").Replace(s)},
			{"truncated", s[:len(s)-1]},
			{"bad UTF-8 in a value", strings.Replace(s, `"recordId":"rec-`, "\"recordId\":\"rec-\xd4", 1)},
			{"bad UTF-8 in a key", `{"\xff":1,` + top},
			{"long bad UTF-8", strings.Replace(s, `"recordId":"rec-`, `"recordId":"rec-`+strings.Repeat("\xc2", 2000), 1)},
		} {
			out = append(out, strictCase{name + ": " + c.name, []byte(c.data)})
		}
	}
	for i, e := range slices.Concat(strictEdits, strictValueEdits) {
		data := encoded[e.record]
		start := strings.Index(string(data), e.old)
		if start < 0 {
			tb.Fatalf("%s: %s: %q is not in %s", e.record, e.name, e.old, data)
		}
		end := start + len(e.old)
		if i >= len(strictEdits) {
			start = end
			dec := json.NewDecoder(bytes.NewReader(data[start:]))
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				tb.Fatal(err)
			}
			end = start + int(dec.InputOffset())
		}
		edited := string(data[:start]) + e.new + string(data[end:])
		out = append(out, strictCase{e.record + ": " + e.name, []byte(edited)})
	}
	for _, s := range []string{`{}`, `null`, `[]`, `""`, ``, ` `, `{"type":"observation.recorded"}`, `{"type":"message.accepted","mutatesContext":true}`} {
		out = append(out, strictCase{"bare " + s, []byte(s)})
	}
	return out
}

func TestDecodeStrictFastPathMatchesSlowPath(t *testing.T) {
	for _, c := range strictCases(t) {
		for _, k := range Kinds() {
			for _, target := range strictTargets(c.data, k) {
				if err := strictAgree(target); err != nil {
					t.Errorf("%s, as %s: %v\n%s", c.name, target.name, err, target.data)
				}
			}
		}
	}
	// Records as Encode writes them take the fast path at every level.
	for name, r := range strictRecords() {
		data, err := Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range strictTargets(data, r.Kind()) {
			v, _ := target.dest()
			if !knownKeys(target.data, strictjson.ShapeOf(reflect.TypeOf(v))) {
				t.Errorf("%s: the key check refuses %s: %s", name, target.name, target.data)
			}
		}
	}
}

// TestRecordShapes: every record kind's shape names exactly its registered
// fields, in order, and so does decodeAs's MessageAccepted wrapper.
func TestRecordShapes(t *testing.T) {
	for _, k := range Kinds() {
		spec, _ := LookupKind(k)
		if got := strictjson.ShapeOf(reflect.TypeOf(spec.New())).Keys(); !slices.Equal(got, spec.Fields()) {
			t.Errorf("%s: shape fields %v, want %v", k, got, spec.Fields())
		}
	}
	wrapper := reflect.TypeFor[*struct {
		*MessageAccepted
		MutatesContext **bool `json:"mutatesContext"`
	}]()
	spec, _ := LookupKind(KindMessage)
	if got := strictjson.ShapeOf(wrapper).Keys(); !slices.Equal(got, spec.Fields()) {
		t.Errorf("message.accepted wrapper: shape fields %v, want %v", got, spec.Fields())
	}
}

// oddValues are JSON values, some of them malformed, where decoders tend
// to differ.
var oddValues = []string{
	`""`, `"\u0000"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\udc00\ud83d"`, `"\u00zz"`, `"\u00e9"`, `"\/"`,
	`"a\"b"`, `"\q"`, `"\u12"`, `"\u"`, `"\"`, `"\ud800\u0041"`, `"\ud800\"`, `"x\udbff"`, `"\udbff\udfff"`,
	`"\uD83D\uDE00"`, `"\uDE00"`, `"\u0022"`, "\"\x01\"", "\"\x00\"", `"é"`, `"\\"`,
	`0`, `-0`, `01`, `1.`, `.5`, `-`, `+1`, `-a`, `1e`, `1e+`, `1.e2`, `0x1`, `1e400`, `-1`, `1.5`, `1e2`, `1E+2`, `2e-1`,
	`9223372036854775808`, `18446744073709551616`,
	`true`, `false`, `null`, `nul`, `tru`, `[]`, `{}`, `{"a":1}`, `[null]`, `[1,]`, `{"a"}`,
	`"2026-11-21T10:00:00.123456789+01:00"`, `"2026-13-21T10:00:00Z"`,
}

func TestDecodeStrictAgreesOnOddValues(t *testing.T) {
	records := strictRecords()
	for _, name := range slices.Sorted(maps.Keys(records)) {
		data, err := Encode(records[name])
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		for _, odd := range oddValues {
			eachLeaf(m, func(path string) {
				enc, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				placeholder := []byte(`"` + oddPlaceholder + `"`)
				if !bytes.Contains(enc, placeholder) {
					t.Fatalf("%s: no %s at %s in %s", name, placeholder, path, enc)
				}
				enc = bytes.Replace(enc, placeholder, []byte(odd), 1)
				for _, target := range strictTargets(enc, records[name].Kind()) {
					if err := strictAgree(target); err != nil {
						t.Errorf("%s with %s = %s, as %s: %v\n%s", name, path, odd, target.name, err, target.data)
					}
				}
			})
		}
	}
}

const oddPlaceholder = "@odd@"

// eachLeaf replaces each scalar in v, one at a time, by oddPlaceholder and
// calls f with its path while it is there.
func eachLeaf(v any, f func(path string)) {
	var walk func(v any, path string)
	leaf := func(get func() any, set func(any), path string) {
		switch old := get(); old.(type) {
		case map[string]any, []any:
			walk(old, path)
		default:
			set(oddPlaceholder)
			f(path)
			set(old)
		}
	}
	walk = func(v any, path string) {
		switch v := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				leaf(func() any { return v[k] }, func(x any) { v[k] = x }, path+"."+k)
			}
		case []any:
			for i := range v {
				leaf(func() any { return v[i] }, func(x any) { v[i] = x }, fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
	walk(v, "")
}

// strictTarget is one call of decodeStrict made while decoding a record.
type strictTarget struct {
	name string
	data []byte
	// dest returns a destination as the caller builds it and a function
	// that reads what was decoded into it.
	dest func() (v any, decoded func() any)
}

// strictTargets lists the decodeStrict calls decoding data as a record of
// kind k makes: the record, through decodeAs's wrapper for
// message.accepted, and, as far as encoding/json finds them, its signal
// and the signal's payload.
func strictTargets(data []byte, k Kind) []strictTarget {
	spec, ok := LookupKind(k)
	if !ok {
		return nil
	}
	out := []strictTarget{{string(k), data, func() (any, func() any) {
		r := spec.New()
		m, ok := r.(*MessageAccepted)
		if !ok {
			return r, func() any { return r }
		}
		var mutates *bool
		return &struct {
			*MessageAccepted
			MutatesContext **bool `json:"mutatesContext"`
		}{m, &mutates}, func() any { return []any{m, mutates} }
	}}}
	var rec struct {
		Signal json.RawMessage `json:"signal"`
	}
	if k != KindObservation || json.Unmarshal(data, &rec) != nil || len(rec.Signal) == 0 {
		return out
	}
	out = append(out, strictTarget{"signal", rec.Signal, func() (any, func() any) {
		w := &signalWire{}
		return w, func() any { return w }
	}})
	var w signalWire
	if json.Unmarshal(rec.Signal, &w) != nil || len(w.Payload) == 0 {
		return out
	}
	sig, ok := LookupSignal(w.Type)
	if !ok {
		return out
	}
	return append(out, strictTarget{"signal.payload", w.Payload, func() (any, func() any) {
		p := sig.NewPayload()
		return p, func() any { return p }
	}})
}

// strictAgree decodes the target's data with decodeStrict and with
// decodeStrictSlow and reports any difference in error or value.
func strictAgree(target strictTarget) error {
	fast, fastDecoded := target.dest()
	slow, slowDecoded := target.dest()
	fastErr := decodeStrict(target.data, fast)
	slowErr := decodeStrictSlow(target.data, slow)
	switch {
	case (fastErr == nil) != (slowErr == nil):
		return fmt.Errorf("fast path error %v, slow path error %v", fastErr, slowErr)
	case fastErr != nil:
		if fastErr.Error() != slowErr.Error() || reflect.TypeOf(fastErr) != reflect.TypeOf(slowErr) {
			return fmt.Errorf("fast path error %T %q, slow path error %T %q", fastErr, fastErr, slowErr, slowErr)
		}
		return nil
	}
	// cmp.Diff only for the message: it takes minutes on deep nesting.
	if !reflect.DeepEqual(slowDecoded(), fastDecoded()) {
		return fmt.Errorf("decoded values differ (-slow +fast):\n%s", cmp.Diff(slowDecoded(), fastDecoded()))
	}
	return nil
}

func BenchmarkKnownKeys(b *testing.B) {
	data, err := Encode(validRecords()[KindObservation])
	if err != nil {
		b.Fatal(err)
	}
	s := strictjson.ShapeOf(reflect.TypeFor[*Observation]())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if !knownKeys(data, s) {
			b.Fatal("unknown keys")
		}
	}
}

// Signal.UnmarshalJSON reads the form MarshalJSON writes without copying
// the payload, and must answer exactly as decodeWire does on every input.
func TestSignalFastPathMatchesWire(t *testing.T) {
	var signals []string
	for name, r := range strictRecords() {
		o, ok := r.(*Observation)
		if !ok || o.Signal == nil {
			continue
		}
		data, err := json.Marshal(o.Signal)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok := sniffSignal(data); !ok {
			t.Errorf("%s: the signal as written takes the slow path: %s", name, data)
		}
		signals = append(signals, string(data))
	}
	if len(signals) < 2 {
		t.Fatalf("only %d signals to try", len(signals))
	}
	var inputs []string
	for _, s := range signals {
		payload := s[strings.Index(s, `"payload":`)+len(`"payload":`) : len(s)-1]
		inputs = append(inputs, s,
			s+" ", " "+s, strings.Replace(s, `":`, `": `, -1),
			`{"payload":`+payload+`,"type":"needs_input"}`,
			strings.Replace(s, `"payload":`+payload, `"payload":null`, 1),
			strings.Replace(s, `"payload":`+payload, `"payload":[]`, 1),
			strings.Replace(s, `"payload":`+payload, `"payload":{}`, 1),
			strings.Replace(s, `"payload":`+payload, `"payload":`+payload+` `, 1),
			strings.Replace(s, `}`, `,"extra":1}`, 1),
			s[:len(s)-1]+`,"type":"usage"}`,
			s[:len(s)-1]+`,"payload":{}}`,
			strings.Replace(s, `{"type":"`, `{"type":"\u006e`, 1),
			strings.Replace(s, `{"type":"`, `{"type":"no_such_`, 1),
			s[:len(s)-1], s[:len(s)-2]+"}", s+"}",
		)
	}
	for _, in := range inputs {
		var fast, wire Signal
		fastErr := fast.UnmarshalJSON([]byte(in))
		wireErr := wire.decodeWire([]byte(in))
		if fmt.Sprint(fastErr) != fmt.Sprint(wireErr) || !reflect.DeepEqual(fast, wire) {
			t.Errorf("%s:\nUnmarshalJSON: %+v, %v\ndecodeWire:    %+v, %v", in, fast, fastErr, wire, wireErr)
		}
	}
}
