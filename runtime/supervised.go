package runtime

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentjournal/agentjournal/execution"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/durable"
	"github.com/agentjournal/agentjournal/sandbox"
	"github.com/agentjournal/agentjournal/supervisor"
	"github.com/agentjournal/agentjournal/terminal"
)

// A runtime with a Supervisor runs each agent that keeps one process for
// its whole execution (a CLI that reads its turns on stdin, or a generic
// program) on pipes under a supervisor process, which outlives the
// runtime's own process; an agent on a terminal lane runs on a PTY that its
// supervisor holds, and its terminal is adopted into the runtime's
// Terminals (supervisedterm.go). In SupervisedDir each such execution has:
//
//	<escaped id>/             the supervisor's state directory (its spool, control socket, exit)
//	<escaped id>.launch.json  what a runtime needs to take the execution over: adapter, command, shape, marker nonce
//	<escaped id>.lines        the count of stdout lines whose records are in the journal
//
// A runtime started after the one that launched it (a daemon restarted,
// cleanly or after kill -9) attaches in Recover: it reads the spool from
// the start, feeding the lines counted in .lines to the provider parser
// and the driver only (they rebuild their state, and nothing is appended
// twice), and handles the rest as they come, so output printed while no
// runtime watched is journaled, once. Executions whose CLI runs a process
// per turn are not supervised: they are marked terminated after a restart,
// as before.

const (
	launchSuffix = ".launch.json"
	linesSuffix  = ".lines"
	// turnSuffix names the process of a per-turn CLI's running turn (pid
	// and start time), so that the runtime taking the conversation over
	// can end it: it was the gone runtime's child, and what it prints now
	// reaches no one.
	turnSuffix = ".turn"
)

// launchInfo is what a runtime needs to take over an execution another one
// launched.
type launchInfo struct {
	Ref     eventstore.Reference    `json:"ref"`
	Agent   string                  `json:"agent"`
	Command []string                `json:"command,omitempty"`
	Shape   eventstore.SessionShape `json:"shape,omitempty"`
	Nonce   string                  `json:"nonce"`
	// Env is the launch's own environment (LaunchRequest.Env), which a
	// CLI that runs a process per turn needs for the turns it starts
	// after a restart. The file is the data directory's, mode 0600.
	Env []string `json:"env,omitempty"`
	// Terminal is the terminal lane of an agent run on one, nil on pipes.
	Terminal *launchTerminal `json:"terminal,omitempty"`
	// Sandbox confines the turns of a CLI that runs a process per turn,
	// started after a restart as before it; nil runs them unconfined.
	Sandbox *sandbox.Policy `json:"sandbox,omitempty"`
}

// takeOver reports whether another runtime can take an execution over
// after this one is gone: one that keeps its process (supervised), or a
// conversation whose turns are processes of their own (between turns
// there is nothing to hold but its provider session).
func (rt *Runtime) takeOver(p *process, interactive bool) bool {
	if rt.cfg.Supervisor == nil || rt.cfg.SupervisedDir == "" {
		return false
	}
	if interactive {
		// A terminal lane is one process for the whole execution, on a
		// PTY its supervisor holds.
		return rt.cfg.Terminals != nil
	}
	return p.driver.TurnsOnStdin() || p.shape == eventstore.ShapeConversation
}

// writeLaunchInfo keeps what another runtime needs to take the execution
// over, before its process starts.
func (rt *Runtime) writeLaunchInfo(p *process, req LaunchRequest, term *launchTerminal) error {
	if err := os.MkdirAll(rt.cfg.SupervisedDir, 0o700); err != nil {
		return err
	}
	info := launchInfo{Ref: p.ref, Agent: p.adapter.ID(), Command: req.Command, Shape: p.shape, Nonce: p.nonce, Env: req.Env, Terminal: term,
		Sandbox: p.sandbox}
	data, err := json.Marshal(info)
	if err != nil {
		return err
	}
	path, err := rt.supervisedPath(p.ref.AgentExecutionID, launchSuffix)
	if err != nil {
		return err
	}
	return durable.WriteFile(path, data, 0o600)
}

// supervised reports whether an execution's process runs under a
// supervisor.
func (rt *Runtime) supervised(p *process) bool {
	return rt.cfg.Supervisor != nil && rt.cfg.SupervisedDir != "" && p.driver.TurnsOnStdin() && !conversing(p.driver)
}

