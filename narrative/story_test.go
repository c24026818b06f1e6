package narrative_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/narrative"
)

var update = flag.Bool("update", false, "rewrite the golden narratives under testdata/")

// storyJournal writes a two-turn conversation into a file store, every
// record at a fixed time and with a fixed id, so that its event ids and
// so its narrative are the same on every run. Turn 1 reads, searches,
// has a write denied, edits, runs a failing command with output, asks a
// question the operator answers and says a multi-line Markdown message;
// turn 2 is blocked for a while and writes; usage is reported as running
// totals; an attention change follows the end.
func storyJournal(t *testing.T) *narrative.Narrative {
	t.Helper()
	s, err := eventstore.OpenFile(eventstore.FileConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const id = "ae-0123456789abcdef01234567"
	t0 := time.Date(2026, 11, 24, 7, 16, 0, 0, time.UTC)
	h := storetest.Header("claude-code")
	h.OccurredAt = t0
	h.RecordID = "rec-header"
	ref, err := s.EnsureJournal(t.Context(), storetest.Ref(eventstore.OwnerTask, "t-1", id), h)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	add := func(r eventstore.Record) {
		t.Helper()
		n++
		b := r.RecordBase()
		b.OccurredAt = t0.Add(time.Duration(n) * time.Second)
		if b.RecordID == "" {
			b.RecordID = fmt.Sprintf("rec-%02d", n)
		}
		if _, err := s.Append(t.Context(), ref, r); err != nil {
			t.Fatalf("append %s: %v", r.Kind(), err)
		}
	}
	msg := func(mid, typ, text, req string) *eventstore.MessageAccepted {
		p := map[string]string{"text": text}
		if req != "" {
			p["requestId"] = req
		}
		raw, _ := json.Marshal(p)
		return &eventstore.MessageAccepted{MessageID: mid, Source: eventstore.SourceOperator, MessageType: typ, Payload: raw, MutatesContext: typ == "prompt"}
	}
	obs := func(p eventstore.SignalPayload) *eventstore.Observation {
		return &eventstore.Observation{ObservationID: fmt.Sprintf("o-%d", n+1), Source: eventstore.ObservedProviderOutput,
			Confidence: eventstore.ConfidenceHigh, Signal: eventstore.NewSignal(p)}
	}
	tokens := func(in, out int64) *eventstore.Observation {
		return obs(&eventstore.UsageSignal{InputTokens: &in, OutputTokens: &out, Cumulative: true})
	}
	call := func(cid, name string, a eventstore.Activity, target *eventstore.Target, st eventstore.ToolCallStatus) *eventstore.ActivityUpdated {
		return &eventstore.ActivityUpdated{Activity: a, CurrentTarget: target, ToolCall: &eventstore.ToolCall{ID: cid, Name: name, Status: st}}
	}
	file := func(p string) *eventstore.Target { return &eventstore.Target{Kind: eventstore.TargetFile, Path: p} }
	cmdT := &eventstore.Target{Kind: eventstore.TargetCommand, Label: "go test ./..."}

	add(&eventstore.StateChanged{Lifecycle: eventstore.LifecycleRunning})
	add(msg("m1", "prompt", "Fix the failing test in `calc`.\n\nKeep the API <stable> & small.", ""))
	add(tokens(100, 10))
	add(call("c1", "Read", eventstore.ActivityReviewing, file("/repo/calc.go"), eventstore.ToolCallStarted))
	add(call("c1", "Read", eventstore.ActivityReviewing, nil, eventstore.ToolCallSucceeded))
	add(call("c2", "Grep", eventstore.ActivityReviewing, &eventstore.Target{Kind: eventstore.TargetSearch, Label: "func Add", Path: "/repo"}, eventstore.ToolCallStarted))
	add(call("c2", "Grep", eventstore.ActivityReviewing, nil, eventstore.ToolCallSucceeded))
	add(obs(&eventstore.NeedsInputSignal{RequestID: "p1", Kind: "permission", Question: "Allow Write?",
		Tool: &eventstore.ToolUse{Name: "Write", Input: map[string]any{"file_path": "/repo/.env"}}, Choices: []string{"allow", "deny"}}))
	add(&eventstore.StateChanged{Attention: eventstore.AttentionAwaitingOperator, CurrentInputRequestID: eventstore.SetInputRequest("p1")})
	add(msg("m-p1", "answer", "deny", "p1"))
	add(&eventstore.StateChanged{Attention: eventstore.AttentionAutonomous, CurrentInputRequestID: eventstore.ClearInputRequest()})
	add(call("c3", "Write", eventstore.ActivityEditing, file("/repo/.env"), eventstore.ToolCallStarted))
	denied := call("c3", "Write", eventstore.ActivityEditing, nil, eventstore.ToolCallFailed)
	denied.ToolCall.Error = "The operator denied this tool call."
	add(denied)
	add(call("c4", "Edit", eventstore.ActivityEditing, file("/repo/calc.go"), eventstore.ToolCallStarted))
	add(call("c4", "Edit", eventstore.ActivityEditing, nil, eventstore.ToolCallSucceeded))
	add(call("c5", "Bash", eventstore.ActivityExecuting, cmdT, eventstore.ToolCallStarted))
	failed := call("c5", "Bash", eventstore.ActivityExecuting, nil, eventstore.ToolCallFailed)
	one := int64(1)
	failed.ToolCall.Error, failed.ToolCall.ExitCode = "exit status 1", &one
	failed.ToolCall.Output = "--- FAIL: TestAdd (0.00s)\n    calc_test.go:9: Add(1, 2) = 4, want 3\nFAIL\n"
	add(failed)
	add(obs(&eventstore.NeedsInputSignal{RequestID: "q1", Question: "Change the test or the code?", Choices: []string{"test", "code"}}))
	add(&eventstore.StateChanged{Attention: eventstore.AttentionAwaitingOperator, CurrentInputRequestID: eventstore.SetInputRequest("q1")})
	add(msg("m-q1", "answer", "the code", "q1"))
	add(&eventstore.StateChanged{Attention: eventstore.AttentionAutonomous, CurrentInputRequestID: eventstore.ClearInputRequest()})
	add(obs(&eventstore.MessageSignal{Format: "markdown", Text: "I fixed **the code**, not the test:\n\n- `Add` summed twice\n- the tests pass now\n\n```go\nreturn a + b\n```\n\n<img src=x onerror=alert(1)> [link](javascript:alert(2)) ![chart](https://example.invalid/c.png)"}))
	add(tokens(1500, 300))
	add(&eventstore.StateChanged{Base: eventstore.Base{RecordID: eventstore.RecordID(ref.JournalID, eventstore.KindStateChanged, "turn:1:end")},
		Attention: eventstore.AttentionAwaitingOperator, Activity: eventstore.ActivityIdle, Reason: "turn 1 ended; waiting for the next message"})
	add(msg("m2", "prompt", "Now add a test for it.", ""))
	add(&eventstore.StateChanged{Base: eventstore.Base{RecordID: eventstore.RecordID(ref.JournalID, eventstore.KindStateChanged, "turn:2:start")},
		Attention: eventstore.AttentionAutonomous, Reason: "turn 2 started by message m2"})
	add(obs(&eventstore.BlockedSignal{Reason: "the module cache is read-only", Needs: "GOFLAGS=-mod=mod"}))
	add(&eventstore.StateChanged{Attention: eventstore.AttentionBlocked, Reason: "the module cache is read-only"})
	add(&eventstore.StateChanged{Attention: eventstore.AttentionAutonomous})
	add(call("c6", "Write", eventstore.ActivityEditing, file("/repo/calc_test.go"), eventstore.ToolCallStarted))
	add(call("c6", "Write", eventstore.ActivityEditing, nil, eventstore.ToolCallSucceeded))
	add(obs(&eventstore.CompletedClaimSignal{Summary: "Add fixed and tested", Evidence: []string{"go test ./..."}}))
	add(tokens(2500, 500))
	add(&eventstore.StateChanged{Lifecycle: eventstore.LifecycleCompleted, Reason: "exit status 0"})
	add(&eventstore.StateChanged{Attention: eventstore.AttentionAwaitingOperator})

	nar, err := narrative.Execution(t.Context(), s, id)
	if err != nil {
		t.Fatal(err)
	}
	return nar
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with -update)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got; rewrite with -update if the change is meant):\n%s", path, d)
	}
}

