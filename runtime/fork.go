package runtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/runtime/agent"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/workspace"
)

// ErrBadFork reports a fork or a resume the journals cannot serve as asked
// (a sequence past the end, a turn still in flight, a snapshot that is not
// there); nothing was written.
var ErrBadFork = errors.New("execution: invalid fork or resume")

// ForkError is a refused fork or resume: it is ErrBadFork, and says which
// request field was at fault (at, workspace, prompt or seed), or that the
// execution's state refused it (Conflict), so that callers need not read
// the message to answer.
type ForkError struct {
	Field    string
	Conflict bool
	// Execution is set when the refused attempt was journaled anyway: a
	// fork whose workspace could not be restored is an execution that
	// failed at once, its restore.attempted saying why (spec 002).
	Execution string
	msg       string
	err       error // what the refusal wraps, if anything
	// outcome is the restore outcome of a workspace refusal.
	outcome eventstore.RestoreOutcome
}

func (e *ForkError) Error() string {
	if e.Execution != "" {
		return fmt.Sprintf("%s: %s (the attempt is journaled as execution %s, failed)", ErrBadFork, e.msg, e.Execution)
	}
	return ErrBadFork.Error() + ": " + e.msg
}

// unrestorable refuses a fork whose workspace cannot be restored the way
// asked, with the restore outcome the attempt is journaled with.
func unrestorable(outcome eventstore.RestoreOutcome, err error) error {
	return &ForkError{Field: "workspace", msg: err.Error(), err: err, outcome: outcome}
}

func (e *ForkError) Unwrap() []error {
	if e.err != nil {
		return []error{ErrBadFork, e.err}
	}
	return []error{ErrBadFork}
}

// badFork refuses a fork or resume for its field.
func badFork(field, format string, args ...any) error {
	return &ForkError{Field: field, msg: fmt.Sprintf(format, args...)}
}

// badForkErr refuses a fork or resume for its field with err's reason.
func badForkErr(field string, err error) error {
	return &ForkError{Field: field, msg: err.Error(), err: err}
}

// ForkRequest asks for a new execution that branches off another one after
// one of its records.
type ForkRequest struct {
	// Parent is the execution forked.
	Parent string
	// At is the parent's journal sequence the fork branches after.
	At uint64
	// Workspace is how the fork gets its working directory; keep when
	// empty.
	Workspace workspace.Mode
	// Prompt is the fork's first instruction.
	Prompt string
	// Seed makes the fork's id deterministic; random when empty.
	Seed string
	// Env is added to the fork's environment. The parent's own is not
	// journaled (it may hold secrets), so it is not repeated.
	Env []string
}

// ResumeRequest asks for a new run of an execution's session.
type ResumeRequest struct {
	// Execution is the execution resumed.
	Execution string
	// Prompt is the run's first instruction.
	Prompt string
	// Seed makes the new execution's id deterministic; random when empty.
	Seed string
	// Env is added to the run's environment, as for a fork.
	Env []string
}

// continuer is a Driver that can start its CLI on a session of its own.
type continuer interface {
	Continue(c agent.Continuation) error
}

// continueSession hands a continuation to a driver that takes one.
func continueSession(d Driver, id string, c agent.Continuation) error {
	cd, ok := d.(continuer)
	if !ok {
		return fmt.Errorf("%w: the %s agent cannot continue a session of its own", ErrBadLaunch, id)
	}
	if c.Session == "" {
		return fmt.Errorf("%w: a continuation needs the agent's session id", ErrBadLaunch)
	}
	if err := cd.Continue(c); err != nil {
		return fmt.Errorf("%w: %w", ErrBadLaunch, err)
	}
	return nil
}

