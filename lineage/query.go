package lineage

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Step is one link up an execution's ancestry: the execution the one
// below it derives from, and how.
type Step struct {
	ExecutionID string   `json:"executionId"`
	JournalID   string   `json:"journalId"`
	Relation    Relation `json:"relation"`
	// Sequence and EventID are a fork's: the parent record it branches
	// after.
	Sequence uint64 `json:"sequence,omitempty"`
	EventID  string `json:"eventId,omitempty"`
	// History says how the deriving execution's agent got the
	// conversation: native or reconstructed.
	History eventstore.History `json:"history,omitempty"`
}

// link returns how a header derives from another execution, if it does.
func link(h *eventstore.Header) (Step, bool) {
	switch {
	case h.ForkedFrom != nil:
		f := h.ForkedFrom
		return Step{ExecutionID: f.AgentExecutionID, JournalID: f.JournalID, Relation: RelationFork, Sequence: f.Sequence, EventID: f.EventID, History: f.History}, true
	case h.Resumes != nil:
		return Step{ExecutionID: h.Resumes.AgentExecutionID, JournalID: h.Resumes.JournalID, Relation: RelationResume, History: h.Resumes.History}, true
	}
	return Step{}, false
}

// Ancestry follows an execution's fork and resume links up, nearest first,
// to the execution that derives from none.
func Ancestry(ctx context.Context, src Source, executionID string) ([]Step, error) {
	ref, err := lookup(ctx, src, executionID)
	if err != nil {
		return nil, err
	}
	steps := []Step{}
	seen := map[string]bool{ref.JournalID: true}
	for {
		h, err := readHeader(ctx, src, ref)
		if err != nil {
			return nil, err
		}
		up, ok := link(h)
		if !ok {
			return steps, nil
		}
		if seen[up.JournalID] {
			return nil, fmt.Errorf("%w: a cycle: %s links back to %s", ErrBrokenLink, ref.AgentExecutionID, up.ExecutionID)
		}
		if len(steps) >= MaxDepth {
			return nil, fmt.Errorf("%w: more than %d links up from %s", ErrBrokenLink, MaxDepth, executionID)
		}
		seen[up.JournalID] = true
		steps = append(steps, up)
		if ref, err = lookup(ctx, src, up.ExecutionID); err != nil {
			return nil, fmt.Errorf("%w: %s links to %s: %w", ErrBrokenLink, h.AgentExecutionID, up.ExecutionID, err)
		}
	}
}

// Child is an execution that derives from another: a fork or a resume.
type Child struct {
	ExecutionID string   `json:"executionId"`
	Relation    Relation `json:"relation"`
	Sequence    uint64   `json:"sequence,omitempty"`
	EventID     string   `json:"eventId,omitempty"`
	// History is the child's: native or reconstructed.
	History eventstore.History `json:"history,omitempty"`
	At      time.Time          `json:"at"`
}

// Index maps each execution to the executions that derive from it; the
// links live in the children's headers, so finding descendants needs it.
type Index struct {
	children map[string][]Child
	parent   map[string]string
}

// NewIndex returns an empty index.
func NewIndex() *Index { return &Index{children: map[string][]Child{}, parent: map[string]string{}} }

// Add indexes a journal's header; a header that derives from nothing only
// marks the execution as known.
func (x *Index) Add(h *eventstore.Header) {
	up, ok := link(h)
	if !ok {
		return
	}
	c := Child{ExecutionID: h.AgentExecutionID, Relation: up.Relation, Sequence: up.Sequence, EventID: up.EventID, History: up.History, At: h.OccurredAt}
	if _, dup := x.parent[c.ExecutionID]; dup {
		return
	}
	x.parent[c.ExecutionID] = up.ExecutionID
	x.children[up.ExecutionID] = append(x.children[up.ExecutionID], c)
	slices.SortFunc(x.children[up.ExecutionID], func(a, b Child) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.ExecutionID, b.ExecutionID))
	})
}

// ScanIndex indexes every journal's header: one read of one record per
// journal (docs/lineage.md says why this beats a projection bucket).
func ScanIndex(ctx context.Context, src Source) (*Index, error) {
	refs, err := src.Journals(ctx)
	if err != nil {
		return nil, fmt.Errorf("list journals: %w", err)
	}
	x := NewIndex()
	for _, ref := range refs {
		h, err := readHeader(ctx, src, ref)
		if err != nil {
			return nil, err
		}
		x.Add(h)
	}
	return x, nil
}

