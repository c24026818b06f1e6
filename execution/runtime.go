package execution

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution/marker"
	"github.com/agentjournal/agentjournal/execution/outputlog"
	"github.com/agentjournal/agentjournal/execution/provider"
	"github.com/agentjournal/agentjournal/internal/textclip"
	"github.com/agentjournal/agentjournal/supervisor"
	"github.com/agentjournal/agentjournal/terminal"
)

// Store is what the runtime needs from the journal store.
type Store interface {
	EnsureJournal(ctx context.Context, ref eventstore.Reference, h *eventstore.Header) (eventstore.Reference, error)
	Append(ctx context.Context, ref eventstore.Reference, r eventstore.Record) (eventstore.Entry, error)
	ReadJournal(ctx context.Context, ref eventstore.Reference, fromSeq uint64) iter.Seq2[eventstore.Entry, error]
	Journals(ctx context.Context) ([]eventstore.Reference, error)
	Lookup(ctx context.Context, agentExecutionID string) (eventstore.Reference, error)
}

var (
	// ErrNotRunning reports a process-level request for an execution that
	// has no live process in this runtime.
	ErrNotRunning = errors.New("execution: no live process")
	// ErrUnknownMessageType reports a message type the execution's
	// descriptors do not declare.
	ErrUnknownMessageType = errors.New("execution: message type not declared")
	// ErrBadMessage reports a message whose payload does not fit its type
	// (an answer that names no request); nothing was written.
	ErrBadMessage = errors.New("execution: invalid message")
	// ErrBadLaunch reports a launch request whose parts do not fit
	// together (a session shape the agent does not have, a one-shot CLI
	// without a prompt); nothing was written.
	ErrBadLaunch = errors.New("execution: invalid launch")
)

// Config configures a Runtime.
type Config struct {
	Store Store
	// WorkspaceDir is where forks get a directory of their own (a
	// snapshot's worktree, an empty one for discard); when empty, a fork
	// can only keep its parent's directory.
	WorkspaceDir string
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL; 5s when 0.
	StopGrace time.Duration
	// Output, when set, receives every line the agents print (the run
	// command shows it); it must not block for long.
	Output io.Writer
	// TerminalOutput, when set, receives a terminal lane's output as the
	// PTY gives it, byte for byte (a prompt without a line feed included),
	// instead of Output getting its lines: the run command shows an
	// interactive agent on the user's terminal. It must not block for
	// long: the agent waits while it runs.
	TerminalOutput io.Writer
	// TerminalSize, when set, gives the size a terminal lane starts with
	// (the user's terminal, for the run command); 0 means the terminal
	// package's default.
	TerminalSize func() (cols, rows uint16)
	// MaxLine bounds one output line; longer lines are cut and reported as
	// a diagnostic. 1 MiB when 0.
	MaxLine int
	Logger  *slog.Logger
	// Now is the clock for record times; time.Now when nil.
	Now func() time.Time
	// Terminals runs the PTY lanes of interactive executions; without it
	// only structured-headless launches are possible.
	Terminals *terminal.Registry
	// RecordingDir receives the terminal recordings (asciicast v2), one
	// file per execution, apart from the journals.
	RecordingDir string
	// OutputDir keeps each execution's plain output: the lines on stdout
	// and stderr that are neither markers nor provider events, and so are
	// in no record (outputlog). Empty keeps none. Lines of a terminal
	// lane are not kept there: its recording has them.
	OutputDir string
	// OutputLimit bounds each of an execution's two output files, in
	// bytes; outputlog.DefaultLimit (1 MiB) when 0.
	OutputLimit int64
	// LaunchEnv, when set, adds environment variables for one launch, e.g.
	// the MCP address and a token scoped to that execution.
	LaunchEnv func(ref eventstore.Reference) []string
	// OnInputRequest, when set, is called (on a goroutine of its own) for
	// each permission request or question an agent asks, in its provider
	// output or with a needs_input marker, after the observation is
	// recorded: a host with no
	// operator to ask (the run command) answers it through SendMessage.
	OnInputRequest func(ref eventstore.Reference, req *eventstore.NeedsInputSignal)
	// HostDir, when set, holds a file for every execution this runtime
	// launched and has not seen end, so that Recover(RecoverHosted) after a
	// crash of the host finds exactly its own orphans, also on a log that
	// other hosts share. A directory of the host's data dir, created when
	// missing.
	HostDir string
	// Processed, when set, finds a message id (observation false) or an
	// observation id already in an execution's journal, and its sequence.
	// The log recognizes a retried id only within its duplicate window;
	// with Processed, a retry at any age gets the first acknowledgement
	// and appends nothing. The daemon answers it from its read model.
	Processed func(executionID string, observation bool, id string) (seq uint64, ok bool, err error)
	// Supervisor, with SupervisedDir, runs every agent that keeps one
	// process for its whole execution under a supervisor process that
	// outlives this runtime (supervised.go); Recover attaches to them
	// again. Without it the runtime's own process holds the agents' pipes.
	Supervisor    *supervisor.Config
	SupervisedDir string
	// LeaveRunning makes Close leave supervised agents running, for the
	// next runtime to attach to, instead of stopping them.
	LeaveRunning bool
	// Snapshots, when true, snapshots the working directory of every
	// execution it launches that is inside a git work tree, before its
	// first turn and at each turn boundary (snapshots.go). Off when false;
	// the daemon and the run command turn it on unless --snapshots=off.
	Snapshots bool
	// QueueDir keeps the queued and scheduled launches waiting to start,
	// one 0600 file each, so that they survive a restart (Requeue); empty
	// keeps them in memory only (dispatch.go).
	QueueDir string
	// MaxRunning is how many executions may be live here before a queued
	// launch waits; runtime.NumCPU() when 0. Interactive and remote
	// launches start at once whatever the count, and count toward it.
	MaxRunning int

	// beforeLaunchDelivery, set by a test, runs after a launch has started
	// its agent and before it records the prompt's delivery.
	beforeLaunchDelivery func(*process)
}

// LaunchRequest is the intent to run one agent.
type LaunchRequest struct {
	OwnerEntity eventstore.OwnerEntity
	OwnerID     string
	// Seed makes the execution id deterministic; a random one when empty.
	Seed string
	// Agent is the adapter id: generic, claude-code, codex, copilot.
	Agent string
	// Command overrides the adapter's program (required for generic).
	Command []string
	// Prompt is the first instruction; recorded as a message before delivery.
	Prompt  string
	Posture eventstore.Posture
	// Shape is the session shape for agents with a provider session; the
	// adapter's default (conversation) when empty.
	Shape eventstore.SessionShape
	Dir   string
	Env   []string
	// ForkedFrom, Resumes and SessionID are the new journal's links to
	// the one it forks or resumes (fork.go); SessionID is the new
	// execution's own when empty.
	ForkedFrom *eventstore.ForkLink
	Resumes    *eventstore.ResumeLink
	SessionID  string
	// Continue makes the agent CLI continue one of its own sessions:
	// resume it, or fork it at a message.
	Continue *Continuation
	// Restored is how a fork got its working directory, journaled right
	// after the header.
	Restored *eventstore.RestoreAttempted
	// Timeout is the run's time limit from the launch, recorded in the
	// header; when it passes the run is stopped as Stop stops it, and
	// its end recorded as an interruption (timeout). None when 0; at most
	// MaxTimeout.
	Timeout time.Duration
	// Dispatch is where the launch was asked for and how it runs, recorded
	// in the header; nil runs it as interactive. Queued and scheduled
	// launches wait in the runtime's queue (dispatch.go).
	Dispatch *eventstore.DispatchContext
	// refused journals the execution (header, then Restored) and ends it
	// failed with this reason, starting no process: a fork refused for its
	// workspace is still a branch of the DAG.
	refused string
}

// Runtime launches agent processes and keeps their journals: header first,
// messages and deliveries, observations from markers and provider output,
// and lifecycle transitions when processes exit.
type Runtime struct {
	cfg Config

	mu   sync.Mutex
	live map[string]*process
	wg   sync.WaitGroup
	// detach ends when Close leaves supervised agents running: their
	// output readers stop.
	detach     context.Context
	stopDetach context.CancelFunc

	// host is this runtime's directory in cfg.HostDir, once a launch
	// created it (hosted.go).
	hostMu sync.Mutex
	host   *host

	// The queue (dispatch.go), guarded by mu: the runs waiting in order,
	// those being started, the timer of the next scheduled one, and
	// whether Close stopped it. starts counts the starts under way.
	queue       []*queuedRun
	starting    map[string]chan struct{}
	wake        *time.Timer
	queueClosed bool
	starts      sync.WaitGroup
}

