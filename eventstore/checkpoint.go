package eventstore

import (
	"fmt"
	"time"
)

// KindCheckpoint is the runtime contract's checkpoint (spec 004
// AgentCheckpoint). Persisted: never rename.
const KindCheckpoint Kind = "checkpoint.created"

// CheckpointTrigger says what made a checkpoint. Persisted.
type CheckpointTrigger string

const (
	// CheckpointTurnEnd: the runtime took it when a turn ended.
	CheckpointTurnEnd CheckpointTrigger = "turn-end"
	// CheckpointRequest: someone asked for it (Source says who).
	CheckpointRequest CheckpointTrigger = "request"
)

// CheckpointTriggers lists the accepted triggers.
var CheckpointTriggers = []CheckpointTrigger{CheckpointTurnEnd, CheckpointRequest}

// RunStatus is a run's status in the runtime contract's vocabulary (004
// AgentRun). Persisted in checkpoints as statusAtCapture.
type RunStatus string

const (
	RunQueued          RunStatus = "queued"
	RunRunning         RunStatus = "running"
	RunPaused          RunStatus = "paused"
	RunWaitingApproval RunStatus = "waiting-approval"
	RunCompleted       RunStatus = "completed"
	RunFailed          RunStatus = "failed"
	RunCancelled       RunStatus = "cancelled"
)

// RunStatuses lists the accepted run statuses.
var RunStatuses = []RunStatus{RunQueued, RunRunning, RunPaused, RunWaitingApproval, RunCompleted, RunFailed, RunCancelled}

// CheckpointSummary is a checkpoint's stateSummary (004).
type CheckpointSummary struct {
	Title   string `json:"title"`
	Summary string `json:"summary"`
	// LastActionAt is when the run last did something before the capture.
	LastActionAt *time.Time `json:"lastActionAt,omitempty"`
}

// CheckpointCreated is a checkpoint of the run as it was after the record
// AtSequence: enough to resume the work without re-deriving its intent.
// Checkpoints are appended, never rewritten; the newest is the one a
// resume reads. Every list is captured as it was, not a reference to state
// that may change later.
type CheckpointCreated struct {
	Base
	// CheckpointID is unique in the session: "turn-<n>" for a turn end,
	// the request's id otherwise.
	CheckpointID string            `json:"checkpointId"`
	Trigger      CheckpointTrigger `json:"trigger"`
	// Source is who asked for it: daemon for a turn end (the runtime
	// takes it); operator, daemon, owner or system for a request.
	Source MessageSource `json:"source"`
	// AtSequence is the journal's last record when it was captured.
	AtSequence      uint64            `json:"atSequence"`
	StatusAtCapture RunStatus         `json:"statusAtCapture"`
	CurrentTaskID   string            `json:"currentTaskId,omitempty"`
	TodoIDs         []string          `json:"todoIds"`
	ArtifactRefs    []string          `json:"artifactRefs"`
	MemoryRefs      []string          `json:"memoryRefs"`
	ApprovalRefs    []string          `json:"approvalRefs"`
	ResumeToken     string            `json:"resumeToken,omitempty"`
	StateSummary    CheckpointSummary `json:"stateSummary"`
}

func (*CheckpointCreated) Kind() Kind { return KindCheckpoint }

// checkpointKey is a checkpoint's natural key: its id.
func checkpointKey(r *CheckpointCreated) string { return "checkpoint/" + r.CheckpointID }

// MaxCheckpointRefs bounds each list of a checkpoint, so that one record
// stays far below the record size limit.
const MaxCheckpointRefs = 1000

func (r *CheckpointCreated) validate(p *problems) {
	p.required("checkpointId", r.CheckpointID != "")
	if r.CheckpointID != "" {
		if err := checkID(r.CheckpointID); err != nil {
			p.add("checkpointId", err.Error())
		}
	}
	enum(p, "trigger", r.Trigger, CheckpointTriggers)
	enum(p, "source", r.Source, messageSources)
	enum(p, "statusAtCapture", r.StatusAtCapture, RunStatuses)
	if r.AtSequence == 0 {
		p.add("atSequence", "required: the journal sequence the checkpoint was taken after (1 or more)")
	}
	p.required("stateSummary.title", r.StateSummary.Title != "")
	for _, l := range []struct {
		field string
		refs  []string
	}{{"todoIds", r.TodoIDs}, {"artifactRefs", r.ArtifactRefs}, {"memoryRefs", r.MemoryRefs}, {"approvalRefs", r.ApprovalRefs}} {
		if len(l.refs) > MaxCheckpointRefs {
			p.add(l.field, fmt.Sprintf("%d entries (want at most %d)", len(l.refs), MaxCheckpointRefs))
		}
	}
}

// Final reports whether the run has ended.
func (s RunStatus) Final() bool {
	return s == RunCompleted || s == RunFailed || s == RunCancelled
}