// Fork launches a new execution that branches off req.Parent after its
// record req.At: its header links there (forkedFrom, with that record's
// event id), it runs the parent's agent with the parent's command, shape
// and posture, and its agent gets the conversation up to there, from its
// CLI (Claude Code forks its own session at the last message) or retold
// in its first message. Nothing is written when the fork cannot be made.
func (rt *Runtime) Fork(ctx context.Context, req ForkRequest) (eventstore.Reference, error) {
	pref, err := rt.cfg.Store.Lookup(ctx, req.Parent)
	if err != nil {
		return eventstore.Reference{}, fmt.Errorf("fork %s: %w", req.Parent, err)
	}
	if req.At == 0 || req.At > pref.LastSequence {
		return eventstore.Reference{}, badFork("at", "at %d is not a sequence of %s (want 1 to %d)", req.At, req.Parent, pref.LastSequence)
	}
	mode := req.Workspace
	if mode == "" {
		mode = workspace.ModeKeep
	}
	if _, err := workspace.ParseMode(string(mode)); err != nil {
		return eventstore.Reference{}, badForkErr("workspace", err)
	}
	h, conv, err := rt.conversation(ctx, pref, req.At)
	if err != nil {
		return eventstore.Reference{}, err
	}
	st, err := execution.ReplayLineage(ctx, rt.cfg.Store, pref)
	if err != nil {
		return eventstore.Reference{}, fmt.Errorf("fork %s: %w", req.Parent, err)
	}
	// A process whose ending is being recorded has exited: what it still
	// does is let go of its files, so a client that read its final
	// lifecycle is never told it runs.
	running := rt.IsRunning(pref.AgentExecutionID) || !st.Lifecycle.Final()

	link := &eventstore.ForkLink{JournalID: pref.JournalID, AgentExecutionID: pref.AgentExecutionID, Sequence: req.At}
	if link.EventID, err = eventstore.EventID(conv.at); err != nil {
		return eventstore.Reference{}, fmt.Errorf("fork %s: %w", req.Parent, err)
	}
	launch := LaunchRequest{OwnerEntity: pref.OwnerEntity, OwnerID: pref.OwnerID, Agent: h.AgentID, Command: h.Command,
		Posture: h.ProtocolDescriptor.Posture, Shape: h.ProtocolDescriptor.SessionShape, Env: req.Env, ForkedFrom: link}
	nativeFork, _ := Native(h.AgentID)
	switch {
	case nativeFork && conv.message != "":
		// The CLI's session holds only completed messages: one cut in the
		// middle of a turn still running would lose what the turn does
		// next, and a tool call cut from its result is no conversation.
		if running && req.At > conv.turnEnd {
			return eventstore.Reference{}, badFork("at", "%s forks its session at the end of a turn, and %s is running a turn after sequence %d: fork at sequence %d or before, or when the turn has ended",
				h.AgentID, req.Parent, conv.turnEnd, conv.turnEnd)
		}
		link.History = eventstore.HistoryNative
		launch.Continue = &agent.Continuation{Session: conv.msgSession, Fork: true, At: conv.message}
		launch.Prompt = req.Prompt
	default:
		if strings.TrimSpace(req.Prompt) == "" {
			return eventstore.Reference{}, badFork("prompt", "a fork of %s gets the conversation up to sequence %d retold in its first message, which needs a prompt to follow it (give one)",
				h.AgentID, req.At)
		}
		link.History = eventstore.HistoryReconstructed
		launch.Prompt = retell(conv.turns, req.Parent, req.At, req.Prompt)
	}

	launch.Seed = req.Seed
	if launch.Seed == "" {
		launch.Seed = randomHex(8)
	}
	id, err := eventstore.NewAgentExecutionID(pref.OwnerEntity, pref.OwnerID, launch.Seed)
	if err != nil {
		return eventstore.Reference{}, fmt.Errorf("fork %s: %w", req.Parent, err)
	}
	if _, err := rt.cfg.Store.Lookup(ctx, id); err == nil {
		return eventstore.Reference{}, badFork("seed", "execution %s already exists (fork with another seed, or with none)", id)
	}
	dir, snap, cleanup, err := rt.forkDir(ctx, mode, h.WorkingDirectory, pref.AgentExecutionID, req.At, id)
	if fe := (*ForkError)(nil); errors.As(err, &fe) && fe.outcome != "" {
		// The attempt goes into the DAG: a fork that failed at once, its
		// restore.attempted saying why, and no process started.
		launch.Dir = h.WorkingDirectory
		launch.Restored = &eventstore.RestoreAttempted{Resource: h.WorkingDirectory, Mode: eventstore.RestoreMode(mode),
			Outcome: fe.outcome, Detail: fe.msg}
		launch.refused = "the fork's workspace was not restored (" + string(fe.outcome) + "): " + fe.msg
		if ref, lerr := rt.Launch(ctx, launch); ref.JournalID != "" {
			fe.Execution = ref.AgentExecutionID
		} else if lerr != nil {
			rt.cfg.Logger.Error("journal a refused fork", "parent", req.Parent, "err", lerr)
		}
		return eventstore.Reference{}, fe
	}
	if err != nil {
		return eventstore.Reference{}, err
	}
	launch.Dir = dir
	launch.Restored = &eventstore.RestoreAttempted{Resource: h.WorkingDirectory, Mode: eventstore.RestoreMode(mode),
		SnapshotRef: snap.Name, SnapshotCommit: snap.Commit, Outcome: eventstore.RestoreRestored, RestoredTo: dir}
	ref, err := rt.Launch(ctx, launch)
	if err != nil && ref.JournalID == "" {
		cleanup()
	}
	return ref, err
}