// TestStoryGolden: the story of a journal built in code, in Markdown and
// HTML, against the golden files.
func TestStoryGolden(t *testing.T) {
	n := storyJournal(t)
	golden(t, "story.md", []byte(render(t, n, "md", false)))
	golden(t, "story.html", []byte(render(t, n, "html", false)))
}

func render(t *testing.T, n *narrative.Narrative, format string, audit bool) string {
	t.Helper()
	var b bytes.Buffer
	if err := narrative.Render(&b, n, format, audit); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestStoryTells: what the story must say of the journal, checked apart
// from the golden file so that a rewritten golden cannot lose it.
func TestStoryTells(t *testing.T) {
	n := storyJournal(t)
	md := render(t, n, "md", false)
	for _, want := range []string{
		"### Turn 1[^r1t1]", "### Turn 2[^r1t2]",
		// The prompt, on its lines, inert.
		"> Fix the failing test in \\`calc\\`.\n>\n> Keep the API &lt;stable&gt; &amp; small.",
		"- Read (1): `/repo/calc.go`",
		"- Wrote or edited (1): `/repo/calc.go`",
		"- Searched (1): `func Add in /repo`",
		"- **Denied**: Write /repo/.env: The operator denied this tool call.",
		"- **Failed**: Bash go test ./... (exit 1): exit status 1",
		"calc_test.go:9: Add(1, 2) = 4, want 3",
		"- asked permission to use Write on /repo/.env; operator answered: deny",
		"- asked: Change the test or the code? (test, code); operator answered: the code",
		// The agent's Markdown, kept on its lines, in a quote.
		"> I fixed **the code**, not the test:\n>\n> - `Add` summed twice\n> - the tests pass now\n>\n> ```go\n> return a + b\n> ```",
		"Turn 1 ended. Tokens: 1,500 in, 300 out, 1,800 in all.",
		"Tokens: 1,000 in, 200 out, 1,200 in all.",
		"- blocked: the module cache is read-only; needs GOFLAGS=-mod=mod",
		"- agent claims completion: Add fixed and tested (evidence: go test ./...)",
		"- ended completed (exit status 0)",
		"- tokens in all: 2,500 in, 500 out, 3,000 in all",
		"[^r1t1]: `ae-0123456789abcdef01234567` seq 3–",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the story lacks %q:\n%s", want, md)
		}
	}
	// The message's raw HTML is text; its code keeps its angle brackets.
	if !strings.Contains(md, "> &lt;img src=x onerror=alert(1)>") || strings.Contains(md, "<img") {
		t.Errorf("the story passes the message's raw HTML through:\n%s", md)
	}
	for _, bad := range []string{"sha256:" + strings.Repeat(".", 64) + " —", "awaiting-operator", "file touched"} {
		if regexp.MustCompile(regexp.QuoteMeta(bad)).MatchString(md) {
			t.Errorf("the story says %q:\n%s", bad, md)
		}
	}
	// Provenance is once a turn, not on every line.
	if c := strings.Count(md, "sha256:"); c > 2*len(n.Runs[0].Story.Turns) {
		t.Errorf("%d event ids in the story, want at most two per turn", c)
	}
	// The read of calc.go and its edit are told apart; the denied write is
	// not told as a write done.
	if strings.Contains(md, "Wrote or edited (2)") {
		t.Errorf("the denied write is counted as a write:\n%s", md)
	}

	out := render(t, n, "html", false)
	for _, want := range []string{"<strong>the code</strong>", "<li><code>Add</code> summed twice</li>", `<code class="language-go">return a + b`,
		"Keep the API &lt;stable&gt; &amp; small.", "[image: chart https://example.invalid/c.png]"} {
		if !strings.Contains(out, want) {
			t.Errorf("the page lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"<img", "onerror", "javascript:", "<script"} {
		if strings.Contains(strings.ToLower(out), bad) {
			t.Errorf("the page contains %q:\n%s", bad, out)
		}
	}
}

// TestAuditIsTheLineForm: with audit, Markdown and HTML are the line form,
// every line on its record.
func TestAuditIsTheLineForm(t *testing.T) {
	n := storyJournal(t)
	md, page := render(t, n, "md", true), render(t, n, "html", true)
	var want bytes.Buffer
	_ = narrative.AuditMarkdown(&want, n)
	if md != want.String() || !strings.Contains(md, "**observed**") {
		t.Errorf("audit markdown is not the line form:\n%s", md)
	}
	lines := 0
	for _, r := range n.Runs {
		lines += len(r.Lines)
	}
	if c := strings.Count(md, "— `ae-"); c != lines {
		t.Errorf("audit markdown has %d anchored lines, want %d", c, lines)
	}
	if !strings.Contains(page, `<span class="marker">observed</span>`) {
		t.Errorf("audit page is not the line form:\n%s", page)
	}
}
