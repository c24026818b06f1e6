package contract

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Run is the contract's fold of one execution's journal: what its read
// models need, kept up to date record by record, so the projection stores
// it beside the execution's state and a reader folds a journal the same
// way. It is plain data (JSON) but for its indexes, which Apply rebuilds
// when it needs them.
type Run struct {
	RunID       string                 `json:"runId"`
	SessionID   string                 `json:"sessionId"`
	AgentID     string                 `json:"agentId"`
	OwnerEntity eventstore.OwnerEntity `json:"ownerEntity"`
	OwnerID     string                 `json:"ownerId"`
	// Resumes and ForkedFrom are the header's links: the run resumed, the
	// run forked.
	Resumes    string `json:"resumes,omitempty"`
	ForkedFrom string `json:"forkedFrom,omitempty"`
	// Dispatch is the header's dispatch context, as recorded.
	Dispatch *eventstore.DispatchContext `json:"dispatch,omitempty"`

	Lifecycle eventstore.Lifecycle `json:"lifecycle"`
	Attention eventstore.Attention `json:"attention"`
	// OpenRequest is the input request the run waits on, if any.
	OpenRequest string `json:"openRequest,omitempty"`
	// Interruption is the cause of an interruption record, if any.
	Interruption string `json:"interruption,omitempty"`

	// Intent is the run's first prompt: the launch intent.
	Intent string `json:"intent,omitempty"`
	// ResumeToken is the agent CLI's own session id, the last one its
	// output named: what a native resume continues.
	ResumeToken string `json:"resumeToken,omitempty"`
	// Turns counts the turns ended; Conversation the prompts, answers and
	// agent messages (what a retold resume has to tell).
	Turns        int `json:"turns,omitempty"`
	Conversation int `json:"conversation,omitempty"`

	CreatedAt    time.Time  `json:"createdAt"`
	UpdatedAt    time.Time  `json:"updatedAt"`
	EndedAt      *time.Time `json:"endedAt,omitempty"`
	LastActionAt *time.Time `json:"lastActionAt,omitempty"`
	LastSequence uint64     `json:"lastSequence"`

	Todos       []AgentTodo               `json:"todos,omitempty"`
	Approvals   []AgentApprovalCheckpoint `json:"approvals,omitempty"`
	Artifacts   []string                  `json:"artifacts,omitempty"`
	Checkpoints []AgentCheckpoint         `json:"checkpoints,omitempty"`

	todoIndex, approvalIndex map[string]int
	artifactSet              map[string]bool
	// changes are the list items changed since ResetChanges, so storage
	// writes only those.
	changes []Change
}

// Part names one list of a Run. Persisted (the projection's keys): never
// change a value.
type Part byte

const (
	PartTodo       Part = 't'
	PartApproval   Part = 'a'
	PartArtifact   Part = 'f'
	PartCheckpoint Part = 'c'
)

// Change names one item of a Run's lists that was added or changed.
type Change struct {
	Part  Part
	Index int
}

func (r *Run) changed(p Part, i int) { r.changes = append(r.changes, Change{p, i}) }

// Changes lists the items added or changed since the last ResetChanges,
// in the order they changed; an item changed twice is listed twice.
func (r *Run) Changes() []Change { return r.changes }

// ResetChanges forgets the changes: storage has written them.
func (r *Run) ResetChanges() { r.changes = r.changes[:0] }

// Head is the Run without its lists: the part storage rewrites whenever
// the run changes, while the items are written one by one.
func (r *Run) Head() *Run {
	h := *r
	h.Todos, h.Approvals, h.Artifacts, h.Checkpoints = nil, nil, nil, nil
	h.todoIndex, h.approvalIndex, h.artifactSet, h.changes = nil, nil, nil, nil
	return &h
}

// Item is the item a change names, to be stored.
func (r *Run) Item(c Change) any {
	switch c.Part {
	case PartTodo:
		return &r.Todos[c.Index]
	case PartApproval:
		return &r.Approvals[c.Index]
	case PartArtifact:
		return r.Artifacts[c.Index]
	case PartCheckpoint:
		return &r.Checkpoints[c.Index]
	}
	return nil
}

// LoadItem appends a stored item to its list: storage reads a run back as
// its head, then each list's items in index order.
func (r *Run) LoadItem(p Part, data []byte) error {
	switch p {
	case PartTodo:
		return appendDecoded(&r.Todos, data)
	case PartApproval:
		if err := appendDecoded(&r.Approvals, data); err != nil {
			return err
		}
		r.changed(PartApproval, len(r.Approvals)-1)
		return nil
	case PartArtifact:
		return appendDecoded(&r.Artifacts, data)
	case PartCheckpoint:
		return appendDecoded(&r.Checkpoints, data)
	}
	return fmt.Errorf("contract: unknown run part %q", p)
}

// appendDecoded decodes one stored item and appends it to its list.
func appendDecoded[T any](list *[]T, data []byte) error {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*list = append(*list, v)
	return nil
}

