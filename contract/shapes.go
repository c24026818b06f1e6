package contract

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/textclip"
)

// AgentRun is 004's AgentRun: one execution. 004 fixes only its status
// vocabulary; the other fields are this product's, named in its style.
type AgentRun struct {
	RunID     string               `json:"runId"`
	SessionID string               `json:"sessionId"`
	TaskID    string               `json:"taskId"`
	AgentID   string               `json:"agentId"`
	Status    eventstore.RunStatus `json:"status"`
	// Lifecycle and Attention are the execution's own, which Status maps.
	Lifecycle eventstore.Lifecycle `json:"lifecycle"`
	Attention eventstore.Attention `json:"attention"`
	StartedAt time.Time            `json:"startedAt"`
	UpdatedAt time.Time            `json:"updatedAt"`
	EndedAt   *time.Time           `json:"endedAt,omitempty"`
	// Resumes and ForkedFrom name the run this one resumes or forks.
	Resumes    string `json:"resumes,omitempty"`
	ForkedFrom string `json:"forkedFrom,omitempty"`
	// Interruption is why the run was cut short, if it was.
	Interruption    string                      `json:"interruption,omitempty"`
	DispatchContext *eventstore.DispatchContext `json:"dispatchContext,omitempty"`
}

// AgentSession is 004's AgentSession: the runs linked by resume.
type AgentSession struct {
	SessionID       string                      `json:"sessionId"`
	ProductID       string                      `json:"productId"`
	UserID          string                      `json:"userId"`
	Status          SessionStatus               `json:"status"`
	StartedAt       time.Time                   `json:"startedAt"`
	UpdatedAt       time.Time                   `json:"updatedAt"`
	Resumable       bool                        `json:"resumable"`
	CurrentTaskID   *string                     `json:"currentTaskId"`
	MemoryRefs      []string                    `json:"memoryRefs"`
	ArtifactRefs    []string                    `json:"artifactRefs"`
	ApprovalRefs    []string                    `json:"approvalRefs"`
	DispatchContext *eventstore.DispatchContext `json:"dispatchContext"`
	RunIDs          []string                    `json:"runIds"`
	AgentID         string                      `json:"agentId"`
	OwnerEntity     eventstore.OwnerEntity      `json:"ownerEntity"`
	OwnerID         string                      `json:"ownerId"`
	// ParentSessionID is the session of the run the session's first run
	// forks, when it is a fork.
	ParentSessionID string `json:"parentSessionId,omitempty"`
}

// SessionStatus is 004's AgentSession status.
type SessionStatus string

const (
	SessionActive          SessionStatus = "active"
	SessionPaused          SessionStatus = "paused"
	SessionWaitingApproval SessionStatus = "waiting-approval"
	SessionCompleted       SessionStatus = "completed"
	SessionFailed          SessionStatus = "failed"
	SessionCancelled       SessionStatus = "cancelled"
)

// SessionStatuses lists the session statuses.
var SessionStatuses = []SessionStatus{SessionActive, SessionPaused, SessionWaitingApproval, SessionCompleted, SessionFailed, SessionCancelled}