// Children returns the executions that derive directly from id, oldest
// first.
func (x *Index) Children(id string) []Child { return slices.Clone(x.children[id]) }

// Parent returns the execution id derives from, if any.
func (x *Index) Parent(id string) (string, bool) {
	p, ok := x.parent[id]
	return p, ok
}

// Root returns the topmost ancestor of id (id itself when it derives from
// nothing).
func (x *Index) Root(id string) string {
	seen := map[string]bool{id: true}
	for {
		p, ok := x.parent[id]
		if !ok || seen[p] || len(seen) > MaxDepth {
			return id
		}
		seen[p] = true
		id = p
	}
}

// TreeNode is an execution in a fork tree with the ones deriving from it.
type TreeNode struct {
	ExecutionID string   `json:"executionId"`
	Relation    Relation `json:"relation,omitempty"`
	Sequence    uint64   `json:"sequence,omitempty"`
	EventID     string   `json:"eventId,omitempty"`
	// History says how this execution's agent got the conversation.
	History eventstore.History `json:"history,omitempty"`
	// Current marks the execution the tree was asked for.
	Current  bool        `json:"current,omitempty"`
	Children []*TreeNode `json:"children"`
}

// Tree returns the tree of executions deriving from root, marking current.
// It stops at MaxDepth levels and never visits an execution twice.
func (x *Index) Tree(root, current string) *TreeNode {
	seen := map[string]bool{}
	var walk func(n *TreeNode, depth int)
	walk = func(n *TreeNode, depth int) {
		seen[n.ExecutionID] = true
		n.Current = n.ExecutionID == current
		n.Children = []*TreeNode{}
		if depth >= MaxDepth {
			return
		}
		for _, c := range x.children[n.ExecutionID] {
			if seen[c.ExecutionID] {
				continue
			}
			k := &TreeNode{ExecutionID: c.ExecutionID, Relation: c.Relation, Sequence: c.Sequence, EventID: c.EventID, History: c.History}
			n.Children = append(n.Children, k)
			walk(k, depth+1)
		}
	}
	t := &TreeNode{ExecutionID: root}
	if p, ok := x.parent[root]; ok {
		for _, c := range x.children[p] {
			if c.ExecutionID == root {
				t.Relation, t.Sequence, t.EventID, t.History = c.Relation, c.Sequence, c.EventID, c.History
			}
		}
	}
	walk(t, 0)
	return t
}

// Descendants lists every execution below id in the tree, depth first.
func (t *TreeNode) Descendants() []string {
	var out []string
	for _, c := range t.Children {
		out = append(out, c.ExecutionID)
		out = append(out, c.Descendants()...)
	}
	return out
}

// HistoryItem is one record of a run's history.
type HistoryItem struct {
	ExecutionID string          `json:"executionId"`
	Sequence    uint64          `json:"sequence"`
	EventID     string          `json:"eventId"`
	Record      eventstore.Kind `json:"record"`
	EventKind   EventKind       `json:"eventKind,omitempty"`
	At          time.Time       `json:"at"`
	// Inherited marks a record of a fork's prefix, held by an ancestor's
	// journal (ExecutionID).
	Inherited bool `json:"inherited,omitempty"`
}

// EventRef names a record by its event id and place.
type EventRef struct {
	EventID     string `json:"eventId"`
	ExecutionID string `json:"executionId"`
	Sequence    uint64 `json:"sequence"`
}

// ToolCallPair is a tool call's start and its result or failure, paired by
// the CLI's call id. Result is nil for a call that never ended in the run.
type ToolCallPair struct {
	CallID    string    `json:"callId,omitempty"`
	Tool      string    `json:"tool"`
	Status    string    `json:"status"`
	Error     string    `json:"error,omitempty"`
	Call      *EventRef `json:"call,omitempty"`
	Result    *EventRef `json:"result,omitempty"`
	Inherited bool      `json:"inherited,omitempty"`
}

// RunHistory is a run's records in order, a fork's inherited prefix first,
// and its tool calls.
type RunHistory struct {
	ExecutionID string         `json:"executionId"`
	Items       []HistoryItem  `json:"items"`
	ToolCalls   []ToolCallPair `json:"toolCalls"`
}