// Fold folds recs, one execution's journal in order, into a Run.
func Fold(recs []eventstore.Record) *Run {
	r := &Run{}
	for _, rec := range recs {
		r.Apply(rec)
	}
	return r
}

// Artifact reference prefixes: a workspace snapshot, a file the agent's
// tools touched.
const (
	ArtifactSnapshot = "snapshot:"
	ArtifactFile     = "file:"
)

// Apply folds one record of the run's journal. Records of another
// journal, and records before a header, are ignored.
func (r *Run) Apply(rec eventstore.Record) {
	b := rec.RecordBase()
	if h, ok := rec.(*eventstore.Header); ok {
		r.header(h)
		return
	}
	if r.RunID == "" || b.AgentExecutionID != r.RunID || b.Sequence <= r.LastSequence {
		return
	}
	r.LastSequence = b.Sequence
	if b.OccurredAt.After(r.UpdatedAt) {
		r.UpdatedAt = b.OccurredAt
	}
	switch v := rec.(type) {
	case *eventstore.MessageAccepted:
		r.message(v)
	case *eventstore.Observation:
		r.observation(v)
	case *eventstore.StateChanged:
		r.stateChanged(v)
	case *eventstore.ActivityUpdated:
		r.action(v.OccurredAt)
		if t := v.CurrentTarget; t != nil && t.Kind == eventstore.TargetFile && t.Path != "" {
			r.addArtifact(ArtifactFile + t.Path)
		}
	case *eventstore.SnapshotCreated:
		r.addArtifact(ArtifactSnapshot + v.Ref + "@" + v.Commit)
	case *eventstore.Interruption:
		r.Interruption = string(v.Reason)
	case *eventstore.CheckpointCreated:
		r.Checkpoints = append(r.Checkpoints, checkpointOf(r, v))
		r.changed(PartCheckpoint, len(r.Checkpoints)-1)
	}
}

func (r *Run) header(h *eventstore.Header) {
	if r.RunID != "" {
		return
	}
	r.RunID, r.SessionID, r.AgentID = h.AgentExecutionID, h.Session(), h.AgentID
	r.OwnerEntity, r.OwnerID = h.Scope, h.OwnerID
	if h.Resumes != nil {
		r.Resumes = h.Resumes.AgentExecutionID
	}
	if h.ForkedFrom != nil {
		r.ForkedFrom = h.ForkedFrom.AgentExecutionID
	}
	r.Dispatch = h.DispatchContext
	r.Lifecycle, r.Attention = eventstore.LifecycleStarting, eventstore.AttentionNone
	r.CreatedAt, r.UpdatedAt, r.LastSequence = h.OccurredAt, h.OccurredAt, h.Sequence
}

func (r *Run) action(at time.Time) {
	if r.LastActionAt == nil || at.After(*r.LastActionAt) {
		r.LastActionAt = &at
	}
}

func (r *Run) addArtifact(ref string) {
	if r.artifactSet == nil {
		r.artifactSet = make(map[string]bool, len(r.Artifacts))
		for _, a := range r.Artifacts {
			r.artifactSet[a] = true
		}
	}
	if !r.artifactSet[ref] {
		r.artifactSet[ref] = true
		r.Artifacts = append(r.Artifacts, ref)
		r.changed(PartArtifact, len(r.Artifacts)-1)
	}
}

func (r *Run) message(m *eventstore.MessageAccepted) {
	switch m.MessageType {
	case "prompt":
		r.Conversation++
		if r.Intent == "" {
			r.Intent, _ = m.Text()
		}
	case "answer":
		r.Conversation++
		r.answer(m)
	}
}

func (r *Run) observation(o *eventstore.Observation) {
	if n := o.Native; n != nil && n.SessionID != "" {
		r.ResumeToken = n.SessionID
	}
	if o.Signal == nil {
		return
	}
	r.action(o.OccurredAt)
	switch p := o.Signal.Payload.(type) {
	case *eventstore.PlanSignal:
		r.plan(o, p)
	case *eventstore.NeedsInputSignal:
		r.request(o, p)
	case *eventstore.MessageSignal:
		if p.Text != "" {
			r.Conversation++
		}
	case *eventstore.CheckpointSignal:
		// The agent's checkpoint is its observation: the run is captured
		// as folded up to it, so a rebuild captures the same.
		c := r.Capture(o.ObservationID, eventstore.CheckpointRequest, "", p.Title, p.Summary)
		c.Base = o.Base
		cp := checkpointOf(r, c)
		cp.Source = SourceAgent
		r.Checkpoints = append(r.Checkpoints, cp)
		r.changed(PartCheckpoint, len(r.Checkpoints)-1)
	}
}

