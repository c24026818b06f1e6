package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

var t0 = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

func ptr(n int64) *int64 { return &n }

// journal is a conversation of two turns built in code: a prompt, a
// message, a failed tool call with a long output, a plan sent twice, a
// question and its answer, usage, the end of a turn, a call left open
// and a failed end; with the bookkeeping records a transcript leaves out
// between them.
func journal() []eventstore.Record {
	seq := uint64(0)
	at := func(ms int, r eventstore.Record) eventstore.Record {
		seq++
		b := r.RecordBase()
		b.Sequence, b.OccurredAt = seq, t0.Add(time.Duration(ms)*time.Millisecond)
		return r
	}
	obs := func(p eventstore.SignalPayload) *eventstore.Observation {
		return &eventstore.Observation{ObservationID: "o", Signal: eventstore.NewSignal(p)}
	}
	plan := &eventstore.PlanSignal{Items: []eventstore.PlanItem{{Text: "Read the code", Status: eventstore.PlanItemDone},
		{Text: "Fix the test", Status: eventstore.PlanItemInProgress}, {Text: "Ship", Status: eventstore.PlanItemOpen}, {Text: "Gold-plate", Status: eventstore.PlanItemDropped}}}
	output := "--- FAIL: TestX\n    x_test.go:12: got 1, want 2\nline 3\nline 4\nline 5\nline 6\nline 7\n"
	return []eventstore.Record{
		at(0, &eventstore.Header{AgentID: "claude-code"}),
		at(10, &eventstore.MessageAccepted{MessageID: "prompt", Source: eventstore.SourceOperator, MessageType: "prompt",
			Payload: json.RawMessage(`{"text":"Fix the failing test\nin pkg/x"}`)}),
		at(20, &eventstore.StateChanged{Lifecycle: eventstore.LifecycleRunning, Reason: "process 1 started"}),
		at(30, &eventstore.MessageDelivery{MessageID: "prompt", Status: eventstore.DeliveryDelivered}),
		at(40, obs(&eventstore.MessageSignal{Text: "I will **run** the tests.", Format: "markdown"})),
		at(50, &eventstore.Decision{DecisionID: "d1", Action: eventstore.ActionEmitMessage}),
		at(100, &eventstore.ActivityUpdated{Activity: eventstore.ActivityExecuting, CurrentTarget: &eventstore.Target{Kind: eventstore.TargetCommand, Label: "go test ./pkg/x"},
			ToolCall: &eventstore.ToolCall{ID: "c1", Name: "Bash", Status: eventstore.ToolCallStarted}}),
		at(200, &eventstore.ActivityUpdated{Telemetry: &eventstore.Telemetry{InputTokens: ptr(5)}}),
		at(1600, &eventstore.ActivityUpdated{ToolCall: &eventstore.ToolCall{ID: "c1", Name: "Bash", Status: eventstore.ToolCallFailed,
			Error: "Exit code 1", ExitCode: ptr(1), Output: output, OutputBytes: 4000}}),
		at(1700, obs(plan)),
		at(1800, obs(plan)),
		at(1900, obs(&eventstore.NeedsInputSignal{RequestID: "r1", Question: "Which fix?", Choices: []string{"Change the test", "Change the code"}})),
		at(2000, &eventstore.StateChanged{Attention: eventstore.AttentionAwaitingOperator, CurrentInputRequestID: eventstore.SetInputRequest("r1")}),
		at(2500, &eventstore.MessageAccepted{MessageID: "answer-r1", Source: eventstore.SourceOperator, MessageType: "answer",
			Payload: json.RawMessage(`{"requestId":"r1","text":"2"}`)}),
		at(2600, obs(&eventstore.UsageSignal{InputTokens: ptr(100), OutputTokens: ptr(20)})),
		at(3000, &eventstore.StateChanged{Attention: eventstore.AttentionAwaitingOperator, Reason: "turn 1 ended; waiting for the next message"}),
		at(4000, &eventstore.MessageAccepted{MessageID: "m2", Source: eventstore.SourceOwner, MessageType: "prompt", Payload: json.RawMessage(`{"text":"Go on"}`)}),
		at(4100, &eventstore.StateChanged{Attention: eventstore.AttentionAutonomous, Reason: "turn 2 started by message m2"}),
		at(4200, obs(&eventstore.UsageSignal{InputTokens: ptr(50), OutputTokens: ptr(5)})),
		at(4300, &eventstore.ActivityUpdated{CurrentTarget: &eventstore.Target{Kind: eventstore.TargetFile, Path: "pkg/x/x.go"},
			ToolCall: &eventstore.ToolCall{ID: "c2", Name: "Edit", Status: eventstore.ToolCallStarted}}),
		at(4400, obs(&eventstore.MessageSignal{Text: "Done: see x.go"})),
		at(4500, obs(&eventstore.CompletedClaimSignal{Summary: "Done: see x.go"})),
		at(4600, obs(&eventstore.BlockedSignal{Reason: "the disk is full"})),
		at(4700, &eventstore.MessageDelivery{MessageID: "m3", Status: eventstore.DeliveryFailed, Reason: "no turn is running"}),
		at(5000, &eventstore.StateChanged{Lifecycle: eventstore.LifecycleFailed, Reason: "exit status 2"}),
		at(5100, &eventstore.StateChanged{Lifecycle: eventstore.LifecycleFailed, Reason: "again"}),
	}
}

