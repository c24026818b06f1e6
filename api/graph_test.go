package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// lineageJournal writes a journal of id with prompts, forking parent
// after seq when parent is set.
func lineageJournal(t *testing.T, s eventstore.Store, id string, parent *eventstore.Reference, seq uint64, prompts ...string) eventstore.Reference {
	t.Helper()
	ctx := context.Background()
	ref, err := eventstore.NewReference(eventstore.OwnerTask, "t-1", id)
	if err != nil {
		t.Fatal(err)
	}
	h := &eventstore.Header{AgentID: "generic", WorkingDirectory: "/work/repo", ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureStructuredHeadless}}
	if parent != nil {
		h.ForkedFrom = &eventstore.ForkLink{JournalID: parent.JournalID, AgentExecutionID: parent.AgentExecutionID, Sequence: seq, EventID: fixtures.EventIDAt(t, s, *parent, seq)}
	}
	if ref, err = s.EnsureJournal(ctx, ref, h); err != nil {
		t.Fatal(err)
	}
	for i, p := range prompts {
		m := &eventstore.MessageAccepted{MessageID: fmt.Sprintf("%s-m%d", id, i), Source: eventstore.SourceOperator, MessageType: "prompt",
			Payload: []byte(fmt.Sprintf(`{"text":%q}`, p)), MutatesContext: true}
		if _, err := s.Append(ctx, ref, m); err != nil {
			t.Fatal(err)
		}
	}
	a := &eventstore.ActivityUpdated{Base: eventstore.Base{RecordID: eventstore.RecordID(ref.JournalID, eventstore.KindActivity, "t1")},
		ToolCall: &eventstore.ToolCall{ID: "t1", Name: "Bash", Status: eventstore.ToolCallStarted}}
	if _, err := s.Append(ctx, ref, a); err != nil {
		t.Fatal(err)
	}
	return ref
}