// History reads a run's history: for a fork, its ancestors' records up to
// the fork points (each checked against the event id its link pins), then
// its own. A resumed run's history is its own: resume starts a new run.
func History(ctx context.Context, src Source, executionID string) (*RunHistory, error) {
	ref, err := lookup(ctx, src, executionID)
	if err != nil {
		return nil, err
	}
	events, err := lineageEvents(ctx, src, ref, math.MaxUint64, nil)
	if err != nil {
		return nil, err
	}
	h := &RunHistory{ExecutionID: executionID, Items: make([]HistoryItem, 0, len(events)), ToolCalls: []ToolCallPair{}}
	open := map[string]int{} // execution/call id → index in ToolCalls
	for _, e := range events {
		b := e.rec.RecordBase()
		inherited := b.AgentExecutionID != executionID
		h.Items = append(h.Items, HistoryItem{ExecutionID: b.AgentExecutionID, Sequence: b.Sequence, EventID: e.id, Record: e.rec.Kind(),
			EventKind: EventKindOf(e.rec), At: b.OccurredAt, Inherited: inherited})
		a, ok := e.rec.(*eventstore.ActivityUpdated)
		if !ok || a.ToolCall == nil {
			continue
		}
		c, at := a.ToolCall, &EventRef{EventID: e.id, ExecutionID: b.AgentExecutionID, Sequence: b.Sequence}
		key := b.AgentExecutionID + "/" + c.ID
		i, paired := open[key]
		if !paired || c.ID == "" {
			i = len(h.ToolCalls)
			h.ToolCalls = append(h.ToolCalls, ToolCallPair{CallID: c.ID, Tool: c.Name, Status: string(c.Status), Inherited: inherited})
			if c.ID != "" {
				open[key] = i
			}
		}
		p := &h.ToolCalls[i]
		if c.Status == eventstore.ToolCallStarted {
			p.Call = at
			continue
		}
		p.Result, p.Status, p.Error = at, toolStatus(c.Status), c.Error
		delete(open, key)
	}
	return h, nil
}

// lineageEvents reads ref's records up to upTo, a fork's prefix first.
func lineageEvents(ctx context.Context, src Source, ref eventstore.Reference, upTo uint64, chain []string) ([]event, error) {
	if slices.Contains(chain, ref.JournalID) {
		return nil, fmt.Errorf("%w: a fork cycle back to %s", ErrBrokenLink, ref.AgentExecutionID)
	}
	if len(chain) >= MaxDepth {
		return nil, fmt.Errorf("%w: more than %d forks deep at %s", ErrBrokenLink, MaxDepth, ref.AgentExecutionID)
	}
	own, err := readJournal(ctx, src, ref, upTo)
	if err != nil {
		return nil, err
	}
	if len(own) == 0 {
		return nil, fmt.Errorf("%s has no records", ref)
	}
	h, ok := own[0].rec.(*eventstore.Header)
	if !ok || h.ForkedFrom == nil {
		return own, nil
	}
	f := h.ForkedFrom
	parent, err := lookup(ctx, src, f.AgentExecutionID)
	if err != nil {
		return nil, fmt.Errorf("%w: fork %s: %w", ErrBrokenLink, ref.AgentExecutionID, err)
	}
	prefix, err := lineageEvents(ctx, src, parent, f.Sequence, append(slices.Clip(chain), ref.JournalID))
	if err != nil {
		return nil, err
	}
	if last := prefix[len(prefix)-1]; last.rec.RecordBase().Sequence != f.Sequence || last.id != f.EventID {
		return nil, fmt.Errorf("%w: fork %s pins %s at %s sequence %d, which the parent does not hold", ErrBrokenLink, ref.AgentExecutionID, f.EventID, f.AgentExecutionID, f.Sequence)
	}
	return append(prefix, own...), nil
}

// Snapshot is a snapshot of a resource, as a snapshot.created record made
// it: its ref and commit, the execution that took it and its record.
type Snapshot struct {
	Ref         string    `json:"ref"`
	Commit      string    `json:"commit"`
	Resource    string    `json:"resource"`
	ExecutionID string    `json:"executionId"`
	EventID     string    `json:"eventId"`
	At          time.Time `json:"at"`
}

