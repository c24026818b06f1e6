package marker

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
)

const (
	nonce      = "0123456789abcdef0123456789abcdef"
	otherNonce = "fedcba9876543210fedcba9876543210"
	docNonce   = "3f9a1c0e7b2d4a6f8e1c3b5d7f9a2c4e"
)

// surfaced has one valid payload per surfaced signal type.
var surfaced = []eventstore.SignalPayload{
	&eventstore.ProgressSignal{Summary: "Running tests", Detail: "3 of 10", Units: &eventstore.Units{Completed: i64(3), Total: i64(10), Unit: "packages"}},
	&eventstore.StatusSignal{Summary: "Writing tests", Phase: "testing"},
	&eventstore.NeedsInputSignal{RequestID: "q1", Question: "Delete the files?", Choices: []string{"yes", "no"}},
	&eventstore.BlockedSignal{Reason: "no network", Needs: "VPN"},
	&eventstore.ReadyForVerificationSignal{Summary: "ready", Evidence: []string{"go test ./..."}},
	&eventstore.CompletedClaimSignal{Summary: "done", Evidence: []string{"a.go"}},
	&eventstore.FailedClaimSignal{Reason: "cannot", Detail: "404"},
	&eventstore.MessageSignal{Text: "hello\nworld ✓", Format: "markdown"},
	&eventstore.PlanSignal{Items: []eventstore.PlanItem{{ID: "1", Text: "lexer", Status: eventstore.PlanItemDone}, {Text: "parser", Status: eventstore.PlanItemInProgress}}},
	&eventstore.CheckpointSignal{Title: "lexer done", Summary: "parser next"},
}

func i64(v int64) *int64 { return &v }

func TestSurfacedSignals(t *testing.T) {
	var types []eventstore.SignalType
	for _, p := range surfaced {
		types = append(types, p.SignalType())
	}
	if want := eventstore.SurfacedSignalTypes(); !slices.Equal(types, want) {
		t.Fatalf("the test covers %v, want every surfaced type %v", types, want)
	}
	for _, p := range surfaced {
		t.Run(string(p.SignalType()), func(t *testing.T) {
			want := eventstore.NewSignal(p)
			line, err := Format(nonce, want)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(line, []byte(Prefix+nonce+" {")) || !bytes.HasSuffix(line, []byte("}\n")) || bytes.Count(line, []byte("\n")) != 1 {
				t.Fatalf("Format = %q, want one line %q<nonce> {…}", line, Prefix)
			}
			got := Parse(line, nonce)
			if got.Result != Signal || got.Err != nil {
				t.Fatalf("Parse = %v %v, want signal", got.Result, got.Err)
			}
			if diff := cmp.Diff(want, got.Signal); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
			checkObservation(t, Observation(got, line, "obs-1", eventstore.ObservedPTY))
		})
	}
}

// TestDocExamples parses every example line of the package documentation,
// so the documented syntax cannot drift from the parser.
func TestDocExamples(t *testing.T) {
	f, err := os.Open("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var seen []eventstore.SignalType
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "//\t")
		if !ok || !strings.HasPrefix(line, Prefix+docNonce) {
			continue
		}
		p := Parse([]byte(line), docNonce)
		if p.Result != Signal {
			t.Errorf("doc example %s: %v %v, want signal", line, p.Result, p.Err)
			continue
		}
		seen = append(seen, p.Signal.Type)
	}
	if want := eventstore.SurfacedSignalTypes(); !slices.Equal(seen, want) {
		t.Errorf("doc examples cover %v, want one per surfaced type in registry order %v", seen, want)
	}
}

