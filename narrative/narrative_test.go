package narrative_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/journalfile"
	"github.com/agentjournal/agentjournal/narrative"
)

const hostile = `fix <script>alert(1)</script> and <img src=x onerror=alert(2)> now`

// askedNarrative is the narrative of askedRun's execution, with its
// records.
func askedNarrative(t *testing.T) (*narrative.Narrative, []eventstore.Record) {
	t.Helper()
	s, id, recs := askedRun(t)
	n, err := narrative.Execution(t.Context(), s.Store, id)
	if err != nil {
		t.Fatal(err)
	}
	return n, recs
}

// askedRun runs the fixture agent through a real daemon stack: it blocks,
// asks, gets an answer from the operator, claims completion and exits.
func askedRun(t *testing.T) (*apitest.Stack, string, []eventstore.Record) {
	t.Helper()
	s := apitest.Start(t, apitest.Options{})
	c := client.New(s.HTTP.URL, apitest.Token)
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	res, err := c.Launch(ctx, client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-1", Agent: "generic",
		Prompt: hostile,
		Command: []string{s.Agent,
			`signal:{"type":"progress","payload":{"summary":"reading the code"}}`,
			`signal:{"type":"blocked","payload":{"reason":"no credentials","needs":"a token"}}`,
			"sleep:300ms",
			"ask:q1:Which branch?",
			`signal:{"type":"completed_claim","payload":{"summary":"fixed on main"}}`,
			"sleep:200ms",
		}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Reference.AgentExecutionID
	await(t, ctx, c, id, func(ex client.Execution) bool { return ex.CurrentInputRequestID == "q1" })
	// A plan comes from an SDK or MCP, not from a stdout marker.
	if _, err := c.RecordObservation(ctx, id, client.Observation{ObservationID: "plan-1", Source: eventstore.ObservedSDK,
		Confidence: eventstore.ConfidenceAuthoritative, Signal: &client.Signal{Type: "plan",
			Payload: json.RawMessage(`{"items":[{"text":"read","status":"done"},{"text":"fix","status":"in-progress"}]}`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(ctx, id, client.Message{Type: "answer", Source: eventstore.SourceOperator,
		Payload: json.RawMessage(`{"text":"main","requestId":"q1"}`)}); err != nil {
		t.Fatal(err)
	}
	await(t, ctx, c, id, func(ex client.Execution) bool { return ex.Lifecycle.Final() })
	ref, err := s.Store.Lookup(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var recs []eventstore.Record
	for e, err := range s.Store.ReadJournal(ctx, ref, 1) {
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, e.Record)
	}
	return s, id, recs
}

func await(t *testing.T, ctx context.Context, c *client.Client, id string, ok func(client.Execution) bool) {
	t.Helper()
	for {
		ex, err := c.Execution(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if ok(ex) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: still %s, %+v", id, ex.Lifecycle, ex)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// find returns the first line of the section whose text matches.
func find(t *testing.T, r *narrative.Run, s narrative.Section, m narrative.Marker, pattern string) narrative.Line {
	t.Helper()
	re := regexp.MustCompile(pattern)
	for _, l := range r.Section(s) {
		if l.Marker == m && re.MatchString(l.Text) {
			return l
		}
	}
	var all bytes.Buffer
	_ = narrative.Markdown(&all, &narrative.Narrative{Runs: []narrative.Run{*r}})
	t.Fatalf("no %s line in %s matching %q:\n%s", m, s, pattern, all.String())
	return narrative.Line{}
}

// checkRef: the line's event id is the event id of the record at its
// sequence, and that record is of the line's kind.
func checkRef(t *testing.T, recs []eventstore.Record, l narrative.Line) {
	t.Helper()
	if l.Sequence == 0 || int(l.Sequence) > len(recs) {
		t.Fatalf("line %q names sequence %d of %d", l.Text, l.Sequence, len(recs))
	}
	r := recs[l.Sequence-1]
	want, err := eventstore.EventID(r)
	if err != nil {
		t.Fatal(err)
	}
	if l.EventID != want || l.ExecutionID != r.RecordBase().AgentExecutionID {
		t.Errorf("line %q: event %s of %s, want %s of %s", l.Text, l.EventID, l.ExecutionID, want, r.RecordBase().AgentExecutionID)
	}
	if l.Marker == narrative.Observed && l.Kind != string(r.Kind()) {
		t.Errorf("line %q is a %s line on a %s record", l.Text, l.Kind, r.Kind())
	}
}

// TestNarrativeOfARun: the narrative of a real run has the prompt, the
// question and the answer with who answered, the blocked period as an
// inferred line, the todos, the claim and the final state, each on the
// record it stands on.
func TestNarrativeOfARun(t *testing.T) {
	t.Parallel()
	n, recs := askedNarrative(t)
	if len(n.Runs) != 1 {
		t.Fatalf("%d runs, want 1", len(n.Runs))
	}
	r := &n.Runs[0]
	prompt := find(t, r, narrative.Requested, narrative.Observed, regexp.QuoteMeta(hostile))
	question := find(t, r, narrative.Pauses, narrative.Observed, `q1 asked: Which branch\?`)
	answer := find(t, r, narrative.Pauses, narrative.Observed, `^operator answered q1 at .*: main$`)
	blocked := find(t, r, narrative.Pauses, narrative.Inferred, `^blocked from seq \d+ to seq \d+`)
	wait := find(t, r, narrative.Pauses, narrative.Inferred, `^waited on input request q1 .*answered by operator`)
	claim := find(t, r, narrative.Outcome, narrative.Observed, `claims completion: fixed on main`)
	end := find(t, r, narrative.Outcome, narrative.Observed, `lifecycle completed`)
	find(t, r, narrative.Artifacts, narrative.Observed, `^todo \[in-progress\] fix$`)
	find(t, r, narrative.Ran, narrative.Observed, `progress: reading the code`)
	for _, l := range []narrative.Line{prompt, question, answer, blocked, wait, claim, end} {
		checkRef(t, recs, l)
	}
	if answer.Actor != "operator" {
		t.Errorf("answer's actor %q, want operator", answer.Actor)
	}
	if blocked.From == nil || blocked.From.Sequence >= blocked.Sequence {
		t.Fatalf("blocked period %+v: want it to span from an earlier record", blocked)
	}
	from := recs[blocked.From.Sequence-1].(*eventstore.StateChanged)
	if from.Attention != eventstore.AttentionBlocked {
		t.Errorf("the blocked period starts at %+v, want the change to blocked", from)
	}
	if id, _ := eventstore.EventID(from); blocked.From.EventID != id {
		t.Errorf("blocked period starts at event %s, want %s", blocked.From.EventID, id)
	}
	if len(r.Missing) != 0 || r.Owner != "Task/t-1" {
		t.Errorf("whole journal: missing %q, owner %q; want nothing missing, owner Task/t-1", r.Missing, r.Owner)
	}
	if r.Lifecycle != "completed" || r.EndedAt == nil {
		t.Errorf("run lifecycle %q ended %v, want completed with an end", r.Lifecycle, r.EndedAt)
	}

	var md bytes.Buffer
	if err := narrative.AuditMarkdown(&md, n); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"**observed**", "**inferred**", claim.EventID, "### Approvals and pauses", "&lt;script&gt;"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	var js bytes.Buffer
	if err := narrative.JSON(&js, n); err != nil {
		t.Fatal(err)
	}
	var back narrative.Narrative
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Runs) != 1 || len(back.Runs[0].Lines) != len(r.Lines) {
		t.Fatalf("JSON does not read back: %v", err)
	}
}

// TestHTMLIsInert: text from agents and operators is text in the page,
// never markup; the page loads nothing and runs nothing; in the story and
// in the audit form alike.
func TestHTMLIsInert(t *testing.T) {
	t.Parallel()
	n, _ := askedNarrative(t)
	var story bytes.Buffer
	if err := narrative.HTML(&story, n); err != nil {
		t.Fatal(err)
	}
	inert(t, story.String())
	if !strings.Contains(story.String(), "<style>") || !strings.Contains(story.String(), "<h3>Turn 1</h3>") {
		t.Errorf("story page lacks its inline style or its turn:\n%s", story.String())
	}
	var page bytes.Buffer
	if err := narrative.AuditHTML(&page, n); err != nil {
		t.Fatal(err)
	}
	out := page.String()
	inert(t, out)
	if !strings.Contains(out, "<style>") || !strings.Contains(out, `class="inferred"`) || !strings.Contains(out, `class="observed"`) {
		t.Errorf("page lacks its inline style or markers")
	}
}

func inert(t *testing.T, out string) {
	t.Helper()
	for _, bad := range []string{"<script", "<img", "<link", "<iframe"} {
		if strings.Contains(strings.ToLower(out), bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	// No tag carries a handler or loads anything.
	if m := regexp.MustCompile(`(?i)<[a-z]+[^>]*\s(on[a-z]+|src|href)=`).FindString(out); m != "" {
		t.Errorf("page has a live attribute: %s", m)
	}
	if !strings.Contains(out, "&lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(out, "&lt;img src=x onerror=alert(2)&gt;") {
		t.Errorf("page does not show the prompt as escaped text:\n%s", out)
	}
}

// TestPartialJournal: a journal without its activity records and without
// its end renders from what remains and says what is missing.
func TestPartialJournal(t *testing.T) {
	t.Parallel()
	_, id, recs := askedRun(t)
	// Cut while blocked: the period is told as still open at the end.
	cut := slices.IndexFunc(recs, func(r eventstore.Record) bool {
		sc, ok := r.(*eventstore.StateChanged)
		return ok && sc.Attention == eventstore.AttentionBlocked
	})
	if cut < 0 {
		t.Fatal("the run was never blocked")
	}
	open, err := narrative.BuildRun(recs[:cut+1])
	if err != nil {
		t.Fatal(err)
	}
	find(t, open, narrative.Pauses, narrative.Inferred, fmt.Sprintf(`^blocked from seq %d, still blocked at the last record \(seq %d\)`, cut+1, cut+1))

	var kept []eventstore.Record
	for _, r := range recs {
		if r.Kind() == eventstore.KindActivity {
			continue
		}
		if sc, ok := r.(*eventstore.StateChanged); ok && sc.Lifecycle.Final() {
			break
		}
		kept = append(kept, r)
	}
	for i, r := range kept {
		r.RecordBase().Sequence = uint64(i + 1)
	}
	// Through a journal file into a file store, as an export and import
	// carry a journal.
	var file bytes.Buffer
	if err := journalfile.Write(&file, kept); err != nil {
		t.Fatal(err)
	}
	read, err := journalfile.Read(&file)
	if err != nil {
		t.Fatal(err)
	}
	store, err := eventstore.OpenFile(eventstore.DefaultFileConfig(filepath.Join(t.TempDir(), "journals")))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := journalfile.Import(t.Context(), store, read); err != nil {
		t.Fatal(err)
	}
	n, err := narrative.Execution(t.Context(), store, id)
	if err != nil {
		t.Fatal(err)
	}
	r := &n.Runs[0]
	missing := strings.Join(r.Missing, "\n")
	if !strings.Contains(missing, "no activity records: tool calls unknown") || !strings.Contains(missing, "no terminal recording") {
		t.Errorf("missing %q, want no activity records and no terminal recording", r.Missing)
	}
	find(t, r, narrative.Requested, narrative.Observed, regexp.QuoteMeta(hostile))
	find(t, r, narrative.Pauses, narrative.Observed, `^operator answered q1`)
	find(t, r, narrative.Outcome, narrative.Observed, `claims completion`)
	if r.EndedAt != nil {
		t.Errorf("ended at %v, want no end", r.EndedAt)
	}
	var md bytes.Buffer
	if err := narrative.Markdown(&md, n); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "Partial journal") || !strings.Contains(md.String(), "tool calls unknown") {
		t.Errorf("markdown does not say the journal is partial:\n%s", md.String())
	}
}

// TestNarrativeOfToolCalls: a claude-code run (the fixture replaying a
// real capture in place of the CLI) tells its tool calls with their
// targets and results, the files they touched, the tool calls of its turn,
// and the final status of its todos.
func TestNarrativeOfToolCalls(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{})
	c := client.New(s.HTTP.URL, apitest.Token)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run := func(capture string) (*narrative.Run, []eventstore.Record) {
		t.Helper()
		path, err := filepath.Abs(filepath.Join("..", "runtime", "claude", "testdata", "real", capture))
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Launch(ctx, client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-2", Agent: "claude-code",
			Command: []string{s.Agent, "replay:" + path}, Prompt: "do it", Shape: eventstore.ShapeOneShot})
		if err != nil {
			t.Fatal(err)
		}
		id := res.Reference.AgentExecutionID
		await(t, ctx, c, id, func(ex client.Execution) bool { return ex.Lifecycle.Final() })
		n, err := narrative.Execution(ctx, s.Store, id)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := s.Store.Lookup(ctx, id)
		var recs []eventstore.Record
		for e, err := range s.Store.ReadJournal(ctx, ref, 1) {
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, e.Record)
		}
		return &n.Runs[0], recs
	}

	files, recs := run("files.jsonl")
	const file = "/tmp/capwd/claude-files/hello.txt"
	for _, l := range []narrative.Line{
		find(t, files, narrative.Ran, narrative.Observed, `^tool call Write succeeded`),
		find(t, files, narrative.Ran, narrative.Observed, `^tool call Edit started on file `+regexp.QuoteMeta(file)),
		find(t, files, narrative.Artifacts, narrative.Observed, `^file touched: `+regexp.QuoteMeta(file)+`$`),
		find(t, files, narrative.Ran, narrative.Inferred, `^turn 1 took 2 tool calls$`),
	} {
		checkRef(t, recs, l)
	}
	if len(files.Missing) != 0 {
		t.Errorf("missing %q, want nothing", files.Missing)
	}

	todo, recs := run("todo.jsonl")
	for _, l := range []narrative.Line{
		find(t, todo, narrative.Artifacts, narrative.Observed, `^todo \[done\] Write the file$`),
		find(t, todo, narrative.Artifacts, narrative.Observed, `^todo \[done\] Run the tests$`),
	} {
		checkRef(t, recs, l)
	}
	for _, l := range todo.Section(narrative.Artifacts) {
		if strings.Contains(l.Text, "[in-progress]") || strings.Contains(l.Text, "[open]") {
			t.Errorf("todo line %q: want only the final status", l.Text)
		}
	}
}