// supervisedPath returns the path of an execution's file or directory in
// SupervisedDir.
func (rt *Runtime) supervisedPath(id, suffix string) (string, error) {
	esc, err := eventstore.EscapeID(id)
	if err != nil {
		return "", err
	}
	return filepath.Join(rt.cfg.SupervisedDir, esc+suffix), nil
}

// startSupervised runs the execution's process (spec's program and
// arguments, on pipes or a terminal) under a supervisor and follows its
// output. On a terminal lane, lt names it: the terminal is served from the
// runtime's Terminals, its output, spooled by the supervisor, feeding the
// terminal's scrollback and the line readers alike.
func (rt *Runtime) startSupervised(ctx context.Context, p *process, spec supervisor.Spec, lt *launchTerminal) error {
	dir, err := rt.supervisedPath(p.ref.AgentExecutionID, "")
	if err != nil {
		return err
	}
	spec.Env, spec.Dir = p.env, p.dir
	// The agent runs sandboxed under its supervisor, which stays outside
	// to hold its pipes and spool.
	if spec.Program, spec.Args, err = p.command(spec.Program, spec.Args); err != nil {
		return err
	}
	h, err := supervisor.Start(ctx, *rt.cfg.Supervisor, dir, spec)
	if err != nil {
		return err
	}
	var t *terminal.Terminal
	if lt != nil {
		t, err = rt.adoptTerminal(p.ref.AgentExecutionID, *lt, h)
	}
	var c *child
	if err == nil {
		if c, err = rt.supervisedChild(p, h, t, 0); err != nil && t != nil {
			t.Detach()
		}
	}
	if err != nil {
		// Nothing would follow the agent: it ends with the launch.
		_ = syscall.Kill(-h.AgentPID(), syscall.SIGKILL)
		return errors.Join(err, h.Close())
	}
	p.mu.Lock()
	p.child = c
	p.mu.Unlock()
	rt.register(p)
	rt.followSupervised(p, c)
	return nil
}

// supervisedChild makes the child of a supervised process, whose first
// replayed stdout lines are already journaled; t is its terminal when it
// runs on one.
func (rt *Runtime) supervisedChild(p *process, h *supervisor.Handle, t *terminal.Terminal, replayed int) (*child, error) {
	path, err := rt.supervisedPath(p.ref.AgentExecutionID, linesSuffix)
	if err != nil {
		return nil, err
	}
	lines, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	c := p.newChild()
	c.lane, c.lines, c.replayed = supervisedLane{h: h, t: t}, lines, replayed
	c.replayedErr = readKept(path)
	return c, nil
}

// The lines file holds two counts, big-endian uint64 each: the stdout
// lines whose records are in the journal, then the stderr lines kept in
// the execution's output file.
const (
	handledAt = 0
	keptAt    = 8
)

// noteHandled records that the records of stdout line n are in the
// journal. It is one 8-byte write in place, no sync: the fault it guards
// against is the runtime's process dying, which leaves the page cache; a
// line handled twice after a lost write appends nothing new (its records'
// ids are the same).
func (c *child) noteHandled(n int) { c.noteCount(handledAt, n) }

// readHandled returns the count noteHandled last wrote, 0 when none.
func readHandled(path string) int { return readCount(path, handledAt) }

// noteStderr records that stderr line n is in the execution's output file,
// as noteHandled does for stdout: the spool is read again from its start
// after a restart, and a line kept once is not kept twice.
func (c *child) noteStderr(n int) { c.noteCount(keptAt, n) }

// readKept returns the count noteStderr last wrote, 0 when none.
func readKept(path string) int { return readCount(path, keptAt) }

// noteCount writes n at offset at of the lines file, if the child has one.
func (c *child) noteCount(at int64, n int) {
	if c.lines == nil {
		return
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(n))
	c.lines.WriteAt(b[:], at)
}

// readCount returns the count at offset at of the lines file at path, 0
// when the file or the count is not there.
func readCount(path string, at int64) int {
	data, err := os.ReadFile(path)
	if err != nil || int64(len(data)) < at+8 {
		return 0
	}
	return int(binary.BigEndian.Uint64(data[at:]))
}