// NewRuntime returns a runtime over a store.
func NewRuntime(cfg Config) *Runtime {
	if cfg.StopGrace == 0 {
		cfg.StopGrace = 5 * time.Second
	}
	if cfg.MaxLine == 0 {
		cfg.MaxLine = 1 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	rt := &Runtime{cfg: cfg, live: map[string]*process{}, starting: map[string]chan struct{}{}}
	rt.detach, rt.stopDetach = context.WithCancel(context.Background())
	return rt
}

// process is one live execution: the agent process running it, or, for a
// CLI that takes one turn per process, the processes of its turns one
// after the other.
type process struct {
	ref eventstore.Reference
	// checkpoints is the journal folded for the turns' checkpoints.
	checkpoints checkpointFold
	adapter     Adapter
	driver      Driver
	descriptor  eventstore.ProtocolDescriptor
	shape       eventstore.SessionShape
	nonce       string
	env         []string
	dir         string
	// done is closed when the execution has ended and its end is recorded.
	done chan struct{}
	// source is the observation source of markers: provider-output on a
	// pipe, pty on a terminal lane.
	source eventstore.ObservationSource

	mu       sync.Mutex
	child    *child // the running process; nil between turns
	children int    // processes started
	stopping bool   // Stop signalled the process: its exit means cancelled
	killed   bool   // the grace ran out: exit means terminated
	closing  bool   // Stop closed stdin: a clean exit means completed
	leaving  bool   // Close leaves the execution to the next runtime: nothing more is recorded here
	shutdown bool   // Close stops it: the daemon is shutting down, not the operator stopping it
	ended    bool
	// limit is the timer of the run's time limit, and timedOut the limit
	// once it passed and stopped the run (timeout.go).
	limit    *time.Timer
	timedOut time.Duration
	// sessionID is the provider session the CLI named, which the next
	// turn resumes.
	sessionID string
	turns     int  // turns ended
	awaiting  bool // a turn ended and the next has not started
	// nextTurn is the prompt being delivered to start the next turn,
	// until that start is recorded.
	nextTurn string
	// turnMu orders a turn's start record before its end record: a fast
	// turn's output may end it before the delivery that started it has
	// finished recording.
	turnMu sync.Mutex

	// output keeps the execution's plain output, opened at its first
	// line; outputOff once it failed (said once in the log) or closed.
	outputMu  sync.Mutex
	output    *outputlog.Writer
	outputOff bool

	// snaps takes the workspace snapshots; nil when they are off.
	snaps *snapshots
}

// child is one process of an execution, on pipes or on a terminal lane.
type child struct {
	cmd *exec.Cmd
	// sup holds a supervised process; lines is its count of journaled
	// stdout lines (and of kept stderr lines), and replayed (replayedErr)
	// the count a runtime before this one journaled (kept)
	// (supervised.go).
	sup         *supervisor.Handle
	lines       *os.File
	replayed    int
	replayedErr int
	stdinMu     sync.Mutex
	stdin       io.WriteCloser // nil once closed, and for a CLI that gets /dev/null
	terminal    *terminal.Terminal
	// prefix keeps the ids of observations from different processes of one
	// execution apart.
	prefix  string
	turnEnd *provider.TurnEnd // guarded by process.mu
	// parser reads the process's provider output: its stdout and, for a
	// CLI that writes part of it elsewhere, its session log. parseMu keeps
	// the two in one order.
	parseMu sync.Mutex
	parser  provider.Parser
	// exited is closed once the process's end has been dealt with.
	exited chan struct{}
}

// write delivers structured input: stdin on a pipe lane, terminal input on
// a PTY lane.
func (c *child) write(data []byte) (eventstore.DeliveryTransport, error) {
	if c.terminal != nil {
		return eventstore.TransportPTY, c.terminal.Input(data)
	}
	if c.sup != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return eventstore.TransportAdapter, c.sup.Input(ctx, data)
	}
	c.stdinMu.Lock()
	defer c.stdinMu.Unlock()
	if c.stdin == nil {
		return eventstore.TransportAdapter, errors.New("the agent's input is closed")
	}
	_, err := c.stdin.Write(data)
	return eventstore.TransportAdapter, err
}

// closeInput closes the agent's stdin, which tells a CLI that reads its
// turns there that there are no more.
func (c *child) closeInput() {
	if c.sup != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.sup.CloseInput(ctx)
		return
	}
	c.stdinMu.Lock()
	defer c.stdinMu.Unlock()
	if c.stdin != nil {
		c.stdin.Close()
		c.stdin = nil
	}
}

// signal reaches the child's whole process group.
func (c *child) signal(sig syscall.Signal) error {
	if c.terminal != nil {
		return c.terminal.Signal(sig)
	}
	if c.sup != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return c.sup.Signal(ctx, sig)
	}
	return syscall.Kill(-c.cmd.Process.Pid, sig)
}

func (c *child) pid() int {
	if c.terminal != nil {
		return c.terminal.Pid()
	}
	if c.sup != nil {
		return c.sup.AgentPID()
	}
	return c.cmd.Process.Pid
}

// current returns the running child, nil between turns.
func (p *process) current() *child {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.child
}

// exit describes how a process ended.
type exit struct {
	success bool
	desc    string
	// lost: the process's end is unknown (its supervisor died).
	lost bool
}

// resolveShape picks the session shape of a launch.
func resolveShape(a Adapter, req LaunchRequest) (eventstore.SessionShape, error) {
	shapes := a.Shapes()
	switch {
	case len(shapes) == 0 && req.Shape != "":
		return "", fmt.Errorf("%w: the %s agent has no provider session, so it takes no session shape (got %q)", ErrBadLaunch, a.ID(), req.Shape)
	case len(shapes) == 0:
		return "", nil
	case req.Shape == "":
		return shapes[0], nil
	case !slices.Contains(shapes, req.Shape):
		return "", fmt.Errorf("%w: unknown session shape %q for %s (want one of: %s)", ErrBadLaunch, req.Shape, a.ID(), joinShapes(shapes))
	}
	return req.Shape, nil
}

func joinShapes(shapes []eventstore.SessionShape) string {
	out := make([]string, len(shapes))
	for i, s := range shapes {
		out[i] = string(s)
	}
	return strings.Join(out, ", ")
}

// Launch writes the journal header and only then starts the agent. If the
// header cannot be written no process is started. A launch whose dispatch
// mode is queued or scheduled is journaled and queued instead (dispatch.go):
// it starts when a slot under the runtime's limit frees, and a scheduled
// one not before its time.
func (rt *Runtime) Launch(ctx context.Context, req LaunchRequest) (eventstore.Reference, error) {
	pl, err := rt.plan(req)
	if err != nil {
		return pl.ref, err
	}
	ref, req := pl.ref, pl.req
	waits := req.Dispatch != nil && req.Dispatch.DispatchMode.Waits()
	if waits {
		// Kept before the journal: a crash in between leaves a file whose
		// journal is missing, which the next runtime drops, never a
		// journal waiting for a start nothing remembers.
		if err := rt.keepQueued(pl); err != nil {
			return ref, fmt.Errorf("launch %s: queue it: %w", ref.AgentExecutionID, err)
		}
	}
	if _, err := rt.cfg.Store.EnsureJournal(ctx, ref, pl.header); err != nil {
		if waits {
			rt.forgetQueued(ref.AgentExecutionID)
		}
		return ref, fmt.Errorf("launch %s: the journal header could not be written, so no process was started: %w", ref.AgentExecutionID, err)
	}
	if r := req.Restored; r != nil {
		r.RecordID = eventstore.RecordID(ref.JournalID, eventstore.KindRestore, eventstore.NaturalKey(r))
		if _, err := rt.cfg.Store.Append(ctx, ref, r); err != nil {
			rt.failLaunch(ref, "the workspace restore was not recorded: "+err.Error())
			return ref, fmt.Errorf("launch %s: %w", ref.AgentExecutionID, err)
		}
	}
	if req.refused != "" {
		rt.failLaunch(ref, req.refused)
		return ref, nil
	}
	// The prompt is recorded before the process starts: a prompt the
	// journal refuses (too large, say) fails the launch with nothing run.
	var prompt accepted
	if req.Prompt != "" {
		promptIn := pl.promptInput()
		if prompt, err = rt.accept(ctx, ref, pl.desc, &promptIn); err != nil {
			if waits {
				rt.forgetQueued(ref.AgentExecutionID)
			}
			rt.failLaunch(ref, "the prompt was not recorded: "+err.Error())
			return ref, fmt.Errorf("launch %s: %w", ref.AgentExecutionID, err)
		}
	}
	if waits {
		return ref, rt.enqueue(pl)
	}
	return ref, rt.start(ctx, pl, prompt)
}

// launchPlan is what a launch request comes to before anything is written:
// enough to journal it and to start its agent, now or, queued, later.
type launchPlan struct {
	req         LaunchRequest
	ref         eventstore.Reference
	adapter     Adapter
	driver      Driver
	shape       eventstore.SessionShape
	session     string
	desc        eventstore.ProtocolDescriptor
	header      *eventstore.Header
	onStdin     bool
	interactive bool
	// startNow: a CLI that reads its turns on stdin starts at once; one
	// that takes its prompt on the command line starts when it has one.
	startNow bool
	program  string
	args     []string
	// queuedAt is when a launch that waits was queued.
	queuedAt time.Time
}

