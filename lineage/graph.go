package lineage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Source is what the graph is built from; eventstore's stores implement it.
type Source interface {
	ReadJournal(ctx context.Context, ref eventstore.Reference, fromSeq uint64) iter.Seq2[eventstore.Entry, error]
	Lookup(ctx context.Context, agentExecutionID string) (eventstore.Reference, error)
	Journals(ctx context.Context) ([]eventstore.Reference, error)
}

var _ Source = (eventstore.Store)(nil)

var (
	// ErrUnknownExecution reports an execution id no journal belongs to.
	ErrUnknownExecution = errors.New("lineage: unknown execution")
	// ErrUnknownEvent reports an event id no record of the journals has.
	ErrUnknownEvent = errors.New("lineage: unknown event")
	// ErrBadEventID reports a string that is not an event id.
	ErrBadEventID = errors.New("lineage: not an event id")
	// ErrBrokenLink reports a fork or resume link that cannot be followed:
	// a cycle, a chain deeper than MaxDepth, or a parent that lacks the
	// record the link pins.
	ErrBrokenLink = errors.New("lineage: link cannot be followed")
)

// MaxDepth bounds how many links up ancestry and history follow, as
// execution.MaxForkDepth bounds replay.
const MaxDepth = 64

// NodeKind is the kind of a graph node. Persisted in exports: never rename.
type NodeKind string

const (
	NodeAgent    NodeKind = "agent"
	NodeRun      NodeKind = "run"
	NodeEvent    NodeKind = "event"
	NodeToolCall NodeKind = "tool_call"
	NodeResource NodeKind = "resource"
	NodeSnapshot NodeKind = "snapshot"
)

// EdgeKind is a typed relation of the agent DAG (spec 002's edge types).
type EdgeKind string

const (
	AgentHasRun   EdgeKind = "AGENT_HAS_RUN"
	RunHasEvent   EdgeKind = "RUN_HAS_EVENT"
	CallsTool     EdgeKind = "CALLS_TOOL"
	ReturnsResult EdgeKind = "RETURNS_RESULT"
	ForkedFrom    EdgeKind = "FORKED_FROM"
	SpawnedFrom   EdgeKind = "SPAWNED_FROM"
	Interrupts    EdgeKind = "INTERRUPTS"
	SnapshotOf    EdgeKind = "SNAPSHOT_OF"
	RestoresTo    EdgeKind = "RESTORES_TO"
	DerivedFrom   EdgeKind = "DERIVED_FROM"
)

// EdgeKinds lists the edge kinds the graph can hold. SPAWNED_FROM is
// among them but no journal yields it yet: an execution is owned by a
// System, Repository, Mission, Task or Artifact, never by another
// execution, so no run is a subagent of another.
var EdgeKinds = []EdgeKind{AgentHasRun, RunHasEvent, CallsTool, ReturnsResult, ForkedFrom, SpawnedFrom, Interrupts, SnapshotOf, RestoresTo, DerivedFrom}

// EventKind is spec 002's kind of an event (docs/lineage.md maps the
// journal's record kinds to them).
type EventKind string

const (
	EventRunStarted       EventKind = "run_started"
	EventAgentForked      EventKind = "agent_forked"
	EventRunFinished      EventKind = "run_finished"
	EventHistoryAppend    EventKind = "history_append"
	EventModelResponse    EventKind = "model_response"
	EventToolCall         EventKind = "tool_call"
	EventToolResult       EventKind = "tool_result"
	EventInterruption     EventKind = "interruption"
	EventSnapshotCreated  EventKind = "snapshot_created"
	EventRestoreAttempted EventKind = "restore_attempted"
)

// Relation says how a run derives from another.
type Relation string

const (
	// RelationFork: a fork, inheriting its parent's records up to a sequence.
	RelationFork Relation = "fork"
	// RelationResume: a new run of the same session.
	RelationResume Relation = "resume"
)