func TestParse(t *testing.T) {
	progress := `{"type":"progress","payload":{"summary":"x"}}`
	tests := []struct {
		name  string
		line  string
		nonce string
		want  Result
	}{
		{"valid", Prefix + nonce + " " + progress, nonce, Signal},
		{"valid with newline", Prefix + nonce + " " + progress + "\n", nonce, Signal},
		{"valid with CRLF", Prefix + nonce + " " + progress + "\r\n", nonce, Signal},
		{"valid with CR", Prefix + nonce + " " + progress + "\r", nonce, Signal},
		{"spaces around the JSON", Prefix + nonce + "  " + progress + "  ", nonce, Signal},
		{"wrong nonce", Prefix + otherNonce + " " + progress, nonce, WrongNonce},
		{"missing nonce", Prefix + progress, nonce, WrongNonce},
		{"nonce alone", Prefix + otherNonce, nonce, WrongNonce},
		{"upper-case nonce", Prefix + strings.ToUpper(nonce) + " " + progress, nonce, WrongNonce},
		{"nonce prefix only", Prefix + nonce[:16] + " " + progress, nonce, WrongNonce},
		{"nonce too long", Prefix + nonce + "0 " + progress, nonce, WrongNonce},
		{"two spaces before the nonce", Prefix + " " + nonce + " " + progress, nonce, WrongNonce},
		{"no nonce expected", Prefix + " " + progress, "", WrongNonce},
		{"invalid expected nonce", Prefix + "xyz " + progress, "xyz", WrongNonce},
		{"wrong nonce with garbage", Prefix + otherNonce + " {{{", nonce, WrongNonce},
		{"leading space", " " + Prefix + nonce + " " + progress, nonce, NotMarker},
		{"leading escape sequence", "\x1b[0m" + Prefix + nonce + " " + progress, nonce, NotMarker},
		{"in the middle of a line", "echo " + Prefix + nonce + " " + progress, nonce, NotMarker},
		{"prefix without its space", "@@agentjournal", nonce, NotMarker},
		{"other case", "@@AgentJournal " + nonce + " " + progress, nonce, NotMarker},
		{"ordinary output", "PASS ok 0.1s", nonce, NotMarker},
		{"empty", "", nonce, NotMarker},
		{"nonce without a signal", Prefix + nonce, nonce, Malformed},
		{"nonce and a space", Prefix + nonce + " ", nonce, Malformed},
		{"malformed JSON", Prefix + nonce + ` {"type":"progress",`, nonce, Malformed},
		{"not an object", Prefix + nonce + ` ["progress"]`, nonce, Malformed},
		{"null", Prefix + nonce + ` null`, nonce, Malformed},
		{"unknown signal type", Prefix + nonce + ` {"type":"celebrate","payload":{}}`, nonce, Malformed},
		{"usage is not surfaced", Prefix + nonce + ` {"type":"usage","payload":{"totalTokens":5}}`, nonce, Malformed},
		{"diagnostic is not surfaced", Prefix + nonce + ` {"type":"diagnostic","payload":{"message":"x"}}`, nonce, Malformed},
		{"unknown payload field", Prefix + nonce + ` {"type":"progress","payload":{"summary":"x","percent":50}}`, nonce, Malformed},
		{"unknown signal field", Prefix + nonce + ` {"type":"progress","payload":{"summary":"x"},"extra":1}`, nonce, Malformed},
		{"missing payload", Prefix + nonce + ` {"type":"progress"}`, nonce, Malformed},
		{"invalid payload", Prefix + nonce + ` {"type":"progress","payload":{"summary":""}}`, nonce, Malformed},
		{"negative units", Prefix + nonce + ` {"type":"progress","payload":{"summary":"x","units":{"completed":-1}}}`, nonce, Malformed},
		{"bad message format", Prefix + nonce + ` {"type":"message","payload":{"text":"x","format":"html"}}`, nonce, Malformed},
		{"trailing data", Prefix + nonce + " " + progress + " " + progress, nonce, Malformed},
		{"two CRs", Prefix + nonce + " " + progress + "\r\r", nonce, Signal}, // the second is JSON white space
		{"too long", Prefix + nonce + ` {"type":"message","payload":{"text":"` + strings.Repeat("x", MaxLineBytes) + `"}}`, nonce, Malformed},
		{"too long, wrong nonce", Prefix + otherNonce + " " + strings.Repeat("x", MaxLineBytes), nonce, Malformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Parse([]byte(tt.line), tt.nonce)
			if got.Result != tt.want {
				t.Fatalf("Parse = %v (err %v), want %v", got.Result, got.Err, tt.want)
			}
			if (got.Signal != nil) != (tt.want == Signal) {
				t.Errorf("signal %v with result %v", got.Signal, got.Result)
			}
			if (got.Err != nil) != (tt.want == Malformed) {
				t.Errorf("err %v with result %v", got.Err, got.Result)
			}
			if got.Err != nil && !errors.Is(got.Err, ErrMalformed) {
				t.Errorf("err %v does not wrap ErrMalformed", got.Err)
			}
			o := Observation(got, []byte(tt.line), "obs-1", eventstore.ObservedProviderOutput)
			if tt.want == NotMarker {
				if o != nil {
					t.Errorf("Observation = %+v for an ordinary line, want nil", o)
				}
				return
			}
			checkObservation(t, o)
		})
	}
}