// forkDir gives a fork its working directory by mode, and says how to
// undo it if the fork is not launched.
func (rt *Runtime) forkDir(ctx context.Context, mode workspace.Mode, parentDir, parent string, at uint64, fork string) (string, workspace.Ref, func(), error) {
	none := func() {}
	var snapshot workspace.Ref
	if mode == workspace.ModeKeep {
		dir, err := workspace.Restore(ctx, mode, parentDir, "", "")
		if err != nil {
			return "", snapshot, none, badForkErr("workspace", err)
		}
		return dir, snapshot, none, nil
	}
	if rt.cfg.WorkspaceDir == "" {
		return "", snapshot, none, badFork("workspace", "this runtime has no directory for forks' workspaces, so a fork can only keep its parent's directory (workspace keep)")
	}
	dst, err := workspace.WorktreeDir(rt.cfg.WorkspaceDir, fork)
	if err != nil {
		return "", snapshot, none, fmt.Errorf("fork: %w", err)
	}
	if mode == workspace.ModeSnapshot {
		snaps, err := workspace.List(ctx, parentDir, parent)
		if errors.Is(err, workspace.ErrNotGit) {
			return "", snapshot, none, unrestorable(eventstore.RestoreUnsupported, fmt.Errorf("%s is not in a git work tree, so it has no snapshots (restore unsupported): fork with workspace keep or discard", parentDir))
		}
		if err != nil {
			return "", snapshot, none, fmt.Errorf("fork: %w", err)
		}
		for _, s := range snaps {
			if s.Sequence <= at {
				snapshot = s
			}
		}
		if snapshot.Name == "" {
			return "", snapshot, none, unrestorable(eventstore.RestoreMissing, fmt.Errorf("%s has no workspace snapshot at or before sequence %d (none was taken, or it was pruned): fork with workspace keep or discard", parent, at))
		}
	}
	dir, err := workspace.Restore(ctx, mode, parentDir, snapshot.Name, dst)
	switch {
	case errors.Is(err, workspace.ErrSnapshotMissing):
		return "", snapshot, none, unrestorable(eventstore.RestoreMissing, err)
	case errors.Is(err, workspace.ErrNotGit):
		return "", snapshot, none, unrestorable(eventstore.RestoreUnsupported, err)
	}
	if err != nil {
		return "", snapshot, none, fmt.Errorf("fork: %w", err)
	}
	root := workspace.WorktreeRoot(rt.cfg.WorkspaceDir)
	return dir, snapshot, func() {
		if mode == workspace.ModeSnapshot {
			_ = workspace.RemoveWorktree(context.WithoutCancel(ctx), root, dir)
			return
		}
		_ = os.Remove(dir)
	}, nil
}