func TestEntries(t *testing.T) {
	got := Entries(journal())
	var kinds []string
	for _, e := range got {
		kinds = append(kinds, string(e.Kind))
	}
	want := "prompt message tool plan question answer turn prompt message note note tool end"
	if strings.Join(kinds, " ") != want {
		t.Fatalf("kinds %q, want %q", strings.Join(kinds, " "), want)
	}
	tool := got[2]
	if diff := cmp.Diff(&wire.TranscriptToolCall{ID: "c1", Name: "Bash", Target: "go test ./pkg/x", Status: eventstore.ToolCallFailed, Error: "Exit code 1",
		ExitCode: ptr(1), Output: tool.Tool.Output, OutputBytes: 4000, DurationMs: 1500}, tool.Tool); diff != "" || tool.Sequence != 9 {
		t.Errorf("tool call at sequence %d (-want +got):\n%s", tool.Sequence, diff)
	}
	if a := got[5]; a.Source != eventstore.SourceOperator || a.Text != "2" {
		t.Errorf("answer %+v, want the operator's 2", a)
	}
	turn := got[6].Turn
	if diff := cmp.Diff(&wire.TranscriptTurnEnded{Number: 1, Tokens: execution.Usage{InputTokens: ptr(100), OutputTokens: ptr(20), TotalTokens: ptr(120)},
		DurationMs: 3000}, turn); diff != "" {
		t.Errorf("turn 1 (-want +got):\n%s", diff)
	}
	if open := got[11]; open.Tool.Status != eventstore.ToolCallStarted || open.Tool.Target != "pkg/x/x.go" || open.Sequence != 20 {
		t.Errorf("open call %+v at %d, want Edit of pkg/x/x.go still started, at its start", open.Tool, open.Sequence)
	}
	end := got[12].End
	if diff := cmp.Diff(&wire.TranscriptExecutionEnd{Lifecycle: eventstore.LifecycleFailed, Reason: "exit status 2",
		Tokens: execution.Usage{InputTokens: ptr(150), OutputTokens: ptr(25), TotalTokens: ptr(175)}, DurationMs: 5000}, end); diff != "" {
		t.Errorf("end (-want +got):\n%s", diff)
	}
}

// TestWriterStreams: each record's entries are written by the Add that
// takes it; a tool call's start writes nothing until its end.
func TestWriterStreams(t *testing.T) {
	var out bytes.Buffer
	w := New(&out, Options{})
	for i, r := range journal() {
		before := out.Len()
		if err := w.Add(r); err != nil {
			t.Fatal(err)
		}
		wrote := out.String()[before:]
		switch seq := r.RecordBase().Sequence; seq {
		case 2:
			if wrote != "▶ operator: Fix the failing test\n  in pkg/x\n" {
				t.Errorf("record %d wrote %q, want the prompt", seq, wrote)
			}
		case 7, 20:
			if wrote != "" {
				t.Errorf("the start of a tool call wrote %q, want nothing until its end", wrote)
			}
		case 9:
			if !strings.HasPrefix(wrote, "✗ Bash: go test ./pkg/x (failed, exit 1: Exit code 1, 1.5s)\n") {
				t.Errorf("the end of a tool call wrote %q, want its line", wrote)
			}
		case 11, 22, 26:
			if wrote != "" {
				t.Errorf("record %d (#%d) wrote %q, want nothing: it tells nothing new", seq, i, wrote)
			}
		}
	}
}

// TestGolden writes the journal built in code, and the journals of real
// CLIs' runs (captured from the conversation suite), as text, coloured
// text and Markdown, each held to a golden file.
func TestGolden(t *testing.T) {
	journals := map[string][]eventstore.Record{"built": journal()}
	for _, name := range []string{"claude-code", "codex", "copilot"} {
		journals[name] = readJournal(t, filepath.Join("testdata", name+".jsonl"))
	}
	for name, records := range journals {
		for _, f := range []struct {
			suffix string
			opts   Options
		}{
			{".txt", Options{}},
			{".color.txt", Options{Color: true}},
			{".md", Options{Format: FormatMarkdown}},
		} {
			t.Run(name+f.suffix, func(t *testing.T) {
				var out bytes.Buffer
				w := New(&out, f.opts)
				for _, r := range records {
					if err := w.Add(r); err != nil {
						t.Fatal(err)
					}
				}
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
				var whole bytes.Buffer
				if err := Render(&whole, Entries(records), f.opts); err != nil {
					t.Fatal(err)
				}
				if whole.String() != out.String() {
					t.Errorf("rendered whole:\n%s\nstreamed:\n%s\nwant the same", whole.String(), out.String())
				}
				golden(t, filepath.Join("testdata", "golden", name+f.suffix), out.String())
			})
		}
	}
}