// promptInput is the launch prompt as a message.
func (pl *launchPlan) promptInput() SendMessageInput {
	in := SendMessageInput{MessageID: "prompt", Type: "prompt", Source: eventstore.SourceOperator, launchArgument: !pl.onStdin}
	in.Payload, _ = json.Marshal(eventstore.MessagePayload{Text: pl.req.Prompt})
	return in
}

// plan checks a launch request and works out its journal header and
// command line; nothing is written.
func (rt *Runtime) plan(req LaunchRequest) (*launchPlan, error) {
	pl := &launchPlan{}
	adapter, err := NewAdapter(req.Agent)
	if err != nil {
		return pl, err
	}
	if req.Posture == "" {
		req.Posture = eventstore.PostureStructuredHeadless
	}
	if !slices.Contains(eventstore.Postures, req.Posture) {
		return pl, fmt.Errorf("launch: unknown posture %q (want one of: %s, %s, %s)", req.Posture,
			eventstore.PostureStructuredHeadless, eventstore.PostureStructuredInteractive, eventstore.PostureNativeTerminal)
	}
	interactive := req.Posture != eventstore.PostureStructuredHeadless
	if interactive && rt.cfg.Terminals == nil {
		return pl, fmt.Errorf("launch: posture %s needs a terminal lane, and this runtime has no terminal registry", req.Posture)
	}
	shape, err := resolveShape(adapter, req)
	if err != nil {
		return pl, err
	}
	if err := checkTimeout(req.Timeout); err != nil {
		return pl, err
	}
	if err := checkDispatch(req); err != nil {
		return pl, err
	}
	driver := adapter.NewDriver(req.Command, shape)
	var session string
	if req.Continue != nil {
		if err := continueSession(driver, adapter.ID(), *req.Continue); err != nil {
			return pl, err
		}
		session = req.Continue.Session
	}
	onStdin := driver.TurnsOnStdin()
	switch {
	case !onStdin && shape == eventstore.ShapeOneShot && strings.TrimSpace(req.Prompt) == "":
		return pl, fmt.Errorf("%w: a one-shot %s execution needs a prompt", ErrBadLaunch, adapter.ID())
	case interactive && conversing(driver):
		// The protocol owns the agent's stdin and stdout: a terminal lane
		// would hand them to a person and a terminal emulator instead.
		return pl, fmt.Errorf("%w: %s speaks a protocol on its stdin and stdout, so it runs headless only (posture %s, got %s)",
			ErrBadLaunch, adapter.ID(), eventstore.PostureStructuredHeadless, req.Posture)
	case !onStdin && interactive && shape == eventstore.ShapeConversation:
		return pl, fmt.Errorf("%w: %s runs each turn as a process of its own, so a terminal lane takes shape %s only (got %s)",
			ErrBadLaunch, adapter.ID(), eventstore.ShapeOneShot, shape)
	}
	startNow := onStdin || req.Prompt != ""
	var program string
	var args []string
	if startNow {
		argPrompt := ""
		if !onStdin {
			argPrompt = req.Prompt
		}
		if program, args, err = driver.Start(argPrompt, session); err != nil {
			return pl, fmt.Errorf("%w: %w", ErrBadLaunch, err)
		}
	}
	if req.Seed == "" {
		req.Seed = randomHex(8)
	}
	id, err := eventstore.NewAgentExecutionID(req.OwnerEntity, req.OwnerID, req.Seed)
	if err != nil {
		return pl, fmt.Errorf("launch: %w", err)
	}
	ref, err := eventstore.NewReference(req.OwnerEntity, req.OwnerID, id)
	if err != nil {
		return pl, fmt.Errorf("launch: %w", err)
	}
	transports := []eventstore.SignalTransport{eventstore.SignalViaStdoutMarker}
	if adapter.Provider() != "" {
		transports = append(transports, eventstore.SignalViaProviderOutput)
	}
	desc := eventstore.ProtocolDescriptor{Posture: req.Posture, Messages: adapter.Messages(shape),
		Signals: eventstore.SurfacedSignalTypes(), SignalTransports: transports, SessionShape: shape, Approvals: adapter.Approvals()}
	if req.Dir == "" {
		req.Dir, _ = os.Getwd()
	}
	lane := eventstore.LaneStdio
	if interactive {
		lane = eventstore.LanePTY
	}
	header := &eventstore.Header{AgentID: adapter.ID(), ProtocolDescriptor: desc,
		TransportState: &eventstore.TransportState{StructuredLane: lane, TerminalAttached: interactive}, WorkingDirectory: req.Dir,
		Command: req.Command, SessionID: req.SessionID, ForkedFrom: req.ForkedFrom, Resumes: req.Resumes, TimeoutMs: timeoutMs(req.Timeout),
		DispatchContext: req.Dispatch}
	*pl = launchPlan{req: req, ref: ref, adapter: adapter, driver: driver, shape: shape, session: session, desc: desc, header: header,
		onStdin: onStdin, interactive: interactive, startNow: startNow, program: program, args: args}
	return pl, nil
}

// start starts a journaled launch's agent and delivers its prompt, if it
// has one (recorded as accepted already).
func (rt *Runtime) start(ctx context.Context, pl *launchPlan, prompt accepted) error {
	ref, req, interactive := pl.ref, pl.req, pl.interactive
	nonce, err := marker.NewNonce()
	if err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	env := rt.agentEnv(ref, req.Env, nonce)
	p := &process{ref: ref, adapter: pl.adapter, driver: pl.driver, descriptor: pl.desc, shape: pl.shape, nonce: nonce,
		env: env, dir: req.Dir, done: make(chan struct{}), source: eventstore.ObservedProviderOutput, sessionID: pl.session}
	if interactive {
		p.source = eventstore.ObservedPTY
	}
	rt.startSnapshots(p)
	startErr := rt.markHosted(ref)
	if startErr == nil && rt.takeOver(p, interactive) {
		startErr = rt.writeLaunchInfo(p, req)
	}
	switch {
	case startErr != nil:
		startErr = fmt.Errorf("record it as hosted in %s and %s: %w", rt.cfg.HostDir, rt.cfg.SupervisedDir, startErr)
	case !pl.startNow:
	case interactive:
		startErr = rt.startTerminal(ctx, p, pl.program, pl.args)
	case rt.supervised(p):
		startErr = rt.startSupervised(ctx, p, pl.program, pl.args, pl.onStdin)
	default:
		startErr = rt.startPipes(p, pl.program, pl.args, pl.onStdin)
	}
	if startErr != nil {
		if prompt.stored != nil {
			d := &eventstore.MessageDelivery{MessageID: prompt.stored.MessageID, Status: eventstore.DeliveryFailed,
				Transport: eventstore.TransportNone, Reason: "the agent did not start"}
			if _, err := rt.cfg.Store.Append(ctx, ref, d); err != nil {
				rt.cfg.Logger.Error("record delivery", "execution", ref.AgentExecutionID, "err", err)
			}
		}
		rt.failLaunch(ref, "start: "+startErr.Error())
		return fmt.Errorf("launch %s: start %s: %w", ref.AgentExecutionID, pl.program, startErr)
	}
	if !pl.startNow {
		rt.register(p)
	}
	rt.armTimeout(p, time.Duration(pl.header.TimeoutMs)*time.Millisecond)
	if pl.shape == eventstore.ShapeConversation && req.Prompt == "" {
		// Nothing to do until the operator says what.
		p.mu.Lock()
		p.awaiting = true
		p.mu.Unlock()
		if err := rt.appendState(ref, "turn:waiting-first", &eventstore.StateChanged{Attention: eventstore.AttentionAwaitingOperator,
			Reason: "waiting for the first prompt"}); err != nil {
			rt.cfg.Logger.Error("record waiting", "execution", ref.AgentExecutionID, "err", err)
		}
	}
	if prompt.stored != nil {
		if rt.cfg.beforeLaunchDelivery != nil {
			rt.cfg.beforeLaunchDelivery(p)
		}
		if _, err := rt.deliverAccepted(ctx, ref, p, prompt, !pl.onStdin); err != nil {
			return err
		}
	}
	return nil
}

// agentEnv is the environment of an execution's processes: this one's,
// the launch's own, the marker nonce and the execution id, and what
// Config.LaunchEnv adds.
func (rt *Runtime) agentEnv(ref eventstore.Reference, launch []string, nonce string) []string {
	env := append(append(os.Environ(), launch...),
		marker.NonceEnv+"="+nonce, "AGENTJOURNAL_EXECUTION_ID="+ref.AgentExecutionID)
	if rt.cfg.LaunchEnv != nil {
		env = append(env, rt.cfg.LaunchEnv(ref)...)
	}
	return env
}