func TestParseErrorNamesTheProblem(t *testing.T) {
	tests := []struct {
		body string
		want string
	}{
		{`{"type":"usage","payload":{"totalTokens":5}}`, "progress, status, needs_input, blocked, ready_for_verification, completed_claim, failed_claim, message"},
		{`{"type":"progress","payload":{"summary":"x","percent":50}}`, "percent"},
		{`{"type":"celebrate","payload":{}}`, "celebrate"},
		{`{"type":"status","payload":{}}`, "signal.payload.summary"},
	}
	for _, tt := range tests {
		p := Parse([]byte(Prefix+nonce+" "+tt.body), nonce)
		if p.Result != Malformed || !strings.Contains(p.Err.Error(), tt.want) {
			t.Errorf("Parse(%s) = %v %v, want malformed naming %q", tt.body, p.Result, p.Err, tt.want)
		}
	}
}

func TestObservation(t *testing.T) {
	progress := `{"type":"progress","payload":{"summary":"x"}}`
	t.Run("signal", func(t *testing.T) {
		line := []byte(Prefix + nonce + " " + progress + "\r\n")
		o := Observation(Parse(line, nonce), line, "obs-1", eventstore.ObservedPTY)
		want := &eventstore.Observation{ObservationID: "obs-1", Source: eventstore.ObservedPTY,
			Confidence: eventstore.ConfidenceAuthoritative, Signal: eventstore.NewSignal(&eventstore.ProgressSignal{Summary: "x"})}
		if diff := cmp.Diff(want, o); diff != "" {
			t.Errorf("observation (-want +got):\n%s", diff)
		}
	})
	t.Run("wrong nonce is evidence only", func(t *testing.T) {
		line := []byte(Prefix + otherNonce + " " + progress + "\n")
		o := Observation(Parse(line, nonce), line, "obs-2", eventstore.ObservedPTY)
		want := &eventstore.Observation{ObservationID: "obs-2", Source: eventstore.ObservedPTY,
			Confidence: eventstore.ConfidenceLow, RawText: Prefix + otherNonce + " " + progress}
		if diff := cmp.Diff(want, o); diff != "" {
			t.Errorf("observation (-want +got):\n%s", diff)
		}
	})
	t.Run("malformed is a diagnostic without the nonce", func(t *testing.T) {
		line := []byte(Prefix + nonce + ` {"type":"progress","payload":{"summary":"x","percent":50}}`)
		o := Observation(Parse(line, nonce), line, "obs-3", eventstore.ObservedProviderOutput)
		checkObservation(t, o)
		d, ok := o.Signal.Payload.(*eventstore.DiagnosticSignal)
		if !ok || d.Code != BadMarkerCode || !strings.Contains(d.Message, "percent") || o.Confidence != eventstore.ConfidenceDiagnostic {
			t.Fatalf("observation %+v (signal %+v), want a bad-marker diagnostic naming the field", o, o.Signal)
		}
		if strings.Contains(o.RawText, nonce) {
			t.Errorf("rawText %q holds the nonce", o.RawText)
		}
		if want := Prefix + `<nonce> {"type":"progress","payload":{"summary":"x","percent":50}}`; o.RawText != want {
			t.Errorf("rawText %q, want %q", o.RawText, want)
		}
	})
	t.Run("oversize lines are clipped", func(t *testing.T) {
		line := []byte(Prefix + nonce + " " + strings.Repeat("é", MaxLineBytes))
		p := Parse(line, nonce)
		o := Observation(p, line, "obs-4", eventstore.ObservedPTY)
		checkObservation(t, o)
		if len(o.RawText) > maxRawBytes || strings.Contains(o.RawText, nonce) {
			t.Errorf("rawText is %d bytes (want at most %d) or holds the nonce", len(o.RawText), maxRawBytes)
		}
	})
	t.Run("not a marker", func(t *testing.T) {
		if o := Observation(Parse([]byte("hello"), nonce), []byte("hello"), "obs-5", eventstore.ObservedPTY); o != nil {
			t.Errorf("Observation = %+v, want nil", o)
		}
	})
}

