package runtime

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentjournal/agentjournal/contract"
	"github.com/agentjournal/agentjournal/eventstore"
)

// ErrBadCheckpoint is a checkpoint request refused for its input.
var ErrBadCheckpoint = errors.New("bad checkpoint request")

// CheckpointError is a checkpoint request refused for one of its fields.
type CheckpointError struct {
	Field string
	msg   string
}

func (e *CheckpointError) Error() string {
	return ErrBadCheckpoint.Error() + ": " + e.Field + ": " + e.msg
}
func (e *CheckpointError) Unwrap() error { return ErrBadCheckpoint }

// CheckpointRequest asks for a checkpoint of an execution (spec 004
// AgentCheckpoint): the run as it is now, appended to its journal.
type CheckpointRequest struct {
	Execution string
	// ID names the checkpoint; one is made up when empty. The same id
	// asked twice is one checkpoint (a retry), never two.
	ID string
	// Source is who asks: operator, daemon, owner or system.
	Source eventstore.MessageSource
	// Title and Summary are the checkpoint's stateSummary; when empty
	// they are read from the run (its intent, and where it stands).
	Title, Summary string
}

// checkpointIDPattern is what a checkpoint id may be: it shows in URLs,
// record ids and the console, so plain characters only.
var checkpointIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// Checkpoint limits.
const (
	MaxCheckpointTitle   = 200
	MaxCheckpointSummary = 2000
)

// checkpointTimeout bounds a checkpoint's read of the journal and append.
const checkpointTimeout = 30 * time.Second

// Checkpoint appends a checkpoint of the execution as its journal says it
// is now, and returns it as recorded. Any execution can be checkpointed,
// live or ended: a checkpoint only reads the journal and appends to it.
func (rt *Runtime) Checkpoint(ctx context.Context, req CheckpointRequest) (*eventstore.CheckpointCreated, error) {
	if req.Source == "" {
		req.Source = eventstore.SourceOperator
	}
	if req.ID != "" && !checkpointIDPattern.MatchString(req.ID) {
		return nil, &CheckpointError{Field: "id", msg: fmt.Sprintf("%q is not accepted (want 1 to 128 letters, digits, '.', '_', ':' or '-')", req.ID)}
	}
	if !isSource(req.Source) {
		return nil, &CheckpointError{Field: "source", msg: fmt.Sprintf("%q is not one of operator, daemon, owner, system", req.Source)}
	}
	if len(req.Title) > MaxCheckpointTitle {
		return nil, &CheckpointError{Field: "title", msg: fmt.Sprintf("%d bytes (want at most %d)", len(req.Title), MaxCheckpointTitle)}
	}
	if len(req.Summary) > MaxCheckpointSummary {
		return nil, &CheckpointError{Field: "summary", msg: fmt.Sprintf("%d bytes (want at most %d)", len(req.Summary), MaxCheckpointSummary)}
	}
	ref, err := rt.cfg.Store.Lookup(ctx, req.Execution)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", req.Execution, err)
	}
	id := req.ID
	if id == "" {
		id = "cp-" + randomHex(6)
	}
	return rt.checkpoint(ctx, ref, id, eventstore.CheckpointRequest, req.Source, strings.TrimSpace(req.Title), strings.TrimSpace(req.Summary))
}

func isSource(s eventstore.MessageSource) bool {
	switch s {
	case eventstore.SourceOperator, eventstore.SourceDaemon, eventstore.SourceOwner, eventstore.SourceSystem:
		return true
	}
	return false
}

// checkpoint folds the journal and appends its capture.
func (rt *Runtime) checkpoint(ctx context.Context, ref eventstore.Reference, id string, trigger eventstore.CheckpointTrigger,
	source eventstore.MessageSource, title, summary string) (*eventstore.CheckpointCreated, error) {
	return rt.checkpointFrom(ctx, &checkpointFold{}, ref, id, trigger, source, title, summary)
}

// checkpointFold is a journal folded for its checkpoints. A running
// execution keeps one, so that each turn's checkpoint reads only the
// records since the last: folding the whole journal at every turn's end
// made a long session's checkpoints cost the square of its length.
type checkpointFold struct {
	mu  sync.Mutex
	run *contract.Run
	// next is the sequence to read from; taken the checkpoints folded, by
	// id, so that one asked for again is handed back.
	next  uint64
	taken map[string]*eventstore.CheckpointCreated
}

// checkpointFrom folds the journal's records after those f holds and
// appends the capture, unless the checkpoint is in the journal already.
func (rt *Runtime) checkpointFrom(ctx context.Context, f *checkpointFold, ref eventstore.Reference, id string, trigger eventstore.CheckpointTrigger,
	source eventstore.MessageSource, title, summary string) (*eventstore.CheckpointCreated, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.run == nil {
		f.run, f.next, f.taken = &contract.Run{}, 1, map[string]*eventstore.CheckpointCreated{}
	}
	for e, err := range rt.cfg.Store.ReadJournal(ctx, ref, f.next) {
		if err != nil {
			// What was folded stays folded; the next call reads on.
			return nil, fmt.Errorf("checkpoint %s: read the journal: %w", ref.AgentExecutionID, err)
		}
		if c, ok := e.Record.(*eventstore.CheckpointCreated); ok {
			f.taken[c.CheckpointID] = c
		}
		f.run.Apply(e.Record)
		f.next = e.Record.RecordBase().Sequence + 1
	}
	// The fold is only read here: the list of changes it keeps for the
	// projection's storage would grow with every record.
	f.run.ResetChanges()
	if c, ok := f.taken[id]; ok {
		// Asked before: the same checkpoint, not a second one.
		return c, nil
	}
	c := f.run.Capture(id, trigger, source, title, summary)
	c.RecordID = eventstore.RecordID(ref.JournalID, eventstore.KindCheckpoint, eventstore.NaturalKey(c))
	e, err := rt.cfg.Store.Append(ctx, ref, c)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", ref.AgentExecutionID, err)
	}
	if got, ok := e.Record.(*eventstore.CheckpointCreated); ok {
		return got, nil
	}
	return c, nil
}

// checkpointTurn takes the checkpoint of a turn's end without holding up
// the reading of the agent's output.
func (rt *Runtime) checkpointTurn(p *process, turn int) {
	rt.wg.Add(1)
	p.turnCheckpoints.Add(1)
	go func() {
		defer rt.wg.Done()
		defer p.turnCheckpoints.Done()
		ctx, cancel := context.WithTimeout(context.Background(), checkpointTimeout)
		defer cancel()
		if _, err := rt.checkpointFrom(ctx, &p.checkpoints, p.ref, fmt.Sprintf("turn-%d", turn), eventstore.CheckpointTurnEnd, eventstore.SourceDaemon, "", ""); err != nil {
			rt.cfg.Logger.Error("record turn checkpoint", "execution", p.ref.AgentExecutionID, "turn", turn, "err", err)
		}
	}()
}