// followSupervised hands the spool's frames to the line readers, and
// records the end of the process once everything is read. When the
// runtime closes leaving its agents running, it stops reading and records
// nothing: the next runtime takes over.
func (rt *Runtime) followSupervised(p *process, c *child) {
	stdoutR, stdoutW := io.Pipe()
	stderrR, stderrW := io.Pipe()
	var pumps sync.WaitGroup
	pumps.Go(func() { rt.pump(p, c, stdoutR, true) })
	pumps.Go(func() { rt.pump(p, c, stderrR, false) })
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		var lost error
		for f, err := range c.handle().Output(rt.detach, 0) {
			if err != nil {
				lost = err
				break
			}
			w := stdoutW
			if f.Stream == supervisor.Stderr {
				w = stderrW
			}
			if t := c.term(); t != nil {
				// Read again from the start after a restart, the output
				// rebuilds the terminal's scrollback.
				t.Feed(f.Data)
			}
			w.Write(f.Data)
		}
		if rt.detach.Err() != nil {
			// Leaving: the pumps stop where they are; nothing more is
			// journaled here.
			if t := c.term(); t != nil {
				t.Detach()
			}
			stdoutW.CloseWithError(rt.detach.Err())
			stderrW.CloseWithError(rt.detach.Err())
			pumps.Wait()
			c.lines.Close()
			c.handle().Close()
			return
		}
		stdoutW.Close()
		stderrW.Close()
		pumps.Wait()
		rt.flush(p, c)
		e := exit{}
		switch st, ok := c.handle().Exited(); {
		case ok:
			e.success, e.desc = st.Success(), st.Desc
			if st.OutputError != "" {
				rt.cfg.Logger.Warn("output of the agent is missing from its spool", "execution", p.ref.AgentExecutionID, "err", st.OutputError)
			}
		default:
			e.lost = true
			e.desc = fmt.Sprintf("its supervisor died with the agent's end unknown (%v)", lost)
			// Whatever is left of the agent goes: nothing watches it.
			_ = syscall.Kill(-c.handle().AgentPID(), syscall.SIGKILL)
		}
		if t := c.term(); t != nil {
			st, _ := c.handle().Exited()
			t.Finish(terminalCode(st, e.lost))
		}
		c.closeInput()
		rt.exited(p, c, e)
		rt.releaseSupervised(p, c)
	}()
}