// failLaunch records that a launch failed after its header was written.
func (rt *Runtime) failLaunch(ref eventstore.Reference, reason string) {
	if err := rt.appendState(ref, "lifecycle:final", &eventstore.StateChanged{Lifecycle: eventstore.LifecycleFailed, Reason: reason}); err == nil {
		rt.unmarkHosted(ref.AgentExecutionID)
	}
}

// register makes an execution live here and records that it runs, once.
func (rt *Runtime) register(p *process) {
	rt.mu.Lock()
	rt.live[p.ref.AgentExecutionID] = p
	rt.mu.Unlock()
	reason := "waiting for a prompt"
	if c := p.current(); c != nil {
		reason = fmt.Sprintf("process %d started", c.pid())
	}
	if err := rt.appendState(p.ref, "lifecycle:running", &eventstore.StateChanged{Lifecycle: eventstore.LifecycleRunning,
		Attention: eventstore.AttentionAutonomous, Activity: eventstore.ActivityIdle, Reason: reason}); err != nil {
		rt.cfg.Logger.Error("record running", "execution", p.ref.AgentExecutionID, "err", err)
	}
}

// newChild counts a process of the execution and names its output ids: the
// first keeps the plain prefixes, later ones are numbered.
func (p *process) newChild() *child {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.children++
	c := &child{prefix: "out", exited: make(chan struct{})}
	if p.children > 1 {
		c.prefix = fmt.Sprintf("out%d", p.children)
	}
	if p.adapter.Provider() != "" {
		c.parser, _ = provider.New(p.adapter.Provider(), c.prefix)
	}
	return c
}