func readJournal(t *testing.T, path string) []eventstore.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []eventstore.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		r, err := eventstore.Decode(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, r)
	}
	return out
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./transcript -update writes it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

func TestTerminalMarkdown(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		color     bool
		want      []string
	}{
		{"heading 1", "# Title", false, []string{"Title", "====="}},
		{"heading 2", "## Sub", false, []string{"Sub", "---"}},
		{"heading 3", "### Deep", false, []string{"### Deep"}},
		{"heading in colour", "# Title", true, []string{"\x1b[1;36mTitle\x1b[0m"}},
		{"emphasis", "a *b* **c** `d`", false, []string{"a b c `d`"}},
		{"emphasis in colour", "a *b* **c** `d`", true, []string{"a \x1b[3mb\x1b[0m \x1b[1mc\x1b[0m \x1b[33md\x1b[0m"}},
		{"bold inside a heading keeps the heading's style", "# A **b** c", true,
			[]string{"\x1b[1;36mA \x1b[1mb\x1b[0m\x1b[1;36m c\x1b[0m"}},
		{"link", "see [the docs](https://x.test/d) or <https://y.test>", false, []string{"see the docs (https://x.test/d) or https://y.test"}},
		{"tight list", "- a\n- b\n  - c", false, []string{"• a", "• b", "  • c"}},
		{"ordered list from 3", "3. x\n4. y", false, []string{"3. x", "4. y"}},
		{"loose list", "- a\n\n- b", false, []string{"• a", "", "• b"}},
		{"code block", "```go\nfmt.Println(1)\n\tx\n```", false, []string{"    fmt.Println(1)", "    \tx"}},
		{"quote", "> said\n> twice", false, []string{"│ said", "│ twice"}},
		{"paragraphs", "one\ntwo\n\nthree", false, []string{"one", "two", "", "three"}},
		{"rule", "a\n\n---\n\nb", false, []string{"a", "", "────────", "", "b"}},
		{"escape sequences removed", "red \x1b[31mtext\x1b]0;title\a", false, []string{"red [31mtext]0;title"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, terminalMarkdown(tt.src, tt.color)); diff != "" {
				t.Errorf("%q (-want +got):\n%s", tt.src, diff)
			}
		})
	}
}

// TestTextIsSafe: what the agent and its tools say cannot drive the
// terminal: no escape or other control character but line feeds and tabs
// is written, in any entry.
func TestTextIsSafe(t *testing.T) {
	evil := "a\x1b[2J\x1b]0;pwned\x07b\rc\x9b31m"
	recs := []eventstore.Record{
		&eventstore.MessageAccepted{MessageID: "p", Source: eventstore.SourceOperator, MessageType: "prompt", Payload: json.RawMessage(`{"text":"` + jsonEscape(evil) + `"}`)},
		&eventstore.Observation{ObservationID: "o1", Signal: eventstore.NewSignal(&eventstore.MessageSignal{Text: evil})},
		&eventstore.Observation{ObservationID: "o2", Signal: eventstore.NewSignal(&eventstore.MessageSignal{Text: evil, Format: "markdown"})},
		&eventstore.ActivityUpdated{ToolCall: &eventstore.ToolCall{ID: "c", Name: evil, Status: eventstore.ToolCallFailed, Error: evil, Output: evil}},
		&eventstore.Observation{ObservationID: "o3", Signal: eventstore.NewSignal(&eventstore.NeedsInputSignal{RequestID: "r", Question: evil, Choices: []string{evil}})},
	}
	for _, f := range []Format{FormatText, FormatMarkdown} {
		var out bytes.Buffer
		if err := Render(&out, Entries(recs), Options{Format: f}); err != nil {
			t.Fatal(err)
		}
		for _, r := range out.String() {
			if r != '\n' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0)) {
				t.Fatalf("%s output holds control character %U:\n%q", f, r, out.String())
			}
		}
	}
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func TestUseColor(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tt := range []struct {
		name string
		out  any
		env  map[string]string
	}{
		{"a buffer", &bytes.Buffer{}, nil},
		{"a pipe", w, nil},
		{"NO_COLOR", w, map[string]string{"NO_COLOR": "1"}},
		{"a dumb terminal", w, map[string]string{"TERM": "dumb"}},
	} {
		var out interface{ Write([]byte) (int, error) } = tt.out.(interface{ Write([]byte) (int, error) })
		if UseColor(out, env(tt.env)) {
			t.Errorf("%s: colour, want none", tt.name)
		}
	}
}

func TestLabel(t *testing.T) {
	var out bytes.Buffer
	w := New(&out, Options{Label: "ae-01234567"})
	for _, r := range journal()[:5] {
		if err := w.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	want := "ae-01234567 ▶ operator: Fix the failing test\nae-01234567   in pkg/x\nae-01234567 I will run the tests.\n"
	if out.String() != want {
		t.Errorf("labelled:\n%q\nwant\n%q", out.String(), want)
	}
}