// releaseSupervised removes an ended execution's supervisor files once its
// end is in the journal.
func (rt *Runtime) releaseSupervised(p *process, c *child) {
	p.mu.Lock()
	ended := p.ended
	p.mu.Unlock()
	c.lines.Close()
	if !ended {
		c.handle().Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.handle().Wait(ctx); err != nil && !errors.Is(err, supervisor.ErrLost) {
		rt.cfg.Logger.Warn("wait for the supervisor", "execution", p.ref.AgentExecutionID, "err", err)
	}
	if err := c.handle().Remove(); err != nil {
		rt.cfg.Logger.Warn("remove the supervisor's files", "execution", p.ref.AgentExecutionID, "err", err)
	}
	rt.forgetLaunch(p.ref.AgentExecutionID)
}

// forgetLaunch removes what another runtime would have needed to take an
// ended execution over.
func (rt *Runtime) forgetLaunch(id string) {
	if rt.cfg.SupervisedDir == "" {
		return
	}
	for _, suffix := range []string{launchSuffix, linesSuffix, turnSuffix} {
		path, err := rt.supervisedPath(id, suffix)
		if err == nil {
			err = os.Remove(path)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			rt.cfg.Logger.Warn("forget the launch of an ended execution", "execution", id, "err", err)
		}
	}
}

// attach takes over a supervised execution that a runtime before this one
// launched: it is live here again, and its output is read from where the
// journal stops. ok is false when the execution was not supervised.
func (rt *Runtime) attach(ctx context.Context, ref eventstore.Reference, st *execution.State) (ok bool, err error) {
	if rt.cfg.Supervisor == nil || rt.cfg.SupervisedDir == "" {
		return false, nil
	}
	infoPath, err := rt.supervisedPath(ref.AgentExecutionID, launchSuffix)
	if err != nil {
		return false, err
	}
	data, err := os.ReadFile(infoPath)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var info launchInfo
	if err := json.Unmarshal(data, &info); err != nil {
		return false, fmt.Errorf("%s: %w", infoPath, err)
	}
	dir, err := rt.supervisedPath(ref.AgentExecutionID, "")
	if err != nil {
		return false, err
	}
	adapter, err := NewAdapter(info.Agent)
	if err != nil {
		return false, err
	}
	driver := adapter.NewDriver(info.Command, info.Shape)
	rt.agentVersion(adapter, driver, info.Command, info.Env)
	rt.countBefore(ctx, driver, st.Resumes)
	if !driver.TurnsOnStdin() && info.Terminal == nil {
		return rt.attachBetweenTurns(ctx, ref, st, info, adapter, driver)
	}
	h, err := supervisor.Attach(dir)
	switch {
	case errors.Is(err, supervisor.ErrLost):
		// Its spool is still read: the output before the loss is journaled.
	case errors.Is(err, fs.ErrNotExist):
		// Launched, but the supervisor never started.
		return false, os.Remove(infoPath)
	case err != nil:
		return false, err
	}
	p := &process{ref: ref, adapter: adapter, driver: driver, descriptor: st.ProtocolDescriptor, shape: info.Shape, nonce: info.Nonce,
		done: make(chan struct{}), source: eventstore.ObservedProviderOutput}
	linesPath, err := rt.supervisedPath(ref.AgentExecutionID, linesSuffix)
	if err != nil {
		return false, errors.Join(err, h.Close())
	}
	var t *terminal.Terminal
	if info.Terminal != nil {
		p.source = eventstore.ObservedPTY
		if t, err = rt.adoptTerminal(ref.AgentExecutionID, *info.Terminal, h); err != nil {
			return false, errors.Join(err, h.Close())
		}
	}
	c, err := rt.supervisedChild(p, h, t, readHandled(linesPath))
	if err != nil {
		if t != nil {
			t.Detach()
		}
		return false, errors.Join(err, h.Close())
	}
	if err := rt.markHosted(ref); err != nil {
		if t != nil {
			t.Detach()
		}
		return false, errors.Join(err, h.Close())
	}
	// A message its host wrote to the supervisor's socket as it went may or
	// may not have reached the agent.
	if err := rt.settleUndelivered(ctx, ref, eventstore.DeliveryAttempted, eventstore.TransportAdapter,
		"its host stopped while delivering it; whether the agent read it is unknown"); err != nil {
		rt.cfg.Logger.Error("settle deliveries in flight", "execution", ref.AgentExecutionID, "err", err)
	}
	p.mu.Lock()
	p.child = c
	p.mu.Unlock()
	rt.mu.Lock()
	rt.live[ref.AgentExecutionID] = p
	rt.mu.Unlock()
	rt.rearmTimeout(p, st)
	if err := rt.appendState(ref, fmt.Sprintf("attached:%d", time.Now().UnixNano()), &eventstore.StateChanged{
		Lifecycle: eventstore.LifecycleRunning, Reason: fmt.Sprintf("attached after a restart of its host to the agent (process %d), which ran on meanwhile", h.AgentPID()), Host: rt.cfg.Host}); err != nil {
		rt.cfg.Logger.Error("record attach", "execution", ref.AgentExecutionID, "err", err)
	}
	rt.followSupervised(p, c)
	return true, nil
}

// attachBetweenTurns takes over a conversation whose turns are processes of
// their own (Codex, Copilot CLI): it is live here again, waiting for its
// next message, which resumes the provider session the journal names. A
// turn that was running when its host went is recorded as lost: its
// process was the host's child and its output is gone with the host.
func (rt *Runtime) attachBetweenTurns(ctx context.Context, ref eventstore.Reference, st *execution.State, info launchInfo, adapter Adapter, driver Driver) (bool, error) {
	// What the state does not keep: the session, the turns' edges and the
	// processes started.
	var session string
	started, ended, prefixes, observed := 0, 0, 0, 0
	states := map[string]bool{}
	for e, err := range rt.cfg.Store.ReadJournal(ctx, ref, 1) {
		if err != nil {
			return false, fmt.Errorf("take over %s: %w", ref.AgentExecutionID, err)
		}
		switch r := e.Record.(type) {
		case *eventstore.Observation:
			if r.Native != nil && r.Native.SessionID != "" {
				session = r.Native.SessionID
			}
			// A process whose delivery record was not written before its
			// host went still names itself in its output's ids.
			observed = max(observed, childIndex(r.ObservationID))
		case *eventstore.MessageDelivery:
			// Each delivered prompt of a conversation like this started a
			// process: a turn, and the prefix of its output's ids.
			if r.Status == eventstore.DeliveryDelivered && r.Transport == eventstore.TransportAdapter {
				prefixes++
			}
		case *eventstore.StateChanged:
			states[r.RecordID] = true
		}
	}
	prefixes = max(prefixes, observed)
	// A prompt accepted without an outcome started no turn this runtime
	// can follow: the sender learns it failed and sends it again.
	if err := rt.settleUndelivered(ctx, ref, eventstore.DeliveryFailed, eventstore.TransportNone,
		"its host stopped before the turn it was to start; send it again"); err != nil {
		return false, err
	}
	// Turn n's edges have ids of their own; the first turn starts with the
	// launch and has no start record.
	has := func(key string) bool {
		return states[eventstore.RecordID(ref.JournalID, eventstore.KindStateChanged, key)]
	}
	for n := 1; n <= prefixes; n++ {
		if n == 1 || has(fmt.Sprintf("turn:%d:start", n)) {
			started = n
		}
		if has(fmt.Sprintf("turn:%d:end", n)) {
			ended = n
		}
	}
	rt.endLostTurn(ref)
	if ended < started {
		ended = started
		if err := rt.appendState(ref, fmt.Sprintf("turn:%d:end", ended), &eventstore.StateChanged{
			Attention: eventstore.AttentionAwaitingOperator, Activity: eventstore.ActivityIdle,
			Reason: fmt.Sprintf("turn %d lost: its host stopped while it ran; waiting for the next message", ended)}); err != nil {
			return false, err
		}
	}
	p := &process{ref: ref, adapter: adapter, driver: driver, descriptor: st.ProtocolDescriptor, shape: info.Shape, nonce: info.Nonce,
		env: rt.agentEnv(ref, info.Env, info.Nonce), dir: st.WorkingDirectory, sandbox: info.Sandbox, done: make(chan struct{}), source: eventstore.ObservedProviderOutput,
		children: prefixes, sessionID: session, turns: ended, awaiting: true}
	if err := rt.markHosted(ref); err != nil {
		return false, err
	}
	rt.mu.Lock()
	rt.live[ref.AgentExecutionID] = p
	rt.mu.Unlock()
	rt.rearmTimeout(p, st)
	reason := "attached after a restart of its host; waiting for the next message"
	if session != "" {
		reason += ", which resumes session " + session
	}
	if err := rt.appendState(ref, fmt.Sprintf("attached:%d", time.Now().UnixNano()), &eventstore.StateChanged{
		Lifecycle: eventstore.LifecycleRunning, Attention: eventstore.AttentionAwaitingOperator, Activity: eventstore.ActivityIdle, Reason: reason, Host: rt.cfg.Host}); err != nil {
		rt.cfg.Logger.Error("record attach", "execution", ref.AgentExecutionID, "err", err)
	}
	return true, nil
}

// childIndex is the number of the process that printed the output an
// observation id comes from: 1 for "out-…", n for "outn-…" (newChild's
// prefixes), 0 for any other id.
func childIndex(observationID string) int {
	rest, ok := strings.CutPrefix(observationID, "out")
	if !ok {
		return 0
	}
	digits, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0
	}
	if digits == "" {
		return 1
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 2 {
		return 0
	}
	return n
}

// noteTurnProcess records the process of a turn another runtime may have
// to end; forgetTurnProcess removes the record once it has exited.
func (rt *Runtime) noteTurnProcess(p *process, pid int) {
	if !rt.takeOver(p, false) || p.driver.TurnsOnStdin() {
		return
	}
	path, err := rt.supervisedPath(p.ref.AgentExecutionID, turnSuffix)
	if err == nil {
		err = os.WriteFile(path, []byte(fmt.Sprintf("%d %d\n", pid, processStart(pid))), 0o600)
	}
	if err != nil {
		rt.cfg.Logger.Warn("note the turn's process", "execution", p.ref.AgentExecutionID, "err", err)
	}
}

func (rt *Runtime) forgetTurnProcess(p *process) {
	if !rt.takeOver(p, false) || p.driver.TurnsOnStdin() {
		return
	}
	if path, err := rt.supervisedPath(p.ref.AgentExecutionID, turnSuffix); err == nil {
		os.Remove(path)
	}
}

// endLostTurn kills the process group of a turn a gone runtime started,
// if that process still runs: the same pid and start time, so that a pid
// reused since is left alone.
func (rt *Runtime) endLostTurn(ref eventstore.Reference) {
	path, err := rt.supervisedPath(ref.AgentExecutionID, turnSuffix)
	if err != nil {
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var pid int
	var start uint64
	if _, err := fmt.Sscan(string(data), &pid, &start); err == nil && pid > 0 && start != 0 && processStart(pid) == start {
		if err := syscall.Kill(-pid, syscall.SIGKILL); err == nil {
			rt.cfg.Logger.Warn("ended the process of a turn lost to a restart", "execution", ref.AgentExecutionID, "pid", pid)
		}
	}
	os.Remove(path)
}

// processStart is a process's start time in clock ticks since boot
// (/proc/PID/stat, field 22), 0 when it cannot be read: with the pid, it
// names one process for the life of the machine.
func processStart(pid int) uint64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(fields[19], 10, 64)
	return n
}