// startPipes runs a process of the execution on pipes: structured input on
// stdin (or /dev/null for a CLI that reads none), markers and provider
// events on stdout.
func (rt *Runtime) startPipes(p *process, program string, args []string, withStdin bool) error {
	cmd := exec.Command(program, args...)
	cmd.Dir = p.dir
	cmd.Env = p.env
	// A process group of its own, so Stop reaches the agent's children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdin io.WriteCloser
	var err error
	if withStdin {
		if stdin, err = cmd.StdinPipe(); err != nil {
			return err
		}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	// A resumed session's log already holds the turns before: only what
	// this process adds is read.
	sideLog, sideFrom := "", int64(0)
	if sl, ok := p.driver.(sideLogger); ok {
		if sideLog = sl.SideLog(p.env); sideLog != "" {
			if info, err := os.Stat(sideLog); err == nil {
				sideFrom = info.Size()
			}
		}
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	rt.noteTurnProcess(p, cmd.Process.Pid)
	c := p.newChild()
	c.cmd, c.stdin = cmd, stdin
	p.mu.Lock()
	p.child = c
	first := p.children == 1
	p.mu.Unlock()
	if first {
		rt.register(p)
	}
	rt.converse(p, c)
	var pumps sync.WaitGroup
	stdoutDone := make(chan struct{})
	pumps.Add(2)
	rt.wg.Add(1)
	go func() {
		defer pumps.Done()
		defer close(stdoutDone)
		rt.pump(p, c, stdout, true)
	}()
	go func() {
		defer pumps.Done()
		rt.pump(p, c, stderr, false)
	}()
	if sideLog != "" {
		pumps.Add(1)
		go func() {
			defer pumps.Done()
			rt.tail(p, c, sideLog, sideFrom, stdoutDone)
		}()
	}
	go func() {
		defer rt.wg.Done()
		// Wait only after the pipes are drained, as exec.Cmd requires.
		pumps.Wait()
		hangup(p)
		rt.flush(p, c)
		werr := cmd.Wait()
		rt.forgetTurnProcess(p)
		c.closeInput()
		ps := cmd.ProcessState
		switch {
		case ps != nil:
			rt.exited(p, c, exit{success: ps.Success(), desc: ps.String()})
		default:
			rt.exited(p, c, exit{desc: fmt.Sprint(werr)})
		}
	}()
	return nil
}

// startTerminal runs the agent on a PTY lane: the terminal is recorded,
// structured input is typed into it, and markers are read from its output.
func (rt *Runtime) startTerminal(ctx context.Context, p *process, program string, args []string) error {
	pr, pw := io.Pipe()
	var cols, rows uint16
	if rt.cfg.TerminalSize != nil {
		cols, rows = rt.cfg.TerminalSize()
	}
	t, err := rt.cfg.Terminals.Open(ctx, terminal.OpenOptions{
		AgentExecutionID: p.ref.AgentExecutionID, Command: program, Args: args, Env: p.env, Dir: p.dir,
		RecordingDir: rt.cfg.RecordingDir, Cols: cols, Rows: rows,
		// The pipe hands output to the line reader; it blocks only while
		// the journal is behind, which slows the agent instead of growing
		// memory.
		OnOutput: func(data []byte) {
			if rt.cfg.TerminalOutput != nil {
				rt.cfg.TerminalOutput.Write(data)
			}
			pw.Write(data)
		},
	})
	if err != nil {
		return err
	}
	c := p.newChild()
	c.terminal = t
	p.mu.Lock()
	p.child = c
	p.mu.Unlock()
	rt.register(p)
	pumped := make(chan struct{})
	rt.wg.Add(1)
	go func() {
		defer close(pumped)
		rt.pump(p, c, pr, true)
	}()
	go func() {
		defer rt.wg.Done()
		code, werr := t.Wait(context.Background())
		pw.Close()
		<-pumped
		rt.flush(p, c)
		switch {
		case werr != nil:
			rt.exited(p, c, exit{desc: werr.Error()})
		case code > 128:
			rt.exited(p, c, exit{desc: fmt.Sprintf("signal: %s", syscall.Signal(code-128))})
		default:
			rt.exited(p, c, exit{success: code == 0, desc: fmt.Sprintf("exit status %d", code)})
		}
	}()
	return nil
}

// TerminalID returns the terminal lane of a live interactive execution.
func (rt *Runtime) TerminalID(id string) (string, bool) {
	rt.mu.Lock()
	p, ok := rt.live[id]
	rt.mu.Unlock()
	if !ok {
		return "", false
	}
	if c := p.current(); c != nil && c.terminal != nil {
		return c.terminal.ID(), true
	}
	return "", false
}

// TerminalInput types raw input into an execution's terminal lane: the
// native terminal escape hatch. It reaches the PTY and the recording and
// never the journal.
func (rt *Runtime) TerminalInput(id string, data []byte) error {
	rt.mu.Lock()
	p, ok := rt.live[id]
	rt.mu.Unlock()
	var c *child
	if ok {
		c = p.current()
	}
	if c == nil || c.terminal == nil {
		return fmt.Errorf("terminal input for %s: %w (no terminal lane)", id, ErrNotRunning)
	}
	return c.terminal.Input(data)
}

// pump reads one output stream line by line: stdout lines may be markers or
// provider events; everything is shown on Output. Memory is bounded by
// MaxLine whatever the agent prints.
func (rt *Runtime) pump(p *process, c *child, r io.Reader, isStdout bool) {
	br := bufio.NewReaderSize(r, 64*1024)
	line := make([]byte, 0, 4096)
	n := 0
	truncated := false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) <= rt.cfg.MaxLine {
			line = append(line, chunk...)
		} else {
			truncated = true
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(line) > 0 {
			n++
			if rt.cfg.Output != nil && (p.source != eventstore.ObservedPTY || rt.cfg.TerminalOutput == nil) {
				rt.cfg.Output.Write(line)
				if line[len(line)-1] != '\n' {
					rt.cfg.Output.Write([]byte{'\n'})
				}
			}
			switch {
			case isStdout:
				rt.handleLine(p, c, n, bytes.TrimRight(line, "\r\n"), truncated)
			case n > c.replayedErr:
				// A line a runtime before this one read is kept already.
				rt.keep(p, outputlog.Stderr, bytes.TrimRight(line, "\r\n"))
				c.noteStderr(n)
			}
		}
		line, truncated = line[:0], false
		if err != nil {
			return
		}
	}
}

// stdoutID is the observation id of a child's stdout line that is not
// provider output: "stdout-N" for the first process, "<prefix>-stdout-N"
// for later ones.
func stdoutID(c *child, n int) string {
	if c.prefix == "out" {
		return fmt.Sprintf("stdout-%d", n)
	}
	return fmt.Sprintf("%s-stdout-%d", c.prefix, n)
}

func (rt *Runtime) handleLine(p *process, c *child, n int, line []byte, truncated bool) {
	if n <= c.replayed {
		rt.replayLine(p, c, line, truncated)
		return
	}
	defer c.noteHandled(n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if truncated {
		rt.record(ctx, p.ref, &eventstore.Observation{ObservationID: stdoutID(c, n), Source: p.source,
			Confidence: eventstore.ConfidenceDiagnostic, Signal: eventstore.NewSignal(&eventstore.DiagnosticSignal{
				Code: "line-too-long", Message: fmt.Sprintf("output line %d is longer than %d bytes and was cut", n, rt.cfg.MaxLine)})})
		// The journal has only the diagnostic: the line's start is kept.
		rt.keep(p, outputlog.Stdout, line)
		return
	}
	if bytes.HasPrefix(line, []byte(marker.Prefix)) {
		parsed := marker.Parse(line, p.nonce)
		if parsed.Result != marker.NotMarker {
			o := marker.Observation(parsed, line, stdoutID(c, n), p.source)
			rt.record(ctx, p.ref, o)
			rt.notifyInputRequest(p, o)
			return
		}
	}
	if c.parser == nil {
		rt.keep(p, outputlog.Stdout, line)
		return
	}
	p.driver.Line(line)
	c.parseMu.Lock()
	defer c.parseMu.Unlock()
	events := c.parser.Parse(line)
	if notJSON(events) {
		rt.keep(p, outputlog.Stdout, line)
	}
	rt.handleEvents(ctx, p, c, events)
}

// notJSON reports whether the provider parser found a line is no JSON, so
// no provider event: a CLI's own plain text (a warning, a crash's trace).
// Its diagnostic holds only the line's start.
func notJSON(events []provider.Event) bool {
	for _, ev := range events {
		if ev.Observation == nil {
			continue
		}
		if d, ok := signalPayload(ev.Observation).(*eventstore.DiagnosticSignal); ok && d.Code == provider.CodeMalformedLine {
			return true
		}
	}
	return false
}

// keep writes a plain output line of a process on pipes to the
// execution's output file. A terminal lane's output is in its recording.
// A failure to keep output is logged once and ends the keeping: the agent
// and its journal go on.
func (rt *Runtime) keep(p *process, stream string, line []byte) {
	if rt.cfg.OutputDir == "" || p.source == eventstore.ObservedPTY {
		return
	}
	p.outputMu.Lock()
	defer p.outputMu.Unlock()
	if p.outputOff {
		return
	}
	var err error
	if p.output == nil {
		p.output, err = outputlog.Open(rt.cfg.OutputDir, p.ref.AgentExecutionID, outputlog.Options{Limit: rt.cfg.OutputLimit, Now: rt.cfg.Now})
	}
	if err == nil {
		err = p.output.Write(stream, line)
	}
	if err != nil {
		rt.cfg.Logger.Error("keep the agent's output", "execution", p.ref.AgentExecutionID, "err", err)
		p.closeOutput()
	}
}

// closeOutput closes the execution's output file; nothing more is kept.
// The caller holds outputMu.
func (p *process) closeOutput() {
	p.outputOff = true
	if p.output != nil {
		p.output.Close()
		p.output = nil
	}
}

// replayLine feeds a line whose records a runtime before this one
// journaled to the driver and the parser, so that they know what they knew
// then; of what the parser finds, only what this process keeps in memory
// (the provider session, the turns ended) is taken.
func (rt *Runtime) replayLine(p *process, c *child, line []byte, truncated bool) {
	if truncated || c.parser == nil || (bytes.HasPrefix(line, []byte(marker.Prefix)) && marker.Parse(line, p.nonce).Result != marker.NotMarker) {
		return
	}
	p.driver.Line(line)
	c.parseMu.Lock()
	defer c.parseMu.Unlock()
	for _, ev := range c.parser.Parse(line) {
		switch {
		case ev.Session != nil && ev.Session.ID != "":
			p.mu.Lock()
			p.sessionID = ev.Session.ID
			p.mu.Unlock()
		case ev.TurnEnd != nil:
			te := *ev.TurnEnd
			p.mu.Lock()
			c.turnEnd = &te
			p.turns++
			p.awaiting = p.shape == eventstore.ShapeConversation
			p.mu.Unlock()
		}
	}
}

// handleEvents records what the parser found; the caller holds parseMu.
func (rt *Runtime) handleEvents(ctx context.Context, p *process, c *child, events []provider.Event) {
	for _, ev := range events {
		switch {
		case ev.Observation != nil:
			if n := ev.Observation.Native; n == nil || n.SessionID == "" {
				// The CLI names its session later in its output than
				// this line (Copilot CLI, in its last line); the id the
				// driver gave it, or learned, is the same.
				if id := rt.sessionOf(p); id != "" {
					if n == nil {
						n = &eventstore.NativeIDs{}
					}
					n.SessionID = id
					ev.Observation.Native = n
				}
			}
			rt.record(ctx, p.ref, ev.Observation)
			rt.notifyInputRequest(p, ev.Observation)
		case ev.Activity != nil:
			// Record ids are message ids across the whole log: tie the
			// parser's id to this journal.
			ev.Activity.RecordID = eventstore.RecordID(p.ref.JournalID, eventstore.KindActivity, ev.Activity.RecordID)
			if _, err := rt.cfg.Store.Append(ctx, p.ref, ev.Activity); err != nil {
				rt.cfg.Logger.Error("record activity", "execution", p.ref.AgentExecutionID, "err", err)
			}
		case ev.Session != nil:
			// The version only matters to the parser's diagnostics.
			if ev.Session.ID != "" {
				p.mu.Lock()
				p.sessionID = ev.Session.ID
				p.mu.Unlock()
			}
		case ev.TurnEnd != nil:
			rt.turnEnded(p, c, *ev.TurnEnd)
		case ev.Commands != nil:
			rt.recordAdvertised(ctx, p, ev.Commands.List)
		}
	}
}

// notifyInputRequest hands a recorded question or permission request to
// OnInputRequest, on a goroutine of its own.
func (rt *Runtime) notifyInputRequest(p *process, o *eventstore.Observation) {
	ni, ok := signalPayload(o).(*eventstore.NeedsInputSignal)
	if !ok || rt.cfg.OnInputRequest == nil {
		return
	}
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		rt.cfg.OnInputRequest(p.ref, ni)
	}()
}

// sessionOf is the provider session id of an execution: the one its output
// said, else the one its driver chose.
func (rt *Runtime) sessionOf(p *process) string {
	p.mu.Lock()
	id := p.sessionID
	p.mu.Unlock()
	if id != "" {
		return id
	}
	if s, ok := p.driver.(interface{ Session() string }); ok {
		return s.Session()
	}
	return ""
}

// flush records what the parser held back once its output has ended.
func (rt *Runtime) flush(p *process, c *child) {
	f, ok := c.parser.(provider.Flusher)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.parseMu.Lock()
	defer c.parseMu.Unlock()
	rt.handleEvents(ctx, p, c, f.Flush())
}

// sideLogger is a driver whose CLI writes part of its provider output to a
// file instead of stdout (Copilot CLI's token usage is only in its session
// log). SideLog returns the file's path for the process's environment, ""
// when it cannot tell.
type sideLogger interface {
	SideLog(env []string) string
}

// sideLogPoll is how often a side log is read while its process runs.
const sideLogPoll = 100 * time.Millisecond

// tail feeds a process's side log to its parser, as the file grows, until
// its stdout has ended; then it reads what is left. The file may appear
// only after the process starts. Lines longer than MaxLine are skipped.
func (rt *Runtime) tail(p *process, c *child, path string, from int64, stdoutDone <-chan struct{}) {
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	var partial []byte
	skipping := false
	buf := make([]byte, 64*1024)
	read := func() {
		if f == nil {
			var err error
			if f, err = os.Open(path); err != nil {
				return
			}
			if _, err := f.Seek(from, io.SeekStart); err != nil {
				f.Close()
				f = nil
				return
			}
		}
		for {
			n, err := f.Read(buf)
			data := buf[:n]
			for len(data) > 0 {
				i := bytes.IndexByte(data, '\n')
				if i < 0 {
					if len(partial)+len(data) > rt.cfg.MaxLine {
						partial, skipping = partial[:0], true
					} else if !skipping {
						partial = append(partial, data...)
					}
					break
				}
				if !skipping && len(partial)+i <= rt.cfg.MaxLine {
					rt.handleSide(p, c, append(partial, data[:i]...))
				}
				partial, skipping = partial[:0], false
				data = data[i+1:]
			}
			if n == 0 || err != nil {
				return
			}
		}
	}
	t := time.NewTicker(sideLogPoll)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			read()
		case <-stdoutDone:
			read()
			return
		}
	}
}

// handleSide parses one line of a side log: provider output that was not
// on stdout, so it is neither shown nor read for markers.
func (rt *Runtime) handleSide(p *process, c *child, line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.parseMu.Lock()
	defer c.parseMu.Unlock()
	rt.handleEvents(ctx, p, c, c.parser.Parse(line))
}

