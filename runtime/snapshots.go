package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/workspace"
)

// Diagnostic codes of workspace snapshots. Persisted in observations:
// never rename.
const (
	// CodeSnapshotsUnsupported: the working directory is not inside a git
	// work tree, so the execution has no snapshots; a fork of it can keep
	// its directory or discard it, not restore a snapshot. Recorded once,
	// at launch, as the observation SnapshotsUnsupportedID.
	CodeSnapshotsUnsupported = "snapshots-unsupported"
	// CodeSnapshotFailed: one snapshot could not be taken or recorded; the
	// execution goes on.
	CodeSnapshotFailed = "snapshot-failed"
)

// SnapshotsUnsupportedID is the observation id of the one
// CodeSnapshotsUnsupported diagnostic of a journal.
const SnapshotsUnsupportedID = "workspace-snapshots-unsupported"

// snapshotTimeout bounds one snapshot. The first snapshot of a large work
// tree hashes every untracked file; later ones hash only what changed
// (docs/architecture.md measures about 40 ms a turn on 10,000 files).
const snapshotTimeout = 2 * time.Minute

// headStore finds a journal's last sequence, after which a snapshot is
// taken. Both stores have it.
type headStore interface {
	Head(ctx context.Context, ref eventstore.Reference) (eventstore.Reference, error)
}

// snapshots takes one execution's workspace snapshots, one at a time, on a
// goroutine of its own, so that a turn end seen in the agent's output does
// not hold up the reading of that output while git runs.
type snapshots struct {
	mu      sync.Mutex
	idle    *sync.Cond
	running bool // a goroutine is taking snapshots
	again   bool // a boundary came while it was: take one more
	off     bool // not a git work tree, or the store cannot tell sequences
	// last is the sequence of the last snapshot.created: a boundary with
	// nothing recorded after it has nothing new to snapshot.
	last uint64
}

// startSnapshots takes the execution's first snapshot, before its agent
// starts, when snapshots are on. A directory outside a git work tree gets
// one CodeSnapshotsUnsupported diagnostic and no snapshots.
func (rt *Runtime) startSnapshots(p *process) {
	if !rt.cfg.Snapshots {
		return
	}
	s := &snapshots{}
	s.idle = sync.NewCond(&s.mu)
	p.snaps = s
	rt.snapshot(p, "start")
}

// snapshotLater takes a snapshot at a turn boundary without waiting for it:
// a boundary that comes while one is being taken is coalesced into one more.
func (rt *Runtime) snapshotLater(p *process, why string) {
	s := p.snaps
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off {
		return
	}
	if s.running {
		s.again = true
		return
	}
	s.running = true
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		for {
			rt.snapshot(p, why)
			s.mu.Lock()
			if !s.again {
				s.running = false
				s.idle.Broadcast()
				s.mu.Unlock()
				return
			}
			s.again = false
			s.mu.Unlock()
		}
	}()
}

// snapshotSettled waits for a snapshot being taken: the next turn starts
// only once the last boundary's files are captured.
func (rt *Runtime) snapshotSettled(p *process) {
	s := p.snaps
	if s == nil {
		return
	}
	s.mu.Lock()
	s.settle()
	s.mu.Unlock()
}

// snapshotNow waits for a snapshot being taken and takes the last one, at
// the end of the execution's process, before the end is recorded.
func (rt *Runtime) snapshotNow(p *process, why string) {
	s := p.snaps
	if s == nil {
		return
	}
	s.mu.Lock()
	s.settle()
	s.running = true
	s.mu.Unlock()
	rt.snapshot(p, why)
	s.mu.Lock()
	s.running = false
	s.idle.Broadcast()
	s.mu.Unlock()
}

// settle waits, with s.mu held, until no snapshot is being taken.
func (s *snapshots) settle() {
	for s.running {
		s.idle.Wait()
	}
}

// snapshot takes one snapshot of the execution's working directory after
// the journal's last record and appends its snapshot.created. A failure is
// a diagnostic, never the execution's failure.
func (rt *Runtime) snapshot(p *process, why string) {
	s := p.snaps
	s.mu.Lock()
	off := s.off
	s.mu.Unlock()
	if off {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), snapshotTimeout)
	defer cancel()
	hs, ok := rt.cfg.Store.(headStore)
	if !ok {
		s.mu.Lock()
		s.off = true
		s.mu.Unlock()
		rt.snapshotDiagnostic(ctx, p, "workspace-snapshot-"+why, CodeSnapshotFailed, "the journal store cannot tell its last sequence, so no snapshots are taken")
		return
	}
	head, err := hs.Head(ctx, p.ref)
	if err != nil {
		rt.snapshotDiagnostic(ctx, p, "workspace-snapshot-"+why+"-"+randomHex(4), CodeSnapshotFailed, fmt.Sprintf("snapshot at %s: read the journal's last sequence: %v", why, err))
		return
	}
	seq := head.LastSequence
	s.mu.Lock()
	same := seq == s.last
	s.mu.Unlock()
	if same {
		return
	}
	id := fmt.Sprintf("workspace-snapshot-%d", seq)
	start := time.Now()
	c, err := workspace.Snapshot(ctx, p.dir, p.ref.AgentExecutionID, seq)
	switch {
	case errors.Is(err, workspace.ErrNotGit):
		s.mu.Lock()
		s.off = true
		s.mu.Unlock()
		rt.snapshotDiagnostic(ctx, p, SnapshotsUnsupportedID, CodeSnapshotsUnsupported,
			fmt.Sprintf("%v; the execution has no workspace snapshots, and a fork of it can keep its directory or discard it, not restore a snapshot", err))
		return
	case err != nil:
		rt.snapshotDiagnostic(ctx, p, id, CodeSnapshotFailed, fmt.Sprintf("snapshot at %s after sequence %d: %v", why, seq, err))
		return
	}
	rt.cfg.Logger.Debug("workspace snapshot", "execution", p.ref.AgentExecutionID, "at", why, "sequence", seq, "ref", c.Ref, "took", time.Since(start))
	rec := &eventstore.SnapshotCreated{Resource: p.dir, Ref: c.Ref, Commit: c.Commit, Tree: c.Tree, Parent: c.Parent,
		AtSequence: seq, Files: c.Files, Added: c.Added, Modified: c.Modified, Deleted: c.Deleted}
	rec.RecordID = eventstore.RecordID(p.ref.JournalID, eventstore.KindSnapshot, eventstore.NaturalKey(rec))
	e, err := rt.cfg.Store.Append(ctx, p.ref, rec)
	if err != nil {
		rt.cfg.Logger.Error("record snapshot", "execution", p.ref.AgentExecutionID, "ref", c.Ref, "err", err)
		return
	}
	s.mu.Lock()
	s.last = e.Record.RecordBase().Sequence
	s.mu.Unlock()
}

func (rt *Runtime) snapshotDiagnostic(ctx context.Context, p *process, id, code, msg string) {
	rt.record(ctx, p, &eventstore.Observation{ObservationID: id, Source: eventstore.ObservedGit,
		Confidence: eventstore.ConfidenceDiagnostic, Signal: eventstore.NewSignal(&eventstore.DiagnosticSignal{Code: code, Message: clipReason(msg)})})
}