// SnapshotsOf returns the snapshots of a resource (a working directory's
// path) taken at or before t, newest first: the first is the resource as
// it was at t. A zero t means now.
func (g *Graph) SnapshotsOf(resource string, t time.Time) []Snapshot {
	out := []Snapshot{}
	res := ResourceNodeID(resource)
	for _, e := range g.Edges {
		if e.Kind != SnapshotOf || e.To != res {
			continue
		}
		n, ok := g.Node(e.From)
		if !ok || (!t.IsZero() && n.At.After(t)) {
			continue
		}
		out = append(out, Snapshot{Ref: n.Attrs["ref"], Commit: n.Attrs["commit"], Resource: resource, ExecutionID: n.ExecutionID, EventID: e.Attrs["event"], At: n.At})
	}
	slices.SortStableFunc(out, func(a, b Snapshot) int { return b.At.Compare(a.At) })
	return out
}

// Origin is where a record was first written: the execution whose journal
// holds it. A fork that inherits the record does not hold it.
type Origin struct {
	EventID     string          `json:"eventId"`
	ExecutionID string          `json:"executionId"`
	JournalID   string          `json:"journalId"`
	Sequence    uint64          `json:"sequence"`
	Record      eventstore.Kind `json:"record"`
	EventKind   EventKind       `json:"eventKind,omitempty"`
	At          time.Time       `json:"at"`
}

// CheckEventID reports whether s is an event id, saying what is accepted.
func CheckEventID(s string) error {
	h, ok := strings.CutPrefix(s, eventstore.EventIDPrefix)
	bad := !ok || len(h) != 2*sha256.Size
	for _, c := range []byte(h) {
		bad = bad || !('0' <= c && c <= '9' || 'a' <= c && c <= 'f')
	}
	if bad {
		if len(s) > 80 {
			s = s[:80] + "…"
		}
		return fmt.Errorf("%w: %q (want sha256: and 64 lowercase hex digits)", ErrBadEventID, s)
	}
	return nil
}

// FindOrigin finds the execution a record was first written in. An event
// id covers the record's journal and sequence, so exactly one journal holds
// it. Within, when given, narrows the search to that execution's lineage
// (its ancestors' prefixes and its own records), which is where a record
// it shows lies; otherwise every journal is read.
func FindOrigin(ctx context.Context, src Source, eventID string, within string) (Origin, error) {
	if err := CheckEventID(eventID); err != nil {
		return Origin{}, err
	}
	if within != "" {
		ref, err := lookup(ctx, src, within)
		if err != nil {
			return Origin{}, err
		}
		events, err := lineageEvents(ctx, src, ref, math.MaxUint64, nil)
		if err != nil {
			return Origin{}, err
		}
		for _, e := range events {
			if e.id == eventID {
				return originOf(e), nil
			}
		}
		return Origin{}, fmt.Errorf("%w: no record of %s or its ancestors has event id %s", ErrUnknownEvent, within, eventID)
	}
	refs, err := resolve(ctx, src, nil)
	if err != nil {
		return Origin{}, err
	}
	for _, ref := range refs {
		events, err := readJournal(ctx, src, ref, math.MaxUint64)
		if err != nil {
			return Origin{}, err
		}
		for _, e := range events {
			if e.id == eventID {
				return originOf(e), nil
			}
		}
	}
	return Origin{}, fmt.Errorf("%w: no record of any journal has event id %s", ErrUnknownEvent, eventID)
}

func originOf(e event) Origin {
	b := e.rec.RecordBase()
	return Origin{EventID: e.id, ExecutionID: b.AgentExecutionID, JournalID: b.JournalID, Sequence: b.Sequence,
		Record: e.rec.Kind(), EventKind: EventKindOf(e.rec), At: b.OccurredAt}
}

// Lineage is an execution's place among its relatives: the chain up, the
// tree below it, and the whole tree from the topmost ancestor.
type Lineage struct {
	ExecutionID string    `json:"executionId"`
	Ancestors   []Step    `json:"ancestors"`
	Descendants *TreeNode `json:"descendants"`
	Root        string    `json:"root"`
	Tree        *TreeNode `json:"tree"`
}

// Family answers an execution's ancestry and descendants from the source
// and an index of every header.
func Family(ctx context.Context, src Source, idx *Index, executionID string) (*Lineage, error) {
	anc, err := Ancestry(ctx, src, executionID)
	if err != nil {
		return nil, err
	}
	root := executionID
	if len(anc) > 0 {
		root = anc[len(anc)-1].ExecutionID
	}
	return &Lineage{ExecutionID: executionID, Ancestors: anc, Descendants: idx.Tree(executionID, executionID), Root: root, Tree: idx.Tree(root, executionID)}, nil
}
