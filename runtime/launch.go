package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/marker"
	"github.com/agentjournal/agentjournal/sandbox"
	"github.com/agentjournal/agentjournal/supervisor"
)

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
	if !waits {
		if err := rt.checkProfile(req.EnvProfile); err != nil {
			return ref, err
		}
	}
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
	if waits && rt.cfg.Shared != nil {
		return ref, rt.queueShared(ctx, pl, req.Placement)
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
	// sandbox confines the agent; nil runs it unconfined.
	sandbox *sandbox.Policy
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
	// Asked once the launch is known to be one that runs.
	version := rt.agentVersion(adapter, driver, req.Command, req.Env)
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
	sbx, err := rt.launchSandbox(adapter, req)
	if err != nil {
		return pl, err
	}
	lane := eventstore.LaneStdio
	if interactive {
		lane = eventstore.LanePTY
	}
	header := &eventstore.Header{AgentID: adapter.ID(), ProtocolDescriptor: desc,
		TransportState: &eventstore.TransportState{StructuredLane: lane, TerminalAttached: interactive}, WorkingDirectory: req.Dir,
		Command: req.Command, SessionID: req.SessionID, ForkedFrom: req.ForkedFrom, Resumes: req.Resumes, TimeoutMs: timeoutMs(req.Timeout),
		DispatchContext: req.Dispatch, Sandbox: sandboxFacts(sbx), AgentVersion: version}
	*pl = launchPlan{req: req, ref: ref, adapter: adapter, driver: driver, shape: shape, session: session, desc: desc, header: header,
		onStdin: onStdin, interactive: interactive, startNow: startNow, program: program, args: args, sandbox: sbx}
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
	if req.EnvProfile != "" {
		if err := rt.checkProfile(req.EnvProfile); err != nil {
			rt.failLaunch(ref, err.Error())
			return err
		}
		// Kept with the launch as its own environment, so that a run
		// attached to again after a restart has it too.
		req.Env = append(slices.Clone(rt.cfg.EnvProfiles[req.EnvProfile]), req.Env...)
	}
	env := rt.agentEnv(ref, req.Env, nonce)
	rt.countBefore(ctx, pl.driver, pl.header.Resumes)
	p := &process{ref: ref, adapter: pl.adapter, driver: pl.driver, descriptor: pl.desc, shape: pl.shape, nonce: nonce,
		env: env, dir: req.Dir, sandbox: pl.sandbox, done: make(chan struct{}), source: eventstore.ObservedProviderOutput, sessionID: pl.session}
	if interactive {
		p.source = eventstore.ObservedPTY
	}
	rt.startSnapshots(p)
	startErr := rt.markHosted(ref)
	// A terminal lane that another runtime can take over runs under a
	// supervisor, which holds its PTY (supervisedterm.go).
	var term *launchTerminal
	if startErr == nil && rt.takeOver(p, interactive) {
		if interactive {
			term = rt.newLaunchTerminal(pl.program, pl.args)
		}
		startErr = rt.writeLaunchInfo(p, req, term)
	}
	switch {
	case startErr != nil:
		startErr = fmt.Errorf("record it as hosted in %s and %s: %w", rt.cfg.HostDir, rt.cfg.SupervisedDir, startErr)
	case !pl.startNow:
	case term != nil:
		startErr = rt.startSupervised(ctx, p, term.spec(ref.AgentExecutionID, rt.cfg.RecordingDir), term)
	case interactive:
		startErr = rt.startTerminal(ctx, p, pl.program, pl.args)
	case rt.supervised(p):
		startErr = rt.startSupervised(ctx, p, supervisor.Spec{Program: pl.program, Args: pl.args, Stdin: pl.onStdin}, nil)
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

// checkProfile refuses an environment profile this host does not have.
func (rt *Runtime) checkProfile(name string) error {
	if name == "" {
		return nil
	}
	if _, ok := rt.cfg.EnvProfiles[name]; !ok {
		where := "this host"
		if rt.cfg.Host != "" {
			where = "host " + rt.cfg.Host
		}
		return fmt.Errorf("%w: %s has no environment profile %q (serve --env-profile %s=FILE)", ErrNoProfile, where, name, name)
	}
	return nil
}

// Profiles lists this host's environment profiles by name.
func (rt *Runtime) Profiles() []string { return slices.Sorted(maps.Keys(rt.cfg.EnvProfiles)) }

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
		Attention: eventstore.AttentionAutonomous, Activity: eventstore.ActivityIdle, Reason: reason, Host: rt.cfg.Host}); err != nil {
		rt.cfg.Logger.Error("record running", "execution", p.ref.AgentExecutionID, "err", err)
	}
}