// Resume launches a new run of an execution's session: a new execution
// whose header resumes it and keeps its sessionId, in its directory, with
// its agent and settings. The agent's CLI resumes its own session when it
// can (Claude Code, Codex, Copilot CLI, an ACP agent offering
// session/load); otherwise its first message retells the session's
// conversation. The resumed execution is left as it is.
func (rt *Runtime) Resume(ctx context.Context, req ResumeRequest) (eventstore.Reference, error) {
	ref, err := rt.cfg.Store.Lookup(ctx, req.Execution)
	if err != nil {
		return eventstore.Reference{}, fmt.Errorf("resume %s: %w", req.Execution, err)
	}
	st, err := execution.ReplayLineage(ctx, rt.cfg.Store, ref)
	if err != nil {
		return eventstore.Reference{}, fmt.Errorf("resume %s: %w", req.Execution, err)
	}
	if rt.IsRunning(ref.AgentExecutionID) || !st.Lifecycle.Final() {
		// Two processes on one session would interleave it; one whose
		// ending is being recorded has exited (IsRunning).
		return eventstore.Reference{}, &ForkError{Conflict: true, msg: fmt.Sprintf("%s is still running (lifecycle %s): stop it before resuming its session, or fork it", req.Execution, st.Lifecycle)}
	}
	h, conv, err := rt.conversation(ctx, ref, ref.LastSequence)
	if err != nil {
		return eventstore.Reference{}, err
	}
	link := &eventstore.ResumeLink{AgentExecutionID: ref.AgentExecutionID, JournalID: ref.JournalID}
	launch := LaunchRequest{OwnerEntity: ref.OwnerEntity, OwnerID: ref.OwnerID, Seed: req.Seed, Agent: h.AgentID, Command: h.Command,
		Posture: h.ProtocolDescriptor.Posture, Shape: h.ProtocolDescriptor.SessionShape, Dir: h.WorkingDirectory, Env: req.Env,
		Resumes: link, SessionID: h.Session()}
	// The CLI's own session files are on the host the execution ran on: a
	// resume on another host of the fleet retells the conversation.
	here := st.Host == "" || rt.cfg.Host == "" || st.Host == rt.cfg.Host
	if _, native := Native(h.AgentID); native && conv.session != "" && here {
		link.History = eventstore.HistoryNative
		launch.Continue = &agent.Continuation{Session: conv.session}
		launch.Prompt = req.Prompt
		if a, ok := lookup(h.AgentID); ok && a.Capabilities().Protocol == agent.ProtocolACP {
			// An ACP agent says only at its handshake whether it loads
			// the session: it gets the retelling in case it does not.
			launch.Continue.Retelling = retell(conv.turns, req.Execution, ref.LastSequence, "")
		}
	} else {
		if strings.TrimSpace(req.Prompt) == "" {
			why := ""
			if !here {
				why = fmt.Sprintf(" (it ran on host %s, which keeps its CLI's own session)", st.Host)
			}
			return eventstore.Reference{}, badFork("prompt", "a resumed %s gets its session's conversation retold in its first message%s, which needs a prompt to follow it (give one)",
				h.AgentID, why)
		}
		link.History = eventstore.HistoryReconstructed
		launch.Prompt = retell(conv.turns, req.Execution, ref.LastSequence, req.Prompt)
	}
	return rt.Launch(ctx, launch)
}

// turn is one message of a conversation as the journal holds it.
type turn struct {
	user bool
	text string
}

// past is what the journals say of a conversation up to a point.
type past struct {
	turns []turn
	// session is the last session the CLI named; msgSession and message
	// are its ids of the last agent message: the session that holds it
	// and its own id.
	session, msgSession, message string
	// at is the record at the point; turnEnd the sequence of the last
	// turn end at or before it, in the execution's own journal.
	at      eventstore.Record
	turnEnd uint64
}

// conversation reads an execution's conversation up to sequence upTo of
// its own journal, with what came before it: a fork's parent up to the
// fork point, a resumed run's whole session before it.
func (rt *Runtime) conversation(ctx context.Context, ref eventstore.Reference, upTo uint64) (*eventstore.Header, *past, error) {
	c := &past{}
	h, err := c.read(ctx, rt.cfg.Store, ref, upTo, 0, true)
	if err != nil {
		return nil, nil, err
	}
	if c.at == nil || c.at.RecordBase().Sequence != upTo {
		return nil, nil, badFork("at", "%s has no record at sequence %d", ref.AgentExecutionID, upTo)
	}
	return h, c, nil
}

