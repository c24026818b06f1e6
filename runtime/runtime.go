package runtime

import (
	"context"
	"errors"
	"io"
	"iter"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
	"github.com/agentjournal/agentjournal/runtime/outputlog"
	"github.com/agentjournal/agentjournal/sandbox"
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
	// ErrNoProfile reports a launch that asks for an environment profile
	// the host that runs it does not have.
	ErrNoProfile = errors.New("execution: no such environment profile")
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
	// HoldLimit bounds how many observations and activity updates of one
	// execution are held in memory while the log does not answer; more
	// are counted, and the count journaled once it answers (hold.go).
	// DefaultHoldLimit when 0 or less.
	HoldLimit int
	// LaunchEnv, when set, adds environment variables for one launch, e.g.
	// the MCP address and a token scoped to that execution.
	LaunchEnv func(ref eventstore.Reference) []string
	// OnInputRequest, when set, is called (on a goroutine of its own) for
	// each permission request or question an agent asks, in its provider
	// output or with a needs_input marker, after the observation is
	// recorded: a host with no
	// operator to ask (the run command) answers it through SendMessage.
	OnInputRequest func(ref eventstore.Reference, req *eventstore.NeedsInputSignal)
	// Host is this runtime's name in the fleet of hosts that share its log
	// (package fleet); each change to running names it, so that commands
	// for an execution reach the host that runs it. Empty names none.
	Host string
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
	// EnvProfiles are this host's environment profiles by name: variables
	// (NAME=VALUE) a launch asks for by name, kept on this host only.
	EnvProfiles map[string][]string
	// Sandbox is which launches run sandboxed and how (sandbox.go).
	Sandbox SandboxConfig
	// Ended, when set, hears of every execution that ended here, once its
	// end is journaled (a fleet-wide limit's slot is given back).
	Ended func(ref eventstore.Reference)
	// DecisionsBeforeEnd is how long the end of an execution waits for
	// the policy to decide the observations recorded before it (with a
	// Store that follows journals, JournalFollower): a run that ends at
	// once after its last claim would otherwise have the claim's change
	// of attention appended after its end, where it moves nothing. 0 does
	// not wait: no policy runs on the log.
	DecisionsBeforeEnd time.Duration
	// Shared, when set, is the queue of the fleet of hosts sharing the
	// log: launches that wait go there, and any host with room starts
	// them (shared.go). QueueDir then keeps only their environments.
	Shared SharedQueue
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
	Continue *agent.Continuation
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
	// EnvProfile names one of Config.EnvProfiles, whose variables come
	// before Env's in the agent's environment; resolved where the run
	// starts.
	EnvProfile string
	// Placement is where a launch that waits in the shared queue may
	// start (Config.Shared); unused otherwise.
	Placement SharedPlacement
	// Sandbox asks to run the agent sandboxed, or not; nil takes the
	// runtime's Config.Sandbox.
	Sandbox *SandboxRequest
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
	// holding ends when Close's deadline passes: records held for a log
	// that does not answer are given up (hold.go).
	holding    context.Context
	giveUpHeld context.CancelFunc

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

	// versions are the agent CLIs' versions asked so far (version.go).
	versions versions
}

// NewRuntime returns a runtime over a store.
func New(cfg Config) *Runtime {
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
	if cfg.HoldLimit <= 0 {
		cfg.HoldLimit = DefaultHoldLimit
	}
	rt := &Runtime{cfg: cfg, live: map[string]*process{}, starting: map[string]chan struct{}{}}
	rt.detach, rt.stopDetach = context.WithCancel(context.Background())
	rt.holding, rt.giveUpHeld = context.WithCancel(context.Background())
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
	// sandbox confines each of its processes; nil runs them unconfined.
	sandbox *sandbox.Policy
	// done is closed when the execution has ended and its end is recorded.
	done chan struct{}
	// source is the observation source of markers: provider-output on a
	// pipe, pty on a terminal lane.
	source eventstore.ObservationSource

	mu       sync.Mutex
	child    *child // the running process; nil between turns
	children int    // processes started
	// ending is why and how far the execution is being ended, read by
	// exited to say what its process's exit means (ending.go).
	ending ending
	ended  bool
	// limit is the timer of the run's time limit (timeout.go).
	limit *time.Timer
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
	// turnCheckpoints are the turn-end checkpoints being recorded, which
	// the execution's end waits for: nothing is appended after the end.
	turnCheckpoints sync.WaitGroup

	// output keeps the execution's plain output, opened at its first
	// line; outputOff once it failed (said once in the log) or closed.
	outputMu  sync.Mutex
	output    *outputlog.Writer
	outputOff bool

	// snaps takes the workspace snapshots; nil when they are off.
	snaps *snapshots

	// held keeps the execution's records in order while the log does not
	// answer (hold.go).
	held hold
}

// current returns the running child, nil between turns.
func (p *process) current() *child {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.child
}

// Close stops every live process and waits for their records; with
// LeaveRunning, supervised ones run on and only their readers stop. Queued
// runs stay queued, in QueueDir, for the next runtime. The processes are
// stopped at once (stopAll), so that closing takes one grace period, not
// one per process.
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
		p.ending.by(byShutdown, 0)
		p.mu.Unlock()
	}
	for _, p := range leave {
		p.mu.Lock()
		p.ending.by(byLeaving, 0)
		c := p.child
		p.mu.Unlock()
		p.stopLimit()
		if c != nil && c.handle() == nil {
			// A turn's process is this one's child, and its output would
			// go with it: it ends, and the next runtime records the turn
			// lost. A supervised process runs on.
			_ = c.signal(syscall.SIGTERM)
		}
	}
	errs := []error{rt.stopAll(ctx, ids, stop)}
	rt.stopDetach()
	rt.awaitHeld(ctx)
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
