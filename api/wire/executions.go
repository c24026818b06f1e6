package wire

import (
	"encoding/json"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

// Executions answers GET /v1/executions: the summaries, most recently
// active first.
type Executions struct {
	Executions []Summary `json:"executions"`
}

// Summary is the list view of an execution: the read model's row of it
// (projections.Summary is this type) and an item of GET /v1/executions.
type Summary struct {
	ID                    string                 `json:"id"`
	AgentID               string                 `json:"agentId"`
	OwnerEntity           eventstore.OwnerEntity `json:"ownerEntity"`
	OwnerID               string                 `json:"ownerId"`
	Lifecycle             eventstore.Lifecycle   `json:"lifecycle"`
	Attention             eventstore.Attention   `json:"attention"`
	Activity              eventstore.Activity    `json:"activity"`
	CurrentInputRequestID string                 `json:"currentInputRequestId,omitempty"`
	CreatedAt             time.Time              `json:"createdAt"`
	UpdatedAt             time.Time              `json:"updatedAt"`
	RecordCount           uint64                 `json:"recordCount"`
	LastSequence          uint64                 `json:"lastSequence"`
	// LatestActivity is the newest activity an activity.updated record
	// reported (State.Latest.Activity), "" if none did.
	LatestActivity eventstore.Activity `json:"latestActivity,omitempty"`
	// SessionID is the execution's session (State.SessionID).
	SessionID string `json:"sessionId,omitempty"`
	// Host is the fleet host that runs or ran it (State.Host).
	Host string `json:"host,omitempty"`
	// Question is the question of the open input request
	// (State.CurrentInputQuestion), "" when none is open.
	Question string `json:"question,omitempty"`
	// Prompt is the execution's first prompt on one line, clipped
	// (State.Prompt): its title in a list.
	Prompt string `json:"prompt,omitempty"`
	// Progress is the summary of the newest progress the agent reported
	// (State.Latest.Progress), "" if none did.
	Progress string `json:"progress,omitempty"`
}

// Execution is an execution as the API shows it: its projected state
// (without the timeline, which Timeline pages) and what the daemon knows
// live.
type Execution struct {
	execution.State
	Live Live `json:"live"`
}

// Live is what the daemon's runtime knows of an execution that the journal
// does not hold.
type Live struct {
	// Running reports a live process in this daemon.
	Running bool `json:"running"`
	// TerminalID is the terminal lane of a running interactive execution.
	TerminalID string `json:"terminalId,omitempty"`
}

// LaunchRequest is the body of POST /v1/executions.
type LaunchRequest struct {
	OwnerEntity eventstore.OwnerEntity `json:"ownerEntity"`
	OwnerID     string                 `json:"ownerId"`
	// Seed derives the execution id: one seed names one execution of an
	// owner, and launching it again is a conflict. Random when empty.
	Seed string `json:"seed,omitempty"`
	// Agent is the adapter: generic, claude-code, codex, copilot, ….
	Agent string `json:"agent"`
	// Command is the program and its arguments; required for generic.
	Command []string `json:"command,omitempty"`
	// Prompt is recorded as the first message and delivered the agent's
	// way.
	Prompt  string             `json:"prompt,omitempty"`
	Posture eventstore.Posture `json:"posture,omitempty"`
	// Shape is the session shape of claude-code, codex and copilot;
	// conversation when empty.
	Shape eventstore.SessionShape `json:"shape,omitempty"`
	// Dir is the agent's working directory, an absolute path on the
	// daemon's host; the daemon's own when empty.
	Dir string            `json:"dir,omitempty"`
	Env map[string]string `json:"env,omitempty"`
	// EnvProfile names an environment profile of the host that runs the
	// launch (serve --env-profile NAME=FILE), added to its environment
	// there: secrets that never leave that host.
	EnvProfile string `json:"envProfile,omitempty"`
	// Timeout is the run's time limit, a duration such as "90s", "30m"
	// or "2h" (at most 168h): when it passes the daemon stops the run and
	// journals an interruption with reason timeout. None when empty.
	Timeout string `json:"timeout,omitempty"`
	// DispatchContext says where the launch was asked for and how it
	// runs: dispatchMode queued or scheduled waits in the daemon's queue
	// (GET /v1/queue), lifecycle starting, until a slot is free and its
	// time has come. Nil runs it at once, as interactive.
	DispatchContext *eventstore.DispatchContext `json:"dispatchContext,omitempty"`
	// Placement says which hosts of the fleet may run it; nil lets the
	// daemon that takes the launch run it, or a host with room when it
	// has none.
	Placement *Placement `json:"placement,omitempty"`
	// Sandbox runs the agent under bubblewrap, or not; nil takes the
	// daemon's default (serve --sandbox).
	Sandbox *LaunchSandbox `json:"sandbox,omitempty"`
}

// LaunchSandbox is what a launch asks of the sandbox its agent runs in
// (docs/architecture.md, Sandboxed agents).
type LaunchSandbox struct {
	// Enabled runs the agent sandboxed; false opts out of the daemon's
	// default, refused by a daemon that requires the sandbox.
	Enabled bool `json:"enabled"`
	// Network is host (the default: the model's API, and loopback) or
	// none; empty takes the daemon's.
	Network string `json:"network,omitempty"`
	// Write are more absolute paths the agent may change, besides its
	// working directory and its CLI's state directories.
	Write []string `json:"write,omitempty"`
}

// Placement constrains where a launch runs in the fleet.
type Placement struct {
	// Host names the one host that may run it.
	Host string `json:"host,omitempty"`
	// On are labels (serve --label) the host must have, each key=value.
	On map[string]string `json:"on,omitempty"`
}

// ForkRequest is the body of POST /v1/executions/{id}/fork.
type ForkRequest struct {
	// At is the parent's journal sequence the fork branches after (1 or
	// more).
	At uint64 `json:"at"`
	// Workspace is how the fork gets its working directory: keep (the
	// default, the parent's), snapshot (a worktree at the newest snapshot
	// at or before At) or discard (a new empty directory).
	Workspace string `json:"workspace,omitempty"`
	// Prompt is the fork's first instruction. Required when the agent gets
	// its history retold (every agent but Claude Code).
	Prompt string `json:"prompt,omitempty"`
	Seed   string `json:"seed,omitempty"`
	// Env is added to the fork's environment: the parent's is not
	// journaled.
	Env map[string]string `json:"env,omitempty"`
	// ConfirmImported restates the command and directory of a parent
	// whose journal was imported from a file; without it, or when they
	// differ, such a fork is refused (409) with them in error.imported.
	ConfirmImported *ImportedCommand `json:"confirmImported,omitempty"`
}

// ResumeRequest is the body of POST /v1/executions/{id}/resume.
type ResumeRequest struct {
	Prompt string            `json:"prompt,omitempty"`
	Seed   string            `json:"seed,omitempty"`
	Env    map[string]string `json:"env,omitempty"`
	// ConfirmImported is ForkRequest's, for the resumed execution.
	ConfirmImported *ImportedCommand `json:"confirmImported,omitempty"`
}

// Launched answers a launch, a fork and a resume: the new execution's
// journal and its state, replayed from the journal.
type Launched struct {
	Reference eventstore.Reference `json:"reference"`
	State     Execution            `json:"state"`
}

// ScopedToken answers POST /v1/executions/{id}/token: the token scoped to
// one execution, what its agent gets at launch.
type ScopedToken struct {
	AgentExecutionID string `json:"agentExecutionId"`
	// Token is accepted as the bearer token for this execution's
	// observations and for MCP as its agent, and refused everywhere else.
	Token string `json:"token"`
	// Allows says, in words, what the token may do.
	Allows []string `json:"allows"`
}

// Message is the body of POST /v1/executions/{id}/messages.
type Message struct {
	// MessageID makes a retry safe: the same id gets the first
	// acknowledgement back and appends nothing. The daemon assigns one
	// when empty.
	MessageID string `json:"messageId,omitempty"`
	// Type is a message type the agent declares: prompt, answer, ….
	Type    string                   `json:"type"`
	Source  eventstore.MessageSource `json:"source,omitempty"`
	Payload json.RawMessage          `json:"payload,omitempty"`
}

// MessageAck answers a message: its journal sequence and its delivery. A
// message the agent did not get is recorded too, and answered with the
// delivery failed. The runtime's acknowledgement converts to it.
type MessageAck struct {
	MessageID string                       `json:"messageId"`
	Sequence  uint64                       `json:"sequence"`
	Delivery  eventstore.DeliveryStatus    `json:"delivery"`
	Transport eventstore.DeliveryTransport `json:"transport"`
	Reason    string                       `json:"reason,omitempty"`
	// Duplicate reports a message id recorded before: nothing was
	// appended and this is the first acknowledgement.
	Duplicate bool `json:"duplicate,omitempty"`
}

// Observation is the body of POST /v1/executions/{id}/observations: the
// fields of an observation.recorded record that a caller chooses. The
// journal fills the rest.
type Observation struct {
	// ObservationID makes a retry safe: the same id answers with the
	// original decision.
	ObservationID string                       `json:"observationId"`
	Source        eventstore.ObservationSource `json:"source"`
	Confidence    eventstore.Confidence        `json:"confidence"`
	Signal        *Signal                      `json:"signal,omitempty"`
	RawText       string                       `json:"rawText,omitempty"`
	// Payload is a JSON object.
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Signal is a surfaced signal: its type and its payload, a JSON object
// whose schema the type names (docs/records.md). The daemon decodes it as
// eventstore.Signal, strictly.
type Signal struct {
	Type    eventstore.SignalType `json:"type"`
	Payload json.RawMessage       `json:"payload"`
}

// ObservationAck answers an observation with the policy's decision.
type ObservationAck struct {
	ObservationID string `json:"observationId"`
	// Sequence is the observation's journal sequence (the first one's,
	// for a duplicate).
	Sequence uint64 `json:"sequence"`
	// Duplicate reports an id recorded before: nothing was appended and
	// Decision is the original one.
	Duplicate bool     `json:"duplicate"`
	Decision  Decision `json:"decision"`
}

// Decision is the policy's decision on an observation.
type Decision struct {
	DecisionID string                    `json:"decisionId"`
	Action     eventstore.DecisionAction `json:"action"`
	Reason     string                    `json:"reason,omitempty"`
	Sequence   uint64                    `json:"sequence"`
}

// Queue answers GET /v1/queue: the daemon's launches waiting to start.
type Queue struct {
	// Queued lists the waiting runs, the next one first.
	Queued []QueuedRun `json:"queued"`
	// MaxRunning is the daemon's limit of running agents, and Running
	// the executions live in it now.
	MaxRunning int `json:"maxRunning"`
	Running    int `json:"running"`
}

// QueuedRun is a queued or scheduled launch that has not started. The
// runtime's queue entry converts to it.
type QueuedRun struct {
	// Position is 1 for the run that starts next.
	Position         int                        `json:"position"`
	AgentExecutionID string                     `json:"agentExecutionId"`
	Journal          eventstore.Reference       `json:"journal"`
	Agent            string                     `json:"agent"`
	QueuedAt         time.Time                  `json:"queuedAt"`
	ScheduledFor     string                     `json:"scheduledFor,omitempty"`
	DispatchContext  eventstore.DispatchContext `json:"dispatchContext"`
}

// Timeline answers GET /v1/executions/{id}/timeline: a page of the
// timeline, newest first.
type Timeline struct {
	Items []execution.TimelineItem `json:"items"`
	// Next is the before of the following, older page; nil (null) on the
	// last page.
	Next *uint64 `json:"next"`
}

// Records answers GET /v1/executions/{id}/records: a page of the journal's
// records as stored, oldest first.
type Records struct {
	// Records are records in their stored form (docs/records.md), for
	// eventstore.Decode.
	Records []json.RawMessage `json:"records"`
	// Next is the fromSeq of the following page; nil (null) when the
	// journal has no more records now.
	Next *uint64 `json:"next"`
}

// Replay answers GET /v1/executions/{id}/replay: an execution as its
// journal held it up to a sequence.
type Replay struct {
	// ToSeq is the sequence of the last record folded: the toSeq asked
	// for, or the journal's last one when it ends before.
	ToSeq uint64 `json:"toSeq"`
	// State is the execution replayed from its first record to ToSeq,
	// with its whole timeline up to there, oldest first.
	State *execution.State `json:"state"`
	// Records are the last records folded, oldest first, with their log
	// offsets.
	Records []LogEntry `json:"records"`
}