func (r *Run) plan(o *eventstore.Observation, p *eventstore.PlanSignal) {
	if r.todoIndex == nil {
		r.todoIndex = make(map[string]int, len(r.Todos))
		for i, t := range r.Todos {
			r.todoIndex[t.TodoID] = i
		}
	}
	listed := make(map[string]bool, len(p.Items))
	for _, it := range p.Items {
		key := it.ID
		if key == "" {
			key = it.Text
		}
		listed[key] = true
		ch := TodoChange{Status: it.Status, Text: it.Text, Sequence: o.Sequence, RecordID: o.RecordID, At: o.OccurredAt}
		i, seen := r.todoIndex[key]
		if !seen {
			r.todoIndex[key] = len(r.Todos)
			r.Todos = append(r.Todos, AgentTodo{TodoID: key, SessionID: r.SessionID, Text: it.Text, Status: it.Status,
				CreatedAt: o.OccurredAt, UpdatedAt: o.OccurredAt, History: []TodoChange{ch}})
			r.changed(PartTodo, len(r.Todos)-1)
			continue
		}
		t := &r.Todos[i]
		if t.Status == it.Status && t.Text == it.Text {
			continue
		}
		t.Status, t.Text, t.UpdatedAt = it.Status, it.Text, o.OccurredAt
		t.History = append(t.History, ch)
		r.changed(PartTodo, i)
	}
	// A plan is the whole list each time: a todo it no longer lists was
	// taken off it, and is dropped (004's status for it), so that the
	// todos agree with the plan the execution shows. One done before
	// stays done: it was carried out, whatever the list says now.
	for i := range r.Todos {
		t := &r.Todos[i]
		if listed[t.TodoID] || t.Status == eventstore.PlanItemDone || t.Status == eventstore.PlanItemDropped {
			continue
		}
		t.Status, t.UpdatedAt = eventstore.PlanItemDropped, o.OccurredAt
		t.History = append(t.History, TodoChange{Status: t.Status, Text: t.Text, Sequence: o.Sequence, RecordID: o.RecordID, At: o.OccurredAt})
		r.changed(PartTodo, i)
	}
}

func (r *Run) approvals() map[string]int {
	if r.approvalIndex == nil {
		r.approvalIndex = make(map[string]int, len(r.Approvals))
		for i, a := range r.Approvals {
			r.approvalIndex[a.ApprovalID] = i
		}
	}
	return r.approvalIndex
}

func (r *Run) request(o *eventstore.Observation, ni *eventstore.NeedsInputSignal) {
	idx := r.approvals()
	if ni.RequestID == "" {
		return
	}
	if _, dup := idx[ni.RequestID]; dup {
		return
	}
	kind := ni.Kind
	if kind == "" {
		kind = "question"
	}
	a := AgentApprovalCheckpoint{ApprovalID: ni.RequestID, RunID: r.RunID, SessionID: r.SessionID, AgentID: r.AgentID,
		Kind: kind, Question: ni.Question, Choices: ni.Choices, Status: ApprovalPending,
		RequestedAt: o.OccurredAt, RequestSequence: o.Sequence}
	if ni.Tool != nil {
		a.Tool = ni.Tool.Name
	}
	idx[ni.RequestID] = len(r.Approvals)
	r.Approvals = append(r.Approvals, a)
	r.changed(PartApproval, len(r.Approvals)-1)
}

func (r *Run) answer(m *eventstore.MessageAccepted) {
	p, err := m.DecodePayload()
	if err != nil {
		return
	}
	i, ok := r.approvals()[p.RequestID]
	if !ok || r.Approvals[i].Status != ApprovalPending {
		return
	}
	a := &r.Approvals[i]
	at := m.OccurredAt
	a.Answer, a.ResolvedBy, a.ResolvedAt, a.ResolvedSequence = p.Text, string(m.Source), &at, m.Sequence
	r.changed(PartApproval, i)
	a.Status = ApprovalAnswered
	if a.Kind == "permission" {
		a.Status = ApprovalApproved
		if strings.EqualFold(strings.TrimSpace(p.Text), "deny") {
			a.Status = ApprovalDenied
		}
	}
}

func (r *Run) stateChanged(v *eventstore.StateChanged) {
	if v.Lifecycle != "" {
		r.Lifecycle = v.Lifecycle
	}
	if v.Attention != "" {
		r.Attention = v.Attention
	}
	if v.CurrentInputRequestID.Set {
		r.OpenRequest = v.CurrentInputRequestID.ID
	}
	if v.RecordID == eventstore.RecordID(v.JournalID, eventstore.KindStateChanged, fmt.Sprintf("turn:%d:end", r.Turns+1)) {
		r.Turns++
	}
	if !v.Lifecycle.Final() {
		return
	}
	at := v.OccurredAt
	r.EndedAt, r.OpenRequest = &at, ""
	for i := range r.Approvals {
		if a := &r.Approvals[i]; a.Status == ApprovalPending {
			a.Status, a.ResolvedBy, a.ResolvedAt, a.ResolvedSequence = ApprovalClosed, "run-end", &at, v.Sequence
			r.changed(PartApproval, i)
		}
	}
}