// turnEnded follows the end of a turn: a one-shot execution that reads its
// turns on stdin is told there are no more, and a conversation waits for
// the operator's next message. The runtime records that wait itself, in
// the order it happens, so that a turn started right after it is never
// overtaken by it.
func (rt *Runtime) turnEnded(p *process, c *child, te provider.TurnEnd) {
	p.turnMu.Lock()
	defer p.turnMu.Unlock()
	p.mu.Lock()
	pending := p.nextTurn
	p.mu.Unlock()
	if pending != "" {
		// The turn ended before the delivery that started it recorded the
		// start: record it first, so the journal says start, then end.
		rt.recordTurnStart(p, pending)
	}
	p.mu.Lock()
	c.turnEnd = &te
	p.turns++
	n := p.turns
	conversation := p.shape == eventstore.ShapeConversation
	if conversation {
		p.awaiting = true
	}
	p.mu.Unlock()
	switch {
	case p.shape == eventstore.ShapeOneShot && p.driver.TurnsOnStdin():
		c.closeInput()
	case conversation:
		reason := fmt.Sprintf("turn %d ended; waiting for the next message", n)
		if te.Failed {
			reason = fmt.Sprintf("turn %d failed: %s; waiting for the next message", n, clipReason(te.Reason))
		}
		if err := rt.appendState(p.ref, fmt.Sprintf("turn:%d:end", n), &eventstore.StateChanged{
			Attention: eventstore.AttentionAwaitingOperator, Activity: eventstore.ActivityIdle, Reason: reason}); err != nil {
			rt.cfg.Logger.Error("record turn end", "execution", p.ref.AgentExecutionID, "err", err)
		}
	}
	rt.snapshotLater(p, fmt.Sprintf("turn-%d", n))
	rt.checkpointTurn(p, n)
}

func signalPayload(o *eventstore.Observation) eventstore.SignalPayload {
	if o.Signal == nil {
		return nil
	}
	return o.Signal.Payload
}

func clipReason(s string) string {
	return textclip.Bytes(s, 200)
}

func (rt *Runtime) record(ctx context.Context, ref eventstore.Reference, o *eventstore.Observation) {
	if _, err := rt.cfg.Store.Append(ctx, ref, o); err != nil {
		rt.cfg.Logger.Error("record observation", "execution", ref.AgentExecutionID, "observation", o.ObservationID, "err", err)
	}
}

// exited follows the end of one process of an execution: it records the
// lifecycle transition it means, or, for a conversation whose turns are
// processes, that the execution waits for its next turn.
func (rt *Runtime) exited(p *process, c *child, e exit) {
	defer close(c.exited)
	p.mu.Lock()
	p.child = nil
	stopping, killed, closing, te := p.stopping, p.killed, p.closing, c.turnEnd
	shutdown, limit := p.shutdown, p.timedOut
	between := !p.driver.TurnsOnStdin() && p.shape == eventstore.ShapeConversation && te != nil && !stopping && !killed && !closing
	leaving := p.leaving
	p.mu.Unlock()
	if between || leaving {
		// The turn's result is in; the session goes on with the next
		// message.
		return
	}
	rt.snapshotNow(p, "exit")
	st := &eventstore.StateChanged{}
	switch {
	case e.lost:
		st.Lifecycle, st.Reason = eventstore.LifecycleTerminated, "system_restart: "+e.desc
	case killed:
		st.Lifecycle, st.Reason = eventstore.LifecycleTerminated, fmt.Sprintf("killed after a %s grace period", rt.cfg.StopGrace)
	case stopping:
		st.Lifecycle, st.Reason = eventstore.LifecycleCancelled, "stopped"
	case !e.success && te != nil && te.Failed:
		st.Lifecycle, st.Reason = eventstore.LifecycleFailed, clipReason(te.Reason)+" ("+e.desc+")"
	case !e.success:
		st.Lifecycle, st.Reason = eventstore.LifecycleFailed, e.desc
	case closing:
		st.Lifecycle, st.Reason = eventstore.LifecycleCompleted, "stopped by the operator; "+e.desc
	case te != nil && te.Failed:
		st.Lifecycle, st.Reason = eventstore.LifecycleFailed, clipReason(te.Reason)
	default:
		st.Lifecycle, st.Reason = eventstore.LifecycleCompleted, e.desc
	}
	// A run its time limit stopped says so, whichever way it ended.
	timedOut := limit > 0 && (stopping || killed || closing)
	if timedOut {
		st.Reason = timedOutReason(limit) + "; " + strings.TrimPrefix(st.Reason, "stopped by the operator; ")
	}
	if reason, ok := interruptionOf(e, stopping, killed, shutdown, timedOut); ok {
		detail := e.desc
		if timedOut {
			detail = timedOutReason(limit) + " (" + e.desc + ")"
		}
		rt.interrupted(p, reason, detail)
	}
	rt.end(p, st)
}

// end records how the execution ended and lets go of it.
func (rt *Runtime) end(p *process, st *eventstore.StateChanged) {
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return
	}
	p.ended = true
	p.mu.Unlock()
	p.stopLimit()
	st.Attention, st.Activity, st.CurrentInputRequestID = eventstore.AttentionNone, eventstore.ActivityIdle, eventstore.ClearInputRequest()
	if err := rt.appendState(p.ref, "lifecycle:final", st); err != nil {
		// The file stays: Recover ends the journal after a restart.
		rt.cfg.Logger.Error("record exit", "execution", p.ref.AgentExecutionID, "err", err)
	} else {
		rt.unmarkHosted(p.ref.AgentExecutionID)
		rt.forgetLaunch(p.ref.AgentExecutionID)
	}
	p.outputMu.Lock()
	p.closeOutput()
	p.outputMu.Unlock()
	// Gone from live before done closes: whoever waited on done (Stop)
	// and then asks Done must hear that it is not live any more.
	rt.mu.Lock()
	delete(rt.live, p.ref.AgentExecutionID)
	rt.mu.Unlock()
	close(p.done)
	// A slot is free.
	rt.dispatch()
}

func (rt *Runtime) appendState(ref eventstore.Reference, key string, st *eventstore.StateChanged) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st.RecordID = eventstore.RecordID(ref.JournalID, eventstore.KindStateChanged, key)
	_, err := rt.cfg.Store.Append(ctx, ref, st)
	return err
}

// Done returns a channel closed when the execution has ended and its
// lifecycle is recorded; nil when it is not live here.
func (rt *Runtime) Done(id string) <-chan struct{} {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if p, ok := rt.live[id]; ok {
		return p.done
	}
	return nil
}