func TestLineageRoutes(t *testing.T) {
	t.Parallel()
	st := apitest.Start(t, apitest.Options{})
	root := lineageJournal(t, st.Store, "lin-root", nil, 0, "one", "two")
	f1 := lineageJournal(t, st.Store, "lin-f1", &root, 2, "fork")
	lineageJournal(t, st.Store, "lin-f2", &f1, 3, "fork of fork")
	lineageJournal(t, st.Store, "lin-f1b", &root, 3)
	snap := &eventstore.SnapshotCreated{Resource: "/work/repo", Ref: "refs/agentjournal/lin-root/4", Commit: strings.Repeat("c", 40), Tree: strings.Repeat("d", 40), AtSequence: 4}
	if _, err := st.Store.Append(context.Background(), root, snap); err != nil {
		t.Fatal(err)
	}

	v := servedValidator(t, st.HTTP.URL)
	get := func(path string) (int, string, string) {
		t.Helper()
		return validatedGet(t, v, st.HTTP.URL, path)
	}

	code, _, body := get("/v1/executions/lin-f1/lineage")
	if code != http.StatusOK {
		t.Fatalf("lineage: %d %s", code, body)
	}
	var lin struct {
		Root      string
		Ancestors []struct{ ExecutionID, Relation string }
		Tree      struct {
			ExecutionID string
			Children    []struct {
				ExecutionID string
				Current     bool
				Children    []struct{ ExecutionID string }
			}
		}
		History []struct {
			ExecutionID string
			Sequence    uint64
			EventID     string
			Inherited   bool
		}
		ToolCalls []struct{ CallID, Status string }
		Snapshots struct {
			Resource string
			Items    []struct{ Ref, ExecutionID string }
		}
	}
	if err := json.Unmarshal([]byte(body), &lin); err != nil {
		t.Fatal(err)
	}
	if lin.Root != "lin-root" || len(lin.Ancestors) != 1 || lin.Ancestors[0].ExecutionID != "lin-root" || lin.Ancestors[0].Relation != "fork" {
		t.Errorf("lineage of lin-f1: root %q ancestors %+v, want lin-root by fork", lin.Root, lin.Ancestors)
	}
	if c := lin.Tree.Children; len(c) != 2 || c[0].ExecutionID != "lin-f1" || !c[0].Current || c[1].ExecutionID != "lin-f1b" || c[1].Current ||
		len(c[0].Children) != 1 || c[0].Children[0].ExecutionID != "lin-f2" {
		t.Errorf("tree: got %+v, want lin-root > [lin-f1 (current) > lin-f2, lin-f1b]", lin.Tree)
	}
	// root 1..2 inherited, then f1's own 1..3.
	if h := lin.History; len(h) != 5 || !h[0].Inherited || h[0].ExecutionID != "lin-root" || !h[1].Inherited || h[2].Inherited || h[2].ExecutionID != "lin-f1" ||
		h[1].EventID != fixtures.EventIDAt(t, st.Store, root, 2) {
		t.Errorf("history: got %+v, want root's 1 and 2 inherited, then lin-f1's 1..3", h)
	}
	if len(lin.ToolCalls) != 1 || lin.ToolCalls[0].CallID != "t1" || lin.ToolCalls[0].Status != "started" || lin.Snapshots.Resource != "/work/repo" ||
		len(lin.Snapshots.Items) != 1 || lin.Snapshots.Items[0].Ref != snap.Ref || lin.Snapshots.Items[0].ExecutionID != "lin-root" {
		t.Errorf("tool calls %+v, snapshots %+v; want t1 started, lin-root's snapshot of /work/repo", lin.ToolCalls, lin.Snapshots)
	}
	code, _, body = get("/v1/executions/lin-f1/lineage?at=2001-01-01T00:00:00Z")
	if code != http.StatusOK || !strings.Contains(body, `"items":[]`) {
		t.Errorf("snapshots as of 2001: %d %s, want none", code, body)
	}

	code, ctype, body := get("/v1/graph?execution=lin-f2&format=dot")
	if code != http.StatusOK || !strings.HasPrefix(ctype, "text/vnd.graphviz") || !strings.HasPrefix(body, "digraph agentjournal {") ||
		!strings.Contains(body, `"run:lin-f2" -> "`+fixtures.EventIDAt(t, st.Store, f1, 3)+`" [label="FORKED_FROM"];`) {
		t.Errorf("graph as DOT: %d %s\n%s", code, ctype, body)
	}
	code, _, body = get("/v1/graph")
	var g struct{ Nodes, Edges []json.RawMessage }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &g) != nil || len(g.Nodes) == 0 || !strings.Contains(body, `"kind":"DERIVED_FROM"`) {
		t.Errorf("graph of all: %d %.300s", code, body)
	}

	id := fixtures.EventIDAt(t, st.Store, root, 2)
	for _, q := range []string{"", "?execution=lin-f2"} {
		code, _, body = get("/v1/events/" + id + "/origin" + q)
		if code != http.StatusOK || !strings.Contains(body, `"executionId":"lin-root"`) || !strings.Contains(body, `"sequence":2`) {
			t.Errorf("origin%s: %d %s, want lin-root sequence 2", q, code, body)
		}
	}

	for _, c := range []struct {
		name, path string
		code       int
		want       string
	}{
		{"bad format", "/v1/graph?format=svg", 400, "want one of: json, dot"},
		{"unknown execution in graph", "/v1/graph?execution=nope", 404, `no execution \"nope\"`},
		{"hostile execution in graph", "/v1/graph?execution=" + url.QueryEscape("a.b>*/.."), 404, "no execution"},
		{"unknown parameter", "/v1/graph?exec=x", 400, "want one of: execution, format"},
		{"unknown lineage", "/v1/executions/nope/lineage", 404, "nope"},
		{"bad at", "/v1/executions/lin-f1/lineage?at=yesterday", 400, "RFC 3339"},
		{"bad event id", "/v1/events/sha1:abc/origin", 400, "want sha256: and 64 lowercase hex digits"},
		{"unknown event id", "/v1/events/sha256:" + strings.Repeat("0", 64) + "/origin", 404, "no record"},
		{"event inside the lineage", "/v1/events/" + fixtures.EventIDAt(t, st.Store, root, 3) + "/origin?execution=lin-f1b", 200, `"executionId":"lin-root"`},
		{"event past the fork point", "/v1/events/" + fixtures.EventIDAt(t, st.Store, root, 4) + "/origin?execution=lin-f1b", 404, "no record of lin-f1b"},
	} {
		code, _, body := get(c.path)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("%s: got %d %s, want %d with %q", c.name, code, body, c.code, c.want)
		}
	}
}