func (c *past) read(ctx context.Context, src execution.JournalSource, ref eventstore.Reference, upTo uint64, depth int, own bool) (*eventstore.Header, error) {
	if depth > execution.MaxForkDepth {
		return nil, fmt.Errorf("%w: more than %d forks or resumes deep at %s", execution.ErrLineage, execution.MaxForkDepth, ref.AgentExecutionID)
	}
	var h *eventstore.Header
	ends := 0
	for e, err := range src.ReadJournal(ctx, ref, 1) {
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", ref, err)
		}
		r := e.Record
		seq := r.RecordBase().Sequence
		if seq > upTo {
			break
		}
		if own {
			c.at = r
		}
		switch r := r.(type) {
		case *eventstore.Header:
			h = r
			if err := c.before(ctx, src, r, depth); err != nil {
				return nil, err
			}
		case *eventstore.MessageAccepted:
			if r.MessageType != "prompt" && r.MessageType != "answer" {
				continue
			}
			text := execution.MessageText(r)
			if h != nil && r.MessageID == "prompt" && retold(h) {
				// A retelling's own first message: what came before it
				// is read from its links, not from the retelling.
				if _, after, ok := strings.Cut(text, retellNext); ok {
					text = after
				}
			}
			c.turns = append(c.turns, turn{user: true, text: text})
		case *eventstore.Observation:
			m, ok := signalPayload(r).(*eventstore.MessageSignal)
			if !ok || m.Text == "" {
				continue
			}
			c.turns = append(c.turns, turn{text: m.Text})
			if n := r.Native; n != nil && n.SessionID != "" && n.MessageID != "" {
				c.msgSession, c.message = n.SessionID, n.MessageID
			}
		case *eventstore.StateChanged:
			if own && r.RecordID == eventstore.RecordID(ref.JournalID, eventstore.KindStateChanged, fmt.Sprintf("turn:%d:end", ends+1)) {
				ends++
				c.turnEnd = seq
			}
		}
		if o, ok := r.(*eventstore.Observation); ok && o.Native != nil && o.Native.SessionID != "" {
			// The session a resume continues: the last one the CLI named.
			c.session = o.Native.SessionID
		}
	}
	if h == nil {
		return nil, fmt.Errorf("%s: %w", ref, execution.ErrNoHeader)
	}
	return h, nil
}

// before reads what a header's links put before the journal: the parent up
// to the fork point, or the whole run resumed.
func (c *past) before(ctx context.Context, src execution.JournalSource, h *eventstore.Header, depth int) error {
	var id string
	upTo := uint64(math.MaxUint64)
	switch {
	case h.ForkedFrom != nil:
		id, upTo = h.ForkedFrom.AgentExecutionID, h.ForkedFrom.Sequence
	case h.Resumes != nil:
		id = h.Resumes.AgentExecutionID
	default:
		return nil
	}
	ref, err := src.Lookup(ctx, id)
	if err != nil {
		return fmt.Errorf("%w: %s links to %s: %w", execution.ErrLineage, h.AgentExecutionID, id, err)
	}
	_, err = c.read(ctx, src, ref, upTo, depth+1, false)
	return err
}

// retold reports whether a journal's first prompt retells its history.
func retold(h *eventstore.Header) bool {
	return (h.ForkedFrom != nil && h.ForkedFrom.History == eventstore.HistoryReconstructed) ||
		(h.Resumes != nil && h.Resumes.History == eventstore.HistoryReconstructed)
}

// retellNext ends a retelling: the new prompt follows it.
const retellNext = "\n\nThe conversation continues with this message:\n"

// retell is the first message of an agent that gets its history from the
// journal: the conversation so far, then the new prompt.
func retell(turns []turn, from string, at uint64, prompt string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "This continues an earlier conversation (agent execution %s, up to journal sequence %d), retold from its journal: the prompts, answers and the agent's messages, in order; tool calls and their results are not included.\n", from, at)
	for _, t := range turns {
		role := "agent"
		if t.user {
			role = "user"
		}
		fmt.Fprintf(&b, "\n<%s>\n%s\n</%s>\n", role, t.text, role)
	}
	b.WriteString(retellNext)
	b.WriteString(prompt)
	return b.String()
}