// Node is one node of the graph. An event node is named by its event id
// and says which execution's journal holds its record, at what sequence.
type Node struct {
	ID          string            `json:"id"`
	Kind        NodeKind          `json:"kind"`
	Label       string            `json:"label"`
	EventID     string            `json:"eventId,omitempty"`
	EventKind   EventKind         `json:"eventKind,omitempty"`
	Record      eventstore.Kind   `json:"record,omitempty"`
	ExecutionID string            `json:"executionId,omitempty"`
	Sequence    uint64            `json:"sequence,omitempty"`
	At          time.Time         `json:"at,omitzero"`
	Attrs       map[string]string `json:"attrs,omitempty"`
	// External marks a node outside the journals the graph was built
	// from that one of its edges names (a parent of an exported fork).
	External bool `json:"external,omitempty"`
}

// Edge is one typed relation; Seq is RUN_HAS_EVENT's position in the run.
type Edge struct {
	Kind  EdgeKind          `json:"kind"`
	From  string            `json:"from"`
	To    string            `json:"to"`
	Seq   uint64            `json:"seq,omitempty"`
	Attrs map[string]string `json:"attrs,omitempty"`
}

// Graph is the nodes and edges of a set of journals, in journal order.
type Graph struct {
	Nodes []Node `json:"nodes"`
	Edges []Edge `json:"edges"`
}

// Node returns the node with the id, if the graph has it.
func (g *Graph) Node(id string) (Node, bool) {
	for _, n := range g.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return Node{}, false
}

// RunNodeID, AgentNodeID … name the nodes that are not events.
func RunNodeID(executionID string) string { return "run:" + executionID }
func AgentNodeID(agentID string) string   { return "agent:" + agentID }
func ResourceNodeID(path string) string   { return "resource:" + path }
func SnapshotNodeID(ref string) string    { return "snapshot:" + ref }
func toolNodeID(executionID, callID string) string {
	return "tool:" + executionID + "/" + callID
}

// Build builds the graph of the executions named, or of every journal when
// none is named. A node an edge names outside those journals (a fork's
// parent) is added as External.
func Build(ctx context.Context, src Source, executionIDs ...string) (*Graph, error) {
	refs, err := resolve(ctx, src, executionIDs)
	if err != nil {
		return nil, err
	}
	b := newBuilder()
	for _, ref := range refs {
		if err := b.addJournal(ctx, src, ref); err != nil {
			return nil, err
		}
	}
	return b.graph(), nil
}

// resolve finds the journals of the ids, or lists every journal, ordered by
// execution id so that a graph is the same whatever order the store lists.
func resolve(ctx context.Context, src Source, ids []string) ([]eventstore.Reference, error) {
	if len(ids) == 0 {
		refs, err := src.Journals(ctx)
		if err != nil {
			return nil, fmt.Errorf("list journals: %w", err)
		}
		slices.SortFunc(refs, func(a, b eventstore.Reference) int {
			return cmp.Or(cmp.Compare(a.AgentExecutionID, b.AgentExecutionID), cmp.Compare(a.JournalID, b.JournalID))
		})
		return refs, nil
	}
	var refs []eventstore.Reference
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		ref, err := lookup(ctx, src, id)
		if err != nil {
			return nil, err
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

func lookup(ctx context.Context, src Source, id string) (eventstore.Reference, error) {
	ref, err := src.Lookup(ctx, id)
	if errors.Is(err, eventstore.ErrJournalNotFound) || errors.Is(err, eventstore.ErrInvalidID) {
		return ref, fmt.Errorf("%w: no execution %q", ErrUnknownExecution, id)
	}
	if err != nil {
		return ref, fmt.Errorf("look up %s: %w", id, err)
	}
	return ref, nil
}

// event is a record read with its event id.
type event struct {
	rec eventstore.Record
	id  string
}

// readJournal reads a journal's records up to sequence upTo with their
// event ids.
func readJournal(ctx context.Context, src Source, ref eventstore.Reference, upTo uint64) ([]event, error) {
	var out []event
	for e, err := range src.ReadJournal(ctx, ref, 1) {
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", ref, err)
		}
		if e.Record.RecordBase().Sequence > upTo {
			break
		}
		id, err := eventstore.EventID(e.Record)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", ref, err)
		}
		out = append(out, event{rec: e.Record, id: id})
	}
	return out, nil
}