func TestFormat(t *testing.T) {
	tests := []struct {
		name  string
		nonce string
		sig   *eventstore.Signal
		want  error
	}{
		{"bad nonce", "nonce", eventstore.NewSignal(&eventstore.StatusSignal{Summary: "x"}), ErrNonce},
		{"upper-case nonce", strings.ToUpper(nonce), eventstore.NewSignal(&eventstore.StatusSignal{Summary: "x"}), ErrNonce},
		{"no signal", nonce, nil, ErrMalformed},
		{"usage", nonce, eventstore.NewSignal(&eventstore.UsageSignal{TotalTokens: i64(1)}), ErrMalformed},
		{"invalid payload", nonce, eventstore.NewSignal(&eventstore.BlockedSignal{}), ErrMalformed},
		{"mismatched payload", nonce, &eventstore.Signal{Type: eventstore.SignalStatus, Payload: &eventstore.BlockedSignal{Reason: "x"}}, ErrMalformed},
		{"too long", nonce, eventstore.NewSignal(&eventstore.MessageSignal{Text: strings.Repeat("x", MaxLineBytes)}), ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Format(tt.nonce, tt.sig); !errors.Is(err, tt.want) {
				t.Errorf("Format = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestNewNonce(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		n, err := NewNonce()
		if err != nil {
			t.Fatal(err)
		}
		if !ValidNonce(n) {
			t.Fatalf("NewNonce = %q, want %d lower-case hex characters", n, NonceLength)
		}
		if seen[n] {
			t.Fatalf("NewNonce repeated %q", n)
		}
		seen[n] = true
	}
}

func TestResultString(t *testing.T) {
	for r, want := range map[Result]string{NotMarker: "not-marker", Signal: "signal", WrongNonce: "wrong-nonce", Malformed: "malformed", 9: "Result(9)"} {
		if got := r.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(r), got, want)
		}
	}
}

// checkObservation fills the base fields an appender would and validates
// the record strictly, through an encode and decode.
func checkObservation(tb testing.TB, o *eventstore.Observation) {
	tb.Helper()
	if o == nil {
		tb.Fatal("no observation")
	}
	if o.Base != (eventstore.Base{}) {
		tb.Fatalf("observation has base fields set: %+v", o.Base)
	}
	ref, err := eventstore.NewReference(eventstore.OwnerTask, "task-1", "ae-marker-test")
	if err != nil {
		tb.Fatal(err)
	}
	r := *o
	r.Base = eventstore.Base{
		RecordID: eventstore.RecordID(ref.JournalID, eventstore.KindObservation, o.ObservationID), Sequence: 2,
		JournalID: ref.JournalID, AgentExecutionID: ref.AgentExecutionID, OwnerID: ref.OwnerID, Scope: ref.OwnerEntity,
		OccurredAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	data, err := eventstore.Encode(&r)
	if err != nil {
		tb.Fatalf("observation %+v: %v", o, err)
	}
	if _, err := eventstore.Decode(data); err != nil {
		tb.Fatalf("decode %s: %v", data, err)
	}
}

// TestRedactSplitNonce: a repetition of the nonce cut in half by the raw
// text bound does not leak its first characters, whatever the alignment.
func TestRedactSplitNonce(t *testing.T) {
	for pad := range NonceLength + 1 {
		body := strings.Repeat("x", pad) + strings.Repeat(nonce+" ", 300)
		line := []byte(Prefix + nonce + " " + body)
		o := Observation(Parse(line, nonce), line, "obs-1", eventstore.ObservedPTY)
		if o == nil || o.Signal == nil {
			t.Fatal("want a diagnostic observation")
		}
		rest := strings.TrimPrefix(o.RawText, Prefix)
		rest = strings.NewReplacer("<nonce>", "", " ", "", "x", "", "…", "").Replace(rest)
		if rest != "" {
			t.Errorf("pad %d: rawText leaks %q of the nonce", pad, rest)
		}
	}
}
