package lineage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/lineage"
)

func openStore(t testing.TB) *eventstore.JetStreamStore {
	t.Helper()
	s := fixtures.OpenStore(t, fixtures.StartNATS(t))
	t.Cleanup(func() { s.Close() })
	return s
}

func header(agent string) *eventstore.Header {
	return &eventstore.Header{AgentID: agent, WorkingDirectory: "/work/repo",
		ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureStructuredHeadless}}
}

func msg(id string) *eventstore.MessageAccepted {
	return &eventstore.MessageAccepted{MessageID: id, Source: eventstore.SourceOperator, MessageType: "prompt",
		Payload: []byte(fmt.Sprintf(`{"text":%q}`, id)), MutatesContext: true}
}

func tool(id, name string, status eventstore.ToolCallStatus) *eventstore.ActivityUpdated {
	return &eventstore.ActivityUpdated{Activity: eventstore.ActivityExecuting, ToolCall: &eventstore.ToolCall{ID: id, Name: name, Status: status}}
}

// journal writes a journal of execution id: the header, then records.
// Records whose kind needs a writer-chosen id get one from their position.
func journal(t testing.TB, s eventstore.Store, id string, h *eventstore.Header, records ...eventstore.Record) eventstore.Reference {
	t.Helper()
	ctx := context.Background()
	ref, err := eventstore.NewReference(eventstore.OwnerTask, "t-1", id)
	if err != nil {
		t.Fatal(err)
	}
	if ref, err = s.EnsureJournal(ctx, ref, h); err != nil {
		t.Fatal(err)
	}
	for i, r := range records {
		if b := r.RecordBase(); b.RecordID == "" && (r.Kind() == eventstore.KindActivity || r.Kind() == eventstore.KindStateChanged) {
			b.RecordID = eventstore.RecordID(ref.JournalID, r.Kind(), fmt.Sprint(i))
		}
		if _, err := s.Append(ctx, ref, r); err != nil {
			t.Fatalf("append %d to %s: %v", i, id, err)
		}
	}
	return ref
}

func forkOf(t testing.TB, s eventstore.Store, parent eventstore.Reference, seq uint64) *eventstore.Header {
	h := header("claude")
	h.ForkedFrom = &eventstore.ForkLink{JournalID: parent.JournalID, AgentExecutionID: parent.AgentExecutionID, Sequence: seq, EventID: fixtures.EventIDAt(t, s, parent, seq),
		History: eventstore.HistoryNative}
	return h
}

// family is a root with a fork of a fork, a second fork, a resume, tool
// calls and interruptions.
type family struct {
	root, f1, f2, f1b, r1 eventstore.Reference
}

func writeFamily(t testing.TB, s eventstore.Store) family {
	var f family
	// root: 1 header, 2 m1, 3 c1 started, 4 c1 succeeded, 5 m2, 6 c2 started, 7 c2 failed
	f.root = journal(t, s, "root", header("claude"), msg("m1"), tool("c1", "Bash", eventstore.ToolCallStarted),
		tool("c1", "Bash", eventstore.ToolCallSucceeded), msg("m2"), tool("c2", "Edit", eventstore.ToolCallStarted),
		&eventstore.ActivityUpdated{ToolCall: &eventstore.ToolCall{ID: "c2", Name: "Edit", Status: eventstore.ToolCallFailed, Error: "no such file"}},
		// 8: the work tree after 7.
		&eventstore.SnapshotCreated{Resource: "/work/repo", Ref: "refs/agentjournal/root/7", Commit: strings.Repeat("a", 40), Tree: strings.Repeat("b", 40), AtSequence: 7, Files: 3})
	// f1 forks after c1 started: 1 header, 2 m3
	f.f1 = journal(t, s, "f1", forkOf(t, s, f.root, 3), msg("m3"))
	// f2 forks f1 after m3, and is interrupted while m4 runs.
	f.f2 = journal(t, s, "f2", forkOf(t, s, f.f1, 2), msg("m4"),
		&eventstore.Interruption{Reason: eventstore.InterruptCrash, Detail: "signal: killed", Turn: 1, MessageID: "m4"})
	f.f1b = journal(t, s, "f1b", forkOf(t, s, f.root, 5), msg("m5"),
		&eventstore.RestoreAttempted{Resource: "/work/repo", Mode: eventstore.RestoreSnapshot, SnapshotRef: "refs/agentjournal/root/7",
			SnapshotCommit: strings.Repeat("a", 40), Outcome: eventstore.RestoreRestored, RestoredTo: "/work/f1b"})
	// r1 resumes root in its session; canceled between turns.
	rh := header("claude")
	rh.SessionID = "root"
	rh.Resumes = &eventstore.ResumeLink{AgentExecutionID: "root", JournalID: f.root.JournalID}
	f.r1 = journal(t, s, "r1", rh, &eventstore.Interruption{Reason: eventstore.InterruptCanceled})
	return f
}