// IsRunning reports whether the execution has a live process here that has
// not begun to end: false from the moment its ending is being recorded,
// so that a reader who sees its final lifecycle never sees it running.
func (rt *Runtime) IsRunning(id string) bool {
	rt.mu.Lock()
	p, ok := rt.live[id]
	rt.mu.Unlock()
	if !ok {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.ended
}

// Stop ends an execution. One still queued ends cancelled at once, its
// process never started (dispatch.go). A conversation between turns ends at once,
// completed. A CLI that reads its turns on stdin is first asked to finish
// by closing its input, and ends completed when it exits cleanly within the
// grace period. Otherwise, and after that, SIGTERM goes to its process
// group, then SIGKILL after the grace period; the journal records
// cancelled, or terminated when the process had to be killed.
func (rt *Runtime) Stop(ctx context.Context, id string) error {
	if q, ok := rt.dequeue(id); ok {
		return rt.cancelQueued(ctx, q)
	}
	if err := rt.waitStarting(ctx, id); err != nil {
		return fmt.Errorf("stop %s: %w", id, err)
	}
	rt.mu.Lock()
	p, ok := rt.live[id]
	rt.mu.Unlock()
	if !ok {
		return fmt.Errorf("stop %s: %w", id, ErrNotRunning)
	}
	return rt.stop(ctx, p)
}

// stop ends a live execution as Stop says; its time limit stops it the
// same way.
func (rt *Runtime) stop(ctx context.Context, p *process) error {
	t := time.NewTimer(rt.cfg.StopGrace)
	defer t.Stop()
	p.mu.Lock()
	c := p.child
	// A CLI that reads its turns on stdin is asked to finish by closing it;
	// a turn process whose result is in is let finish by itself.
	graceful := c != nil && c.terminal == nil && p.shape != "" && (p.driver.TurnsOnStdin() || c.turnEnd != nil)
	if graceful {
		p.closing = true
	}
	p.mu.Unlock()
	if c == nil {
		rt.endBetweenTurns(p)
		return nil
	}
	if graceful {
		hangup(p)
		c.closeInput()
		select {
		case <-p.done:
			return nil
		case <-t.C:
			t.Reset(rt.cfg.StopGrace)
		case <-ctx.Done():
		}
	}
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	_ = c.signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
	_ = c.signal(syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops every live process and waits for their records; with
// LeaveRunning, supervised ones run on and only their readers stop. Queued
// runs stay queued, in QueueDir, for the next runtime.
func (rt *Runtime) Close(ctx context.Context) error {
	rt.closeQueue()
	rt.mu.Lock()
	ids := make([]string, 0, len(rt.live))
	var leave, stop []*process
	for id, p := range rt.live {
		if rt.cfg.LeaveRunning && rt.takeOver(p, p.source == eventstore.ObservedPTY) {
			// Its hosted file and launch stay for the next runtime to
			// attach to it.
			leave = append(leave, p)
			continue
		}
		ids = append(ids, id)
		stop = append(stop, p)
	}
	rt.mu.Unlock()
	for _, p := range stop {
		p.mu.Lock()
		p.shutdown = true
		p.mu.Unlock()
	}
	for _, p := range leave {
		p.mu.Lock()
		p.leaving = true
		c := p.child
		p.mu.Unlock()
		p.stopLimit()
		if c != nil && c.sup == nil {
			// A turn's process is this one's child, and its output would
			// go with it: it ends, and the next runtime records the turn
			// lost. A supervised process runs on.
			_ = c.signal(syscall.SIGTERM)
		}
	}
	var errs []error
	for _, id := range ids {
		if err := rt.Stop(ctx, id); err != nil && !errors.Is(err, ErrNotRunning) {
			errs = append(errs, err)
		}
	}
	rt.stopDetach()
	rt.wg.Wait()
	for _, p := range leave {
		// The next runtime continues the file.
		p.outputMu.Lock()
		p.closeOutput()
		p.outputMu.Unlock()
	}
	errs = append(errs, rt.releaseHost())
	return errors.Join(errs...)
}

func (rt *Runtime) replay(ctx context.Context, ref eventstore.Reference) (*State, error) {
	st := &State{}
	for e, err := range rt.cfg.Store.ReadJournal(ctx, ref, 1) {
		if err != nil {
			return nil, fmt.Errorf("replay %s: %w", ref.AgentExecutionID, err)
		}
		if _, err := st.Apply(e.Record); err != nil {
			return nil, fmt.Errorf("replay %s: %w", ref.AgentExecutionID, err)
		}
	}
	return st, nil
}

// SendMessageInput is a structured message for an execution.
type SendMessageInput struct {
	// MessageID is kept when given (a retry with the same id gets the first
	// acknowledgement); one is assigned when empty.
	MessageID string
	Type      string
	Source    eventstore.MessageSource
	Payload   json.RawMessage
	// launchArgument marks the launch prompt of CLIs that take it as an
	// argument: it was delivered when the process started.
	launchArgument bool
}

// MessageAck acknowledges a message: its journal sequence and delivery.
type MessageAck struct {
	MessageID string                       `json:"messageId"`
	Sequence  uint64                       `json:"sequence"`
	Delivery  eventstore.DeliveryStatus    `json:"delivery"`
	Transport eventstore.DeliveryTransport `json:"transport"`
	Reason    string                       `json:"reason,omitempty"`
	Duplicate bool                         `json:"duplicate,omitempty"`
}

// SendMessage validates a message against the execution's descriptors,
// records it, delivers it through the adapter and records the delivery. A
// message to an execution whose process is gone is accepted and recorded
// as a failed delivery.
func (rt *Runtime) SendMessage(ctx context.Context, id string, in SendMessageInput) (MessageAck, error) {
	ref, desc, p, err := rt.resolve(ctx, id)
	if err != nil {
		return MessageAck{}, err
	}
	if _, ok := desc.Message(in.Type); !ok {
		// Not in the header: maybe a command the agent advertised.
		if st, err := rt.replay(ctx, ref); err == nil {
			desc.Messages = st.CommandView().Messages
		}
	}
	m, err := rt.accept(ctx, ref, desc, &in)
	if err != nil || m.dup != nil {
		return m.ack(), err
	}
	return rt.deliverAccepted(ctx, ref, p, m, in.launchArgument)
}

// accepted is a message recorded as accepted, not delivered yet; dup is
// set instead when its id was accepted before.
type accepted struct {
	md     eventstore.MessageDescriptor
	stored *eventstore.MessageAccepted
	dup    *MessageAck
}

func (m accepted) ack() MessageAck {
	if m.dup != nil {
		return *m.dup
	}
	return MessageAck{}
}

// accept validates a message against the descriptors and records it.
func (rt *Runtime) accept(ctx context.Context, ref eventstore.Reference, desc eventstore.ProtocolDescriptor, in *SendMessageInput) (accepted, error) {
	id := ref.AgentExecutionID
	md, ok := desc.Message(in.Type)
	if !ok {
		types := make([]string, len(desc.Messages))
		for i, m := range desc.Messages {
			types[i] = m.Type
		}
		return accepted{}, fmt.Errorf("%w: %q is not a message type of %s (want one of: %s)", ErrUnknownMessageType, in.Type, id, strings.Join(types, ", "))
	}
	if in.Source == "" {
		in.Source = eventstore.SourceOperator
	}
	if in.MessageID == "" {
		in.MessageID = "msg-" + randomHex(8)
	}
	if len(in.Payload) == 0 {
		in.Payload = json.RawMessage("null")
	}
	rec := &eventstore.MessageAccepted{MessageID: in.MessageID, Source: in.Source, MessageType: in.Type,
		Payload: in.Payload, MutatesContext: md.MutatesContext}
	if req, _ := rec.RequestID(); in.Type == "answer" && req == "" {
		// Nothing could decide what it answers.
		return accepted{}, fmt.Errorf(`%w: an answer names the input request it answers: payload {"requestId": "…", "text": "…"}`, ErrBadMessage)
	}
	if seq, ok, err := rt.processed(ref, false, in.MessageID); err != nil || ok {
		if err != nil {
			return accepted{}, fmt.Errorf("send %s to %s: %w", in.Type, id, err)
		}
		ack, err := rt.firstAck(ctx, ref, in.MessageID, seq)
		return accepted{dup: &ack}, err
	}
	e, err := rt.cfg.Store.Append(ctx, ref, rec)
	if err != nil {
		return accepted{}, fmt.Errorf("send %s to %s: %w", in.Type, id, err)
	}
	stored := e.Record.(*eventstore.MessageAccepted)
	if e.Record.RecordBase().Sequence != rec.Sequence || stored != rec {
		// The id was accepted before: answer with the first acknowledgement.
		ack, err := rt.firstAck(ctx, ref, in.MessageID, e.Record.RecordBase().Sequence)
		return accepted{dup: &ack}, err
	}
	return accepted{md: md, stored: stored}, nil
}

// deliverAccepted delivers an accepted message and records the outcome.
func (rt *Runtime) deliverAccepted(ctx context.Context, ref eventstore.Reference, p *process, m accepted, launchArgument bool) (MessageAck, error) {
	// A prompt passed on the command line started the first turn with its
	// process: it starts no next turn, even when that turn has ended (and
	// the execution waits for the operator) before its delivery is
	// recorded.
	prompt := p != nil && m.stored.MessageType == "prompt" && !launchArgument
	if prompt {
		p.mu.Lock()
		if p.awaiting {
			p.nextTurn = m.stored.MessageID
		}
		p.mu.Unlock()
	}
	delivery := rt.deliver(ctx, p, m.md, m.stored, launchArgument)
	delivery.MessageID = m.stored.MessageID
	if _, err := rt.cfg.Store.Append(ctx, ref, delivery); err != nil {
		return MessageAck{}, fmt.Errorf("record delivery of %s: %w", m.stored.MessageID, err)
	}
	switch {
	case prompt && delivery.Status == eventstore.DeliveryDelivered:
		rt.turnStarted(p, m.stored.MessageID)
	case prompt:
		p.mu.Lock()
		if p.nextTurn == m.stored.MessageID {
			p.nextTurn = ""
		}
		p.mu.Unlock()
	}
	return MessageAck{MessageID: m.stored.MessageID, Sequence: m.stored.Sequence, Delivery: delivery.Status,
		Transport: delivery.Transport, Reason: delivery.Reason}, nil
}

func (rt *Runtime) deliver(ctx context.Context, p *process, md eventstore.MessageDescriptor, m *eventstore.MessageAccepted, launchArgument bool) *eventstore.MessageDelivery {
	d := &eventstore.MessageDelivery{Transport: eventstore.TransportAdapter}
	switch {
	case md.Delivery == eventstore.DeliveryNoneMode:
		d.Status, d.Transport, d.Reason = eventstore.DeliverySkipped, eventstore.TransportNone, "the descriptor asks for no delivery"
		return d
	case launchArgument:
		d.Status, d.Reason = eventstore.DeliveryDelivered, "passed on the command line at launch"
		return d
	case p == nil:
		d.Status, d.Reason = eventstore.DeliveryFailed, "the agent process is not running"
		return d
	}
	select {
	case <-p.done:
		d.Status, d.Reason = eventstore.DeliveryFailed, "the agent process has exited"
		return d
	default:
	}
	c := p.current()
	if m.MessageType == "prompt" {
		rt.snapshotSettled(p)
	}
	if !p.driver.TurnsOnStdin() && m.MessageType == "prompt" {
		return rt.startTurn(ctx, p, c, m, d)
	}
	if c == nil {
		d.Status, d.Reason = eventstore.DeliveryFailed, "no turn is running"
		return d
	}
	if m.MessageType == "interrupt" && !conversing(p.driver) {
		if err := c.signal(syscall.SIGINT); err != nil {
			d.Status, d.Reason = eventstore.DeliveryFailed, "signal: "+err.Error()
			return d
		}
		d.Status, d.Reason = eventstore.DeliveryDelivered, "SIGINT"
		return d
	}
	data, ok, err := encode(p.driver, m, c.terminal != nil)
	switch {
	case err != nil:
		d.Status, d.Reason = eventstore.DeliveryFailed, err.Error()
		return d
	case !ok:
		d.Status, d.Transport, d.Reason = eventstore.DeliverySkipped, eventstore.TransportNone, p.adapter.ID()+" takes no input while it runs"
		return d
	}
	d.Transport, err = c.write(data)
	if err != nil {
		d.Status, d.Reason = eventstore.DeliveryFailed, "write to the agent: "+err.Error()
		if p.shape == eventstore.ShapeOneShot {
			d.Reason = "a one-shot execution takes no message after its turn: " + err.Error()
		}
		return d
	}
	d.Status = eventstore.DeliveryDelivered
	return d
}

// startTurn delivers a prompt to a CLI that takes one turn per process:
// it starts the process of the next turn, resuming the provider session.
func (rt *Runtime) startTurn(ctx context.Context, p *process, c *child, m *eventstore.MessageAccepted, d *eventstore.MessageDelivery) *eventstore.MessageDelivery {
	if c != nil {
		// The last turn's result is in but its process has not exited
		// yet: the next turn starts when it has.
		p.mu.Lock()
		ended := c.turnEnd != nil
		p.mu.Unlock()
		if ended {
			select {
			case <-c.exited:
				c = p.current()
			case <-time.After(rt.cfg.StopGrace):
			case <-ctx.Done():
			}
		}
	}
	p.mu.Lock()
	session, turns := p.sessionID, p.turns
	p.mu.Unlock()
	switch {
	case c != nil:
		d.Status, d.Reason = eventstore.DeliveryFailed, "a turn is running; send the next prompt when it has ended"
		return d
	case p.shape == eventstore.ShapeOneShot:
		d.Status, d.Reason = eventstore.DeliveryFailed, "a one-shot execution takes no prompt after its turn"
		return d
	case turns > 0 && session == "":
		d.Status, d.Reason = eventstore.DeliveryFailed, "the agent never said its session id, so its session cannot be resumed"
		return d
	}
	pl, err := m.DecodePayload()
	if err != nil {
		d.Status, d.Reason = eventstore.DeliveryFailed, err.Error()
		return d
	}
	program, args, err := p.driver.Start(pl.Text, session)
	if err == nil {
		err = rt.startPipes(p, program, args, false)
	}
	if err != nil {
		d.Status, d.Reason = eventstore.DeliveryFailed, "start the next turn: "+err.Error()
		return d
	}
	d.Status, d.Reason = eventstore.DeliveryDelivered, "started a process for the turn"
	if session != "" {
		d.Reason = "resumed session " + session + " in a new process"
	}
	return d
}

// turnStarted records that a delivered prompt started the next turn of a
// conversation that was waiting for it, unless the turn's end recorded its
// start already.
func (rt *Runtime) turnStarted(p *process, messageID string) {
	p.turnMu.Lock()
	defer p.turnMu.Unlock()
	rt.recordTurnStart(p, messageID)
}

// recordTurnStart records the start of the turn messageID starts, once; the
// caller holds p.turnMu.
func (rt *Runtime) recordTurnStart(p *process, messageID string) {
	p.mu.Lock()
	if !p.awaiting || p.nextTurn != messageID {
		p.mu.Unlock()
		return
	}
	p.awaiting, p.nextTurn = false, ""
	n := p.turns + 1
	p.mu.Unlock()
	if err := rt.appendState(p.ref, fmt.Sprintf("turn:%d:start", n), &eventstore.StateChanged{Attention: eventstore.AttentionAutonomous,
		Reason: fmt.Sprintf("turn %d started by message %s", n, messageID)}); err != nil {
		rt.cfg.Logger.Error("record turn start", "execution", p.ref.AgentExecutionID, "err", err)
	}
}

// firstAck rebuilds the acknowledgement of a message accepted before.
func (rt *Runtime) firstAck(ctx context.Context, ref eventstore.Reference, messageID string, seq uint64) (MessageAck, error) {
	ack := MessageAck{MessageID: messageID, Sequence: seq, Duplicate: true, Delivery: eventstore.DeliveryAttempted, Transport: eventstore.TransportNone}
	for e, err := range rt.cfg.Store.ReadJournal(ctx, ref, seq) {
		if err != nil {
			return ack, err
		}
		if d, ok := e.Record.(*eventstore.MessageDelivery); ok && d.MessageID == messageID {
			ack.Delivery, ack.Transport, ack.Reason = d.Status, d.Transport, d.Reason
			break
		}
	}
	return ack, nil
}

// RecordObservation records a daemon-normalized observation. A repeated
// observation id returns the stored record and appends nothing.
func (rt *Runtime) RecordObservation(ctx context.Context, id string, o *eventstore.Observation) (eventstore.Entry, bool, error) {
	e, dup, err := rt.RecordObservationPending(ctx, id, o)
	if err != nil {
		return e, dup, err
	}
	if err := rt.WaitDurable(ctx); err != nil {
		return e, dup, fmt.Errorf("record observation %s: %w", o.ObservationID, err)
	}
	return e, dup, nil
}

// pendingAppender is a Store that can append without waiting for the disk
// (eventstore.JetStreamStore).
type pendingAppender interface {
	AppendPending(ctx context.Context, ref eventstore.Reference, r eventstore.Record) (eventstore.Entry, error)
	WaitDurable(ctx context.Context) error
}

// WaitDurable returns once every record the store holds is on disk.
func (rt *Runtime) WaitDurable(ctx context.Context) error {
	if s, ok := rt.cfg.Store.(pendingAppender); ok {
		return s.WaitDurable(ctx)
	}
	return nil
}

// RecordObservationPending is RecordObservation without the wait for the
// disk, where the store can append without it: for a caller that answers
// with the policy's decision on the observation, whose being durable
// makes the observation durable too (the log is durable in order). A
// caller that answers without the decision calls WaitDurable first.
func (rt *Runtime) RecordObservationPending(ctx context.Context, id string, o *eventstore.Observation) (eventstore.Entry, bool, error) {
	ref, _, _, err := rt.resolve(ctx, id)
	if err != nil {
		return eventstore.Entry{}, false, err
	}
	if seq, ok, err := rt.processed(ref, true, o.ObservationID); err != nil || ok {
		if err != nil {
			return eventstore.Entry{}, false, fmt.Errorf("record observation %s: %w", o.ObservationID, err)
		}
		e, err := rt.storedObservation(ctx, ref, o.ObservationID, seq)
		return e, true, err
	}
	appendRecord := rt.cfg.Store.Append
	if s, ok := rt.cfg.Store.(pendingAppender); ok {
		appendRecord = s.AppendPending
	}
	e, err := appendRecord(ctx, ref, o)
	if err != nil {
		return e, false, fmt.Errorf("record observation %s: %w", o.ObservationID, err)
	}
	return e, e.Record != eventstore.Record(o), nil
}

// processed asks Config.Processed, when set, whether the journal holds id.
func (rt *Runtime) processed(ref eventstore.Reference, observation bool, id string) (uint64, bool, error) {
	if rt.cfg.Processed == nil || id == "" {
		return 0, false, nil
	}
	return rt.cfg.Processed(ref.AgentExecutionID, observation, id)
}

// storedObservation reads the observation with id that the journal holds at
// seq.
func (rt *Runtime) storedObservation(ctx context.Context, ref eventstore.Reference, id string, seq uint64) (eventstore.Entry, error) {
	for e, err := range rt.cfg.Store.ReadJournal(ctx, ref, seq) {
		if err != nil {
			return e, fmt.Errorf("record observation %s: read the first one: %w", id, err)
		}
		if o, ok := e.Record.(*eventstore.Observation); ok && o.ObservationID == id {
			return e, nil
		}
		break
	}
	return eventstore.Entry{}, fmt.Errorf("record observation %s: the read model places it at sequence %d of %s, which holds another record", id, seq, ref.AgentExecutionID)
}

// resolve finds an execution's journal, descriptor and live process (nil
// when it has none here).
func (rt *Runtime) resolve(ctx context.Context, id string) (eventstore.Reference, eventstore.ProtocolDescriptor, *process, error) {
	rt.mu.Lock()
	p, ok := rt.live[id]
	rt.mu.Unlock()
	if ok {
		return p.ref, p.descriptor, p, nil
	}
	ref, err := rt.cfg.Store.Lookup(ctx, id)
	if err != nil {
		return ref, eventstore.ProtocolDescriptor{}, nil, err
	}
	for e, err := range rt.cfg.Store.ReadJournal(ctx, ref, 1) {
		if err != nil {
			return ref, eventstore.ProtocolDescriptor{}, nil, err
		}
		if h, ok := e.Record.(*eventstore.Header); ok {
			return ref, h.ProtocolDescriptor, nil, nil
		}
		break
	}
	return ref, eventstore.ProtocolDescriptor{}, nil, fmt.Errorf("%s: %w", id, ErrNoHeader)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