// readHeader reads a journal's first record, its header.
func readHeader(ctx context.Context, src Source, ref eventstore.Reference) (*eventstore.Header, error) {
	for e, err := range src.ReadJournal(ctx, ref, 1) {
		if err != nil {
			return nil, fmt.Errorf("read the header of %s: %w", ref, err)
		}
		if h, ok := e.Record.(*eventstore.Header); ok {
			return h, nil
		}
		break
	}
	return nil, fmt.Errorf("%s does not start with its header", ref)
}

// EventKindOf maps a journal record to spec 002's event kind, "" for a
// record that has none (docs/lineage.md has the table).
func EventKindOf(r eventstore.Record) EventKind {
	switch r := r.(type) {
	case *eventstore.Header:
		if r.ForkedFrom != nil {
			return EventAgentForked
		}
		return EventRunStarted
	case *eventstore.MessageAccepted:
		return EventHistoryAppend
	case *eventstore.Observation:
		return EventModelResponse
	case *eventstore.StateChanged:
		if isFinal(r.Lifecycle) {
			return EventRunFinished
		}
	case *eventstore.ActivityUpdated:
		if c := r.ToolCall; c != nil {
			if c.Status == eventstore.ToolCallStarted {
				return EventToolCall
			}
			return EventToolResult
		}
	case *eventstore.Interruption:
		return EventInterruption
	case *eventstore.SnapshotCreated:
		return EventSnapshotCreated
	case *eventstore.RestoreAttempted:
		return EventRestoreAttempted
	}
	return ""
}

func isFinal(l eventstore.Lifecycle) bool {
	switch l {
	case eventstore.LifecycleCompleted, eventstore.LifecycleFailed, eventstore.LifecycleCancelled, eventstore.LifecycleTerminated:
		return true
	}
	return false
}

// toolStatus maps a tool call's status to spec 002's ToolCallStatus.
func toolStatus(s eventstore.ToolCallStatus) string {
	switch s {
	case eventstore.ToolCallSucceeded:
		return "ok"
	case eventstore.ToolCallFailed:
		return "error"
	}
	return string(s)
}

type builder struct {
	nodes map[string]int // id → index in order
	order []Node
	edges []Edge
	seen  map[string]bool // edge keys
}

func newBuilder() *builder {
	return &builder{nodes: map[string]int{}, seen: map[string]bool{}}
}

// node adds n, or fills an external node of the same id with n.
func (b *builder) node(n Node) {
	if i, ok := b.nodes[n.ID]; ok {
		if b.order[i].External && !n.External {
			b.order[i] = n
		}
		return
	}
	b.nodes[n.ID] = len(b.order)
	b.order = append(b.order, n)
}

func (b *builder) edge(e Edge) {
	key := string(e.Kind) + "\x00" + e.From + "\x00" + e.To
	if b.seen[key] {
		return
	}
	b.seen[key] = true
	b.edges = append(b.edges, e)
}

func (b *builder) graph() *Graph {
	g := &Graph{Nodes: b.order, Edges: b.edges}
	if g.Nodes == nil {
		g.Nodes = []Node{}
	}
	if g.Edges == nil {
		g.Edges = []Edge{}
	}
	return g
}