// AgentTask is 004's AgentTask: the owner's Task when the owner is a Task,
// else the run's launch intent.
type AgentTask struct {
	TaskID    string    `json:"taskId"`
	SessionID string    `json:"sessionId"`
	Title     string    `json:"title"`
	Intent    string    `json:"intent"`
	Status    string    `json:"status"`
	Priority  string    `json:"priority,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// RunIDs are the runs that worked on it.
	RunIDs []string `json:"runIds"`
}

// AgentCheckpoint is 004's AgentCheckpoint, from a checkpoint.created
// record, with where it was recorded.
type AgentCheckpoint struct {
	CheckpointID    string                       `json:"checkpointId"`
	SessionID       string                       `json:"sessionId"`
	RunID           string                       `json:"runId"`
	ProductID       string                       `json:"productId"`
	UserID          string                       `json:"userId"`
	CreatedAt       time.Time                    `json:"createdAt"`
	StatusAtCapture eventstore.RunStatus         `json:"statusAtCapture"`
	CurrentTaskID   *string                      `json:"currentTaskId"`
	TodoIDs         []string                     `json:"todoIds"`
	ArtifactRefs    []string                     `json:"artifactRefs"`
	MemoryRefs      []string                     `json:"memoryRefs"`
	ApprovalRefs    []string                     `json:"approvalRefs"`
	DispatchContext *eventstore.DispatchContext  `json:"dispatchContext"`
	ResumeToken     *string                      `json:"resumeToken"`
	StateSummary    eventstore.CheckpointSummary `json:"stateSummary"`
	Trigger         eventstore.CheckpointTrigger `json:"trigger"`
	// Source is who asked for it: operator, daemon, owner or system (a
	// checkpoint.created record), or agent (its checkpoint signal).
	Source string `json:"source"`
	// Sequence is the checkpoint record's; AtSequence the last record it
	// captured.
	Sequence   uint64 `json:"sequence"`
	AtSequence uint64 `json:"atSequence"`
}

// SourceAgent is the source of a checkpoint the agent asked for.
const SourceAgent = "agent"

// ProductID is this product's id in the contract's productId fields, for a
// run whose dispatch context names no originating product.
const ProductID = "agentjournal"

// Status maps the run's lifecycle and attention onto 004's AgentRun
// status (docs/contract.md has the table):
//
//	starting, dispatched queued or scheduled   queued
//	starting otherwise                          running
//	running, awaiting-operator, open request    waiting-approval
//	running, awaiting-operator, no request      paused (turn over, waiting for a message)
//	running, blocked                            paused
//	running otherwise                           running
//	completed / failed / cancelled              the same
//	terminated, interrupted by crash,           failed
//	  system_restart or timeout
//	terminated otherwise (a stop, a shutdown)   cancelled
func (r *Run) Status() eventstore.RunStatus {
	switch r.Lifecycle {
	case eventstore.LifecycleStarting, "":
		if d := r.Dispatch; d != nil && (d.DispatchMode == eventstore.DispatchQueued || d.DispatchMode == eventstore.DispatchScheduled) {
			return eventstore.RunQueued
		}
		return eventstore.RunRunning
	case eventstore.LifecycleRunning:
		switch {
		case r.Attention == eventstore.AttentionAwaitingOperator && r.OpenRequest != "":
			return eventstore.RunWaitingApproval
		case r.Attention == eventstore.AttentionAwaitingOperator, r.Attention == eventstore.AttentionBlocked:
			return eventstore.RunPaused
		}
		return eventstore.RunRunning
	case eventstore.LifecycleCompleted:
		return eventstore.RunCompleted
	case eventstore.LifecycleFailed:
		return eventstore.RunFailed
	case eventstore.LifecycleTerminated:
		// Killed: by the operator's stop or a clean shutdown it was
		// cancelled; cut short by a crash, a restart or its time limit
		// it failed.
		switch eventstore.InterruptionReason(r.Interruption) {
		case eventstore.InterruptCanceled, eventstore.InterruptShutdown, "":
			return eventstore.RunCancelled
		}
		return eventstore.RunFailed
	}
	return eventstore.RunCancelled
}

func (r *Run) productID() string {
	if r.Dispatch != nil && r.Dispatch.OriginProductID != "" {
		return r.Dispatch.OriginProductID
	}
	return ProductID
}

// userID is the run's owner, the user of the contract's shapes: the
// Entity that launched it, as entity/id.
func (r *Run) userID() string { return string(r.OwnerEntity) + "/" + r.OwnerID }

// TaskID is the run's task: the owner's id when the owner is a Task,
// else the run's own launch intent, named after the run.
func (r *Run) TaskID() string {
	if r.OwnerEntity == eventstore.OwnerTask {
		return r.OwnerID
	}
	return "intent-" + r.RunID
}

// AgentRun is the run's AgentRun.
func (r *Run) AgentRun() AgentRun {
	return AgentRun{RunID: r.RunID, SessionID: r.SessionID, TaskID: r.TaskID(), AgentID: r.AgentID, Status: r.Status(),
		Lifecycle: r.Lifecycle, Attention: r.Attention, StartedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, EndedAt: r.EndedAt,
		Resumes: r.Resumes, ForkedFrom: r.ForkedFrom, Interruption: r.Interruption, DispatchContext: r.Dispatch}
}

// Resumable says whether a resume of the run can really be started: its
// agent resumes its own session natively and the run captured the
// session's id, or the journal holds a conversation to retell.
func (r *Run) Resumable(nativeResume bool) bool {
	return (nativeResume && r.ResumeToken != "") || r.Conversation > 0
}

// Session builds the AgentSession of runs, one session's runs in the order
// they ran (a resume after the run it resumes). nativeResume says whether
// an agent resumes natively; parentSession is the session of the run the
// first run forks, "" when it is no fork.
func Session(runs []*Run, nativeResume func(agent string) bool, parentSession string) AgentSession {
	first, last := runs[0], runs[len(runs)-1]
	s := AgentSession{SessionID: first.SessionID, ProductID: first.productID(), UserID: first.userID(),
		StartedAt: first.CreatedAt, MemoryRefs: []string{}, ArtifactRefs: []string{}, ApprovalRefs: []string{},
		DispatchContext: first.Dispatch, AgentID: last.AgentID, OwnerEntity: first.OwnerEntity, OwnerID: first.OwnerID,
		ParentSessionID: parentSession}
	seen := map[string]bool{}
	for _, r := range runs {
		s.RunIDs = append(s.RunIDs, r.RunID)
		if r.UpdatedAt.After(s.UpdatedAt) {
			s.UpdatedAt = r.UpdatedAt
		}
		for _, a := range r.Artifacts {
			if !seen[a] {
				seen[a] = true
				s.ArtifactRefs = append(s.ArtifactRefs, a)
			}
		}
		for _, a := range r.Approvals {
			s.ApprovalRefs = append(s.ApprovalRefs, a.ApprovalID)
		}
	}
	s.Status = sessionStatus(last.Status())
	s.Resumable = last.Resumable(nativeResume(last.AgentID))
	if !last.Status().Final() {
		task := last.TaskID()
		s.CurrentTaskID = &task
	}
	return s
}

func sessionStatus(st eventstore.RunStatus) SessionStatus {
	switch st {
	case eventstore.RunPaused:
		return SessionPaused
	case eventstore.RunWaitingApproval:
		return SessionWaitingApproval
	case eventstore.RunCompleted:
		return SessionCompleted
	case eventstore.RunFailed:
		return SessionFailed
	case eventstore.RunCancelled:
		return SessionCancelled
	}
	return SessionActive
}

// Tasks builds the AgentTasks of one session's runs: runs of one Task
// share it; every other run has a task of its own intent.
func Tasks(runs []*Run) []AgentTask {
	var out []AgentTask
	index := map[string]int{}
	for _, r := range runs {
		id := r.TaskID()
		i, ok := index[id]
		if !ok {
			title, _, _ := strings.Cut(strings.TrimSpace(r.Intent), "\n")
			if title == "" {
				title = "run " + r.RunID
			}
			index[id] = len(out)
			out = append(out, AgentTask{TaskID: id, SessionID: r.SessionID, Title: textclip.Bytes(title, 120), Intent: r.Intent,
				CreatedAt: r.CreatedAt})
			i = len(out) - 1
		}
		t := &out[i]
		t.RunIDs = append(t.RunIDs, r.RunID)
		t.UpdatedAt = r.UpdatedAt
		t.Status = taskStatus(r.Status())
	}
	return out
}

// taskStatus is a task's status from its latest run: 004's AgentTask has
// blocked where AgentRun has paused and waiting-approval.
func taskStatus(st eventstore.RunStatus) string {
	switch st {
	case eventstore.RunPaused, eventstore.RunWaitingApproval:
		return "blocked"
	}
	return string(st)
}

func checkpointOf(r *Run, c *eventstore.CheckpointCreated) AgentCheckpoint {
	cp := AgentCheckpoint{CheckpointID: c.CheckpointID, SessionID: r.SessionID, RunID: r.RunID, ProductID: r.productID(),
		UserID: r.userID(), CreatedAt: c.OccurredAt, StatusAtCapture: c.StatusAtCapture,
		TodoIDs: nonNil(c.TodoIDs), ArtifactRefs: nonNil(c.ArtifactRefs), MemoryRefs: nonNil(c.MemoryRefs), ApprovalRefs: nonNil(c.ApprovalRefs),
		DispatchContext: r.Dispatch, StateSummary: c.StateSummary, Trigger: c.Trigger, Source: string(c.Source),
		Sequence: c.Sequence, AtSequence: c.AtSequence}
	if c.CurrentTaskID != "" {
		id := c.CurrentTaskID
		cp.CurrentTaskID = &id
	}
	if c.ResumeToken != "" {
		tok := c.ResumeToken
		cp.ResumeToken = &tok
	}
	return cp
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}

// Capture is the checkpoint of the run as folded so far, for the runtime
// to append: what a resume needs to go on without re-deriving the intent.
func (r *Run) Capture(id string, trigger eventstore.CheckpointTrigger, source eventstore.MessageSource, title, summary string) *eventstore.CheckpointCreated {
	c := &eventstore.CheckpointCreated{CheckpointID: id, Trigger: trigger, Source: source, AtSequence: r.LastSequence,
		StatusAtCapture: r.Status(), ResumeToken: r.ResumeToken,
		TodoIDs: []string{}, ArtifactRefs: lastN(r.Artifacts), MemoryRefs: []string{}, ApprovalRefs: []string{}}
	if !c.StatusAtCapture.Final() {
		c.CurrentTaskID = r.TaskID()
	}
	for _, t := range r.Todos {
		c.TodoIDs = append(c.TodoIDs, t.TodoID)
	}
	c.TodoIDs = lastN(c.TodoIDs)
	for _, a := range r.Approvals {
		c.ApprovalRefs = append(c.ApprovalRefs, a.ApprovalID)
	}
	c.ApprovalRefs = lastN(c.ApprovalRefs)
	if title == "" {
		title, _, _ = strings.Cut(strings.TrimSpace(r.Intent), "\n")
		if title == "" {
			title = "run " + r.RunID
		}
	}
	if summary == "" {
		summary = r.summary()
	}
	c.StateSummary = eventstore.CheckpointSummary{Title: textclip.Bytes(title, 200), Summary: textclip.Bytes(summary, 2000), LastActionAt: r.LastActionAt}
	return c
}

// lastN keeps the newest MaxCheckpointRefs entries of refs.
func lastN(refs []string) []string {
	if len(refs) > eventstore.MaxCheckpointRefs {
		refs = refs[len(refs)-eventstore.MaxCheckpointRefs:]
	}
	return slices.Clone(refs)
}

// summary says, in a line, where the run stands.
func (r *Run) summary() string {
	done, open := 0, 0
	for _, t := range r.Todos {
		switch t.Status {
		case eventstore.PlanItemDone:
			done++
		case eventstore.PlanItemOpen, eventstore.PlanItemInProgress:
			open++
		}
	}
	pending := 0
	for _, a := range r.Approvals {
		if a.Status == ApprovalPending {
			pending++
		}
	}
	var b strings.Builder
	b.WriteString(string(r.Status()))
	b.WriteString(" after ")
	b.WriteString(plural(r.Turns, "turn"))
	if len(r.Todos) > 0 {
		b.WriteString("; todos: ")
		b.WriteString(plural(done, "done") + ", " + plural(open, "open"))
	}
	if pending > 0 {
		b.WriteString("; " + plural(pending, "approval") + " pending")
	}
	return b.String()
}

func plural(n int, what string) string {
	if n == 1 || what == "done" || what == "open" {
		return strconv.Itoa(n) + " " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