type edge struct {
	kind     lineage.EdgeKind
	from, to string
}

func edgesOf(g *lineage.Graph, kinds ...lineage.EdgeKind) []edge {
	var out []edge
	for _, e := range g.Edges {
		if slices.Contains(kinds, e.Kind) {
			out = append(out, edge{e.Kind, e.From, e.To})
		}
	}
	return out
}

func TestGraphOfForksResumesToolsAndInterruptions(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	f := writeFamily(t, s)
	ev := func(ref eventstore.Reference, seq uint64) string { return fixtures.EventIDAt(t, s, ref, seq) }

	g, err := lineage.Build(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	// Every record is an event node named by its event id, with its run
	// and sequence.
	events := 0
	for _, ref := range []eventstore.Reference{f.root, f.f1, f.f2, f.f1b, f.r1} {
		head, err := s.Head(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		for seq := uint64(1); seq <= head.LastSequence; seq++ {
			id := ev(ref, seq)
			n, ok := g.Node(id)
			if !ok || n.Kind != lineage.NodeEvent || n.EventID != id || n.ExecutionID != ref.AgentExecutionID || n.Sequence != seq || n.External {
				t.Errorf("%s sequence %d: got node %+v (found %v), want event %s", ref.AgentExecutionID, seq, n, ok, id)
			}
			if !slices.ContainsFunc(g.Edges, func(e lineage.Edge) bool {
				return e.Kind == lineage.RunHasEvent && e.From == lineage.RunNodeID(ref.AgentExecutionID) && e.To == id && e.Seq == seq
			}) {
				t.Errorf("no RUN_HAS_EVENT %s -> %s seq %d", ref.AgentExecutionID, id, seq)
			}
			events++
		}
	}
	if got := len(edgesOf(g, lineage.RunHasEvent)); got != events {
		t.Errorf("got %d RUN_HAS_EVENT edges, want %d (one per record)", got, events)
	}
	if n, _ := g.Node(ev(f.f1, 1)); n.EventKind != lineage.EventAgentForked {
		t.Errorf("a fork's header is %q, want agent_forked", n.EventKind)
	}
	if n, _ := g.Node(ev(f.root, 7)); n.EventKind != lineage.EventToolResult {
		t.Errorf("a failed tool call's end is %q, want tool_result", n.EventKind)
	}

	run := lineage.RunNodeID
	c1, c2 := "tool:root/c1", "tool:root/c2"
	want := []edge{
		{lineage.AgentHasRun, lineage.AgentNodeID("claude"), run("f1")},
		{lineage.AgentHasRun, lineage.AgentNodeID("claude"), run("f1b")},
		{lineage.AgentHasRun, lineage.AgentNodeID("claude"), run("f2")},
		{lineage.AgentHasRun, lineage.AgentNodeID("claude"), run("r1")},
		{lineage.AgentHasRun, lineage.AgentNodeID("claude"), run("root")},
		{lineage.CallsTool, ev(f.root, 3), c1},
		{lineage.ReturnsResult, c1, ev(f.root, 4)},
		{lineage.CallsTool, ev(f.root, 6), c2},
		{lineage.ReturnsResult, c2, ev(f.root, 7)},
		{lineage.ForkedFrom, run("f1"), ev(f.root, 3)},
		{lineage.DerivedFrom, run("f1"), run("root")},
		{lineage.ForkedFrom, run("f1b"), ev(f.root, 5)},
		{lineage.DerivedFrom, run("f1b"), run("root")},
		{lineage.ForkedFrom, run("f2"), ev(f.f1, 2)},
		{lineage.DerivedFrom, run("f2"), run("f1")},
		{lineage.Interrupts, ev(f.f2, 3), ev(f.f2, 2)},
		{lineage.DerivedFrom, run("r1"), run("root")},
		{lineage.Interrupts, ev(f.r1, 2), run("r1")},
	}
	sortEdges := func(es []edge) {
		slices.SortFunc(es, func(a, b edge) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	}
	got := edgesOf(g, lineage.AgentHasRun, lineage.CallsTool, lineage.ReturnsResult, lineage.ForkedFrom, lineage.DerivedFrom, lineage.Interrupts, lineage.SpawnedFrom)
	sortEdges(got)
	sortEdges(want)
	if d := cmp.Diff(want, got, cmp.AllowUnexported(edge{})); d != "" {
		t.Errorf("edges (-want +got):\n%s", d)
	}
	if n, _ := g.Node(c2); n.Attrs["status"] != "error" || n.Attrs["error"] != "no such file" {
		t.Errorf("tool call c2: got %v, want status error with its message", n.Attrs)
	}
	for _, e := range g.Edges {
		if e.Kind == lineage.DerivedFrom && e.From == run("r1") && e.Attrs["relation"] != "resume" {
			t.Errorf("r1's DERIVED_FROM: got relation %q, want resume", e.Attrs["relation"])
		}
	}
	for _, n := range g.Nodes {
		if n.External {
			t.Errorf("a graph of every journal has external node %+v", n)
		}
	}
	snap := lineage.SnapshotNodeID("refs/agentjournal/root/7")
	wantRes := []edge{ // in journal order: f1b before root
		{lineage.RestoresTo, snap, lineage.ResourceNodeID("/work/f1b")},
		{lineage.SnapshotOf, snap, lineage.ResourceNodeID("/work/repo")},
	}
	if d := cmp.Diff(wantRes, edgesOf(g, lineage.SnapshotOf, lineage.RestoresTo), cmp.AllowUnexported(edge{})); d != "" {
		t.Errorf("snapshot edges (-want +got):\n%s", d)
	}
	if n, _ := g.Node(ev(f.root, 8)); n.EventKind != lineage.EventSnapshotCreated {
		t.Errorf("snapshot.created is %q, want snapshot_created", n.EventKind)
	}
	if n, _ := g.Node(ev(f.f1b, 3)); n.EventKind != lineage.EventRestoreAttempted {
		t.Errorf("restore.attempted is %q, want restore_attempted", n.EventKind)
	}
	taken, _ := g.Node(snap)
	if got := g.SnapshotsOf("/work/repo", time.Time{}); len(got) != 1 || got[0].Ref != "refs/agentjournal/root/7" || got[0].ExecutionID != "root" || got[0].EventID != ev(f.root, 8) {
		t.Errorf("snapshots of /work/repo now: got %+v, want root's after 7", got)
	}
	if got := g.SnapshotsOf("/work/repo", taken.At.Add(-time.Nanosecond)); len(got) != 0 {
		t.Errorf("snapshots of /work/repo before the first was taken: got %+v, want none", got)
	}
	if got := g.SnapshotsOf("/elsewhere", time.Time{}); len(got) != 0 {
		t.Errorf("snapshots of another directory: got %+v, want none", got)
	}

	// A graph of one fork names its parent's run and pinned record as
	// external nodes, so every edge has both ends.
	g2, err := lineage.Build(ctx, s, "f2")
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := g2.Node(ev(f.f1, 2)); !ok || !n.External || n.ExecutionID != "f1" || n.Sequence != 2 {
		t.Errorf("the pinned parent record: got %+v (found %v), want an external event of f1 at 2", n, ok)
	}
	for _, e := range g2.Edges {
		for _, end := range []string{e.From, e.To} {
			if _, ok := g2.Node(end); !ok {
				t.Errorf("edge %s %s -> %s: no node %s", e.Kind, e.From, e.To, end)
			}
		}
	}

	if _, err := lineage.Build(ctx, s, "nope"); !errors.Is(err, lineage.ErrUnknownExecution) {
		t.Errorf("an unknown execution: got %v, want ErrUnknownExecution", err)
	}
	if _, err := lineage.Build(ctx, s, "../a.b*>"); !errors.Is(err, lineage.ErrUnknownExecution) {
		t.Errorf("a hostile id: got %v, want ErrUnknownExecution", err)
	}
}

func TestAncestryDescendantsAndHistory(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	f := writeFamily(t, s)
	ev := func(ref eventstore.Reference, seq uint64) string { return fixtures.EventIDAt(t, s, ref, seq) }

	anc, err := lineage.Ancestry(ctx, s, "f2")
	if err != nil {
		t.Fatal(err)
	}
	wantAnc := []lineage.Step{
		{ExecutionID: "f1", JournalID: f.f1.JournalID, Relation: lineage.RelationFork, Sequence: 2, EventID: ev(f.f1, 2), History: eventstore.HistoryNative},
		{ExecutionID: "root", JournalID: f.root.JournalID, Relation: lineage.RelationFork, Sequence: 3, EventID: ev(f.root, 3), History: eventstore.HistoryNative},
	}
	if d := cmp.Diff(wantAnc, anc); d != "" {
		t.Errorf("ancestry of f2 (-want +got):\n%s", d)
	}
	if anc, err := lineage.Ancestry(ctx, s, "r1"); err != nil || len(anc) != 1 || anc[0].Relation != lineage.RelationResume || anc[0].ExecutionID != "root" {
		t.Errorf("ancestry of r1: got %+v, %v, want root by resume", anc, err)
	}

	idx, err := lineage.ScanIndex(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	fam, err := lineage.Family(ctx, s, idx, "f1")
	if err != nil {
		t.Fatal(err)
	}
	var draw func(n *lineage.TreeNode, depth int) string
	draw = func(n *lineage.TreeNode, depth int) string {
		s := strings.Repeat("  ", depth) + n.ExecutionID
		if n.Relation != "" {
			s += fmt.Sprintf(" (%s@%d", n.Relation, n.Sequence)
			if n.History != "" {
				s += " " + string(n.History)
			}
			s += ")"
		}
		if n.Current {
			s += " *"
		}
		s += "\n"
		for _, c := range n.Children {
			s += draw(c, depth+1)
		}
		return s
	}
	wantTree := "root\n  f1 (fork@3 native) *\n    f2 (fork@2 native)\n  f1b (fork@5 native)\n  r1 (resume@0)\n"
	if got := draw(fam.Tree, 0); got != wantTree {
		t.Errorf("tree:\ngot\n%s\nwant\n%s", got, wantTree)
	}
	if fam.Root != "root" || !slices.Equal(fam.Descendants.Descendants(), []string{"f2"}) {
		t.Errorf("f1: root %q, descendants %v; want root, [f2]", fam.Root, fam.Descendants.Descendants())
	}

	h, err := lineage.History(ctx, s, "f2")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range h.Items {
		got = append(got, fmt.Sprintf("%s/%d %s inherited=%v", it.ExecutionID, it.Sequence, it.Record, it.Inherited))
		if want := fixtures.EventIDAt(t, s, map[string]eventstore.Reference{"root": f.root, "f1": f.f1, "f2": f.f2}[it.ExecutionID], it.Sequence); it.EventID != want {
			t.Errorf("%s/%d: event id %s, want %s", it.ExecutionID, it.Sequence, it.EventID, want)
		}
	}
	want := []string{
		"root/1 journal.header inherited=true", "root/2 message.accepted inherited=true", "root/3 activity.updated inherited=true",
		"f1/1 journal.header inherited=true", "f1/2 message.accepted inherited=true",
		"f2/1 journal.header inherited=false", "f2/2 message.accepted inherited=false", "f2/3 interruption.recorded inherited=false",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("history of f2 (-want +got):\n%s", d)
	}
	// The fork inherited c1's start, not its end.
	if len(h.ToolCalls) != 1 || h.ToolCalls[0].CallID != "c1" || h.ToolCalls[0].Result != nil || h.ToolCalls[0].Status != "started" || !h.ToolCalls[0].Inherited {
		t.Errorf("f2's tool calls: got %+v, want c1 started, inherited, without a result", h.ToolCalls)
	}
	h, err = lineage.History(ctx, s, "root")
	if err != nil {
		t.Fatal(err)
	}
	wantPairs := []lineage.ToolCallPair{
		{CallID: "c1", Tool: "Bash", Status: "ok", Call: &lineage.EventRef{EventID: ev(f.root, 3), ExecutionID: "root", Sequence: 3}, Result: &lineage.EventRef{EventID: ev(f.root, 4), ExecutionID: "root", Sequence: 4}},
		{CallID: "c2", Tool: "Edit", Status: "error", Error: "no such file", Call: &lineage.EventRef{EventID: ev(f.root, 6), ExecutionID: "root", Sequence: 6}, Result: &lineage.EventRef{EventID: ev(f.root, 7), ExecutionID: "root", Sequence: 7}},
	}
	if d := cmp.Diff(wantPairs, h.ToolCalls); d != "" {
		t.Errorf("root's tool calls (-want +got):\n%s", d)
	}

	if _, err := lineage.Ancestry(ctx, s, "nope"); !errors.Is(err, lineage.ErrUnknownExecution) {
		t.Errorf("ancestry of an unknown execution: got %v, want ErrUnknownExecution", err)
	}
	if _, err := lineage.History(ctx, s, "nope"); !errors.Is(err, lineage.ErrUnknownExecution) {
		t.Errorf("history of an unknown execution: got %v, want ErrUnknownExecution", err)
	}
}

func TestOrigin(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	f := writeFamily(t, s)
	id := fixtures.EventIDAt(t, s, f.root, 2)
	for _, within := range []string{"", "f2", "root"} {
		o, err := lineage.FindOrigin(ctx, s, id, within)
		if err != nil {
			t.Fatalf("within %q: %v", within, err)
		}
		if o.ExecutionID != "root" || o.Sequence != 2 || o.Record != eventstore.KindMessage || o.JournalID != f.root.JournalID {
			t.Errorf("within %q: got %+v, want root's message at 2", within, o)
		}
	}
	// f1b branches after root's 5: root's 6 is not in its lineage.
	if _, err := lineage.FindOrigin(ctx, s, fixtures.EventIDAt(t, s, f.root, 6), "f1b"); !errors.Is(err, lineage.ErrUnknownEvent) {
		t.Errorf("a record past the fork point, within the fork: got %v, want ErrUnknownEvent", err)
	}
	if _, err := lineage.FindOrigin(ctx, s, "sha256:"+strings.Repeat("0", 64), ""); !errors.Is(err, lineage.ErrUnknownEvent) {
		t.Errorf("an id no record has: got %v, want ErrUnknownEvent", err)
	}
	for _, bad := range []string{"", "abc", "sha256:XYZ", "sha256:" + strings.Repeat("A", 64), "md5:" + strings.Repeat("0", 64)} {
		if _, err := lineage.FindOrigin(ctx, s, bad, ""); !errors.Is(err, lineage.ErrBadEventID) || !strings.Contains(err.Error(), "want sha256:") {
			t.Errorf("%q: got %v, want ErrBadEventID saying what is accepted", bad, err)
		}
	}
}

// dotStatement is one line of the DOT the graph is written as.
var (
	dotID       = `"(?:[^"\\]|\\.)*"`
	dotAttrs    = `\[(?:[a-z]+=(?:` + dotID + `|[a-z0-9]+)(?:, )?)+\];`
	dotNodeStmt = regexp.MustCompile(`^  (` + dotID + `) ` + dotAttrs + `$`)
	dotEdgeStmt = regexp.MustCompile(`^  (` + dotID + `) -> (` + dotID + `) ` + dotAttrs + `$`)
)

func TestDOT(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	writeFamily(t, s)
	// An id with DOT's special characters stays one quoted string.
	h := header(`agent "x" \ y`)
	journal(t, s, "odd", h, msg("q"))
	g, err := lineage.Build(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := lineage.WriteDOT(&buf, g); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if lines[0] != "digraph agentjournal {" || lines[len(lines)-1] != "}" {
		t.Fatalf("got first line %q and last %q, want a digraph block", lines[0], lines[len(lines)-1])
	}
	declared := map[string]bool{}
	nodes, edges := 0, 0
	for _, l := range lines[1 : len(lines)-1] {
		switch {
		case strings.HasPrefix(l, "  rankdir=") || strings.HasPrefix(l, "  node [") || strings.HasPrefix(l, "  edge ["):
		case dotEdgeStmt.MatchString(l):
			m := dotEdgeStmt.FindStringSubmatch(l)
			for _, end := range m[1:3] {
				if !declared[end] {
					t.Errorf("edge %s: %s is not declared before", l, end)
				}
			}
			edges++
		case dotNodeStmt.MatchString(l):
			declared[dotNodeStmt.FindStringSubmatch(l)[1]] = true
			nodes++
		default:
			t.Errorf("not a DOT statement: %q", l)
		}
	}
	if nodes != len(g.Nodes) || edges != len(g.Edges) {
		t.Errorf("got %d nodes and %d edges, want %d and %d", nodes, edges, len(g.Nodes), len(g.Edges))
	}
	if !declared[`"agent:agent \"x\" \\ y"`] {
		t.Errorf("the odd agent's node is not declared as one quoted id")
	}
}