// addJournal adds one journal's run, its records and the edges they carry.
func (b *builder) addJournal(ctx context.Context, src Source, ref eventstore.Reference) error {
	events, err := readJournal(ctx, src, ref, math.MaxUint64)
	if err != nil {
		return err
	}
	exec := ref.AgentExecutionID
	run := RunNodeID(exec)
	var (
		tools     = map[string]string{} // call id → tool node
		byMessage = map[string]string{} // message id → event id of its acceptance
		byRequest = map[string]string{} // input request id → event id that opened it
	)
	for _, e := range events {
		base := e.rec.RecordBase()
		b.node(Node{ID: e.id, Kind: NodeEvent, Label: strconv.FormatUint(base.Sequence, 10) + " " + string(e.rec.Kind()),
			EventID: e.id, EventKind: EventKindOf(e.rec), Record: e.rec.Kind(), ExecutionID: exec, Sequence: base.Sequence, At: base.OccurredAt})
		b.edge(Edge{Kind: RunHasEvent, From: run, To: e.id, Seq: base.Sequence})
		switch r := e.rec.(type) {
		case *eventstore.Header:
			b.addRun(r)
		case *eventstore.MessageAccepted:
			if _, ok := byMessage[r.MessageID]; !ok {
				byMessage[r.MessageID] = e.id
			}
		case *eventstore.Observation:
			byRequest[r.ObservationID] = e.id
		case *eventstore.StateChanged:
			if id := r.CurrentInputRequestID; id.Set && id.ID != "" {
				byRequest[id.ID] = e.id
			}
		case *eventstore.ActivityUpdated:
			if r.ToolCall != nil {
				b.addToolCall(exec, e, r.ToolCall, tools)
			}
		case *eventstore.Interruption:
			b.addInterruption(run, e, r, byMessage, byRequest)
		case *eventstore.SnapshotCreated:
			b.addSnapshot(e, r)
		case *eventstore.RestoreAttempted:
			b.addRestore(e, r)
		}
	}
	return nil
}

// addRun adds a run's node, its agent and its links.
func (b *builder) addRun(h *eventstore.Header) {
	run := RunNodeID(h.AgentExecutionID)
	attrs := map[string]string{"journalId": h.JournalID, "owner": string(h.Scope) + "/" + h.OwnerID, "sessionId": h.Session()}
	if h.WorkingDirectory != "" {
		attrs["workingDirectory"] = h.WorkingDirectory
	}
	b.node(Node{ID: run, Kind: NodeRun, Label: h.AgentExecutionID, ExecutionID: h.AgentExecutionID, At: h.OccurredAt, Attrs: attrs})
	b.node(Node{ID: AgentNodeID(h.AgentID), Kind: NodeAgent, Label: h.AgentID})
	b.edge(Edge{Kind: AgentHasRun, From: AgentNodeID(h.AgentID), To: run})
	if f := h.ForkedFrom; f != nil {
		seq := strconv.FormatUint(f.Sequence, 10)
		b.node(Node{ID: RunNodeID(f.AgentExecutionID), Kind: NodeRun, Label: f.AgentExecutionID, ExecutionID: f.AgentExecutionID, External: true})
		b.node(Node{ID: f.EventID, Kind: NodeEvent, Label: seq, EventID: f.EventID, ExecutionID: f.AgentExecutionID, Sequence: f.Sequence, External: true})
		b.edge(Edge{Kind: ForkedFrom, From: run, To: f.EventID, Attrs: map[string]string{"sequence": seq}})
		b.edge(Edge{Kind: DerivedFrom, From: run, To: RunNodeID(f.AgentExecutionID), Attrs: map[string]string{"relation": string(RelationFork), "sequence": seq}})
	}
	if r := h.Resumes; r != nil {
		b.node(Node{ID: RunNodeID(r.AgentExecutionID), Kind: NodeRun, Label: r.AgentExecutionID, ExecutionID: r.AgentExecutionID, External: true})
		b.edge(Edge{Kind: DerivedFrom, From: run, To: RunNodeID(r.AgentExecutionID), Attrs: map[string]string{"relation": string(RelationResume)}})
	}
}

// addToolCall pairs a tool call's start and end by the CLI's call id: the
// starting record CALLS_TOOL the call, the call RETURNS_RESULT the ending
// one. A call without an id cannot be paired: its records get a call each.
func (b *builder) addToolCall(exec string, e event, c *eventstore.ToolCall, tools map[string]string) {
	id, ok := tools[c.ID]
	if !ok || c.ID == "" {
		key := c.ID
		if key == "" {
			key = e.id
		}
		id = toolNodeID(exec, key)
		tools[c.ID] = id
		b.node(Node{ID: id, Kind: NodeToolCall, Label: c.Name, ExecutionID: exec, Attrs: map[string]string{"callId": c.ID, "tool": c.Name}})
	}
	if c.Status == eventstore.ToolCallStarted {
		b.edge(Edge{Kind: CallsTool, From: e.id, To: id})
		return
	}
	n := &b.order[b.nodes[id]]
	n.Attrs["status"] = toolStatus(c.Status)
	if c.Error != "" {
		n.Attrs["error"] = c.Error
	}
	b.edge(Edge{Kind: ReturnsResult, From: id, To: e.id})
}

// addInterruption links an interruption to what it cut short: the message
// whose turn or delivery ran and the input request left open; the run when
// neither was in flight (or their records are not in this journal).
func (b *builder) addInterruption(run string, e event, r *eventstore.Interruption, byMessage, byRequest map[string]string) {
	linked := false
	if to, ok := byMessage[r.MessageID]; ok && r.MessageID != "" {
		b.edge(Edge{Kind: Interrupts, From: e.id, To: to, Attrs: map[string]string{"reason": string(r.Reason), "what": "message"}})
		linked = true
	}
	if to, ok := byRequest[r.InputRequestID]; ok && r.InputRequestID != "" {
		b.edge(Edge{Kind: Interrupts, From: e.id, To: to, Attrs: map[string]string{"reason": string(r.Reason), "what": "inputRequest"}})
		linked = true
	}
	if !linked {
		b.edge(Edge{Kind: Interrupts, From: e.id, To: run, Attrs: map[string]string{"reason": string(r.Reason), "what": "run"}})
	}
}

// addSnapshot adds a snapshot, named by its ref, and the working
// directory it is of.
func (b *builder) addSnapshot(e event, r *eventstore.SnapshotCreated) {
	snap := SnapshotNodeID(r.Ref)
	b.node(Node{ID: snap, Kind: NodeSnapshot, Label: r.Ref, ExecutionID: r.AgentExecutionID, At: r.OccurredAt,
		Attrs: map[string]string{"ref": r.Ref, "commit": r.Commit, "atSequence": strconv.FormatUint(r.AtSequence, 10)}})
	b.resource(r.Resource)
	b.edge(Edge{Kind: SnapshotOf, From: snap, To: ResourceNodeID(r.Resource), Attrs: map[string]string{"event": e.id}})
}

// addRestore links a snapshot to the directory a fork restored it into.
// A restore that made no directory from a snapshot (keep, discard, or one
// that failed) has no such edge: its record says what happened.
func (b *builder) addRestore(e event, r *eventstore.RestoreAttempted) {
	if r.SnapshotRef == "" || r.RestoredTo == "" {
		return
	}
	snap := SnapshotNodeID(r.SnapshotRef)
	if _, ok := b.nodes[snap]; !ok {
		b.node(Node{ID: snap, Kind: NodeSnapshot, Label: r.SnapshotRef, Attrs: map[string]string{"ref": r.SnapshotRef}, External: true})
	}
	b.resource(r.RestoredTo)
	b.edge(Edge{Kind: RestoresTo, From: snap, To: ResourceNodeID(r.RestoredTo),
		Attrs: map[string]string{"event": e.id, "outcome": string(r.Outcome), "mode": string(r.Mode)}})
}

// resource adds a working directory's node; spec 002 calls it a file
// resource.
func (b *builder) resource(path string) {
	b.node(Node{ID: ResourceNodeID(path), Kind: NodeResource, Label: path, Attrs: map[string]string{"resourceKind": "file", "path": path}})
}
