package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fleet"
	"github.com/agentjournal/agentjournal/runtime"
)

// The health check that tells whether a daemon runs. A daemon whose
// process is alive may answer it slowly: on a cluster electing new leaders
// (4 to 9 s) its health check waits for the log. After healthTimeout the
// command says it is waiting, and it waits up to healthPatience in all,
// longer than an election and than the log's own wait for one
// (eventstore.DefaultUnavailableWait), before giving up.
const (
	healthTimeout  = 2 * time.Second
	healthPatience = 30 * time.Second
)

// errNoDaemon reports that no daemon runs for the data directory.
var errNoDaemon = errors.New("no agentjournal daemon is running")

// noDaemonError is errNoDaemon for one data directory, with the command
// that starts a daemon there.
type noDaemonError struct {
	dataDir string
	start   string
}

func (e *noDaemonError) Error() string {
	return fmt.Sprintf("%v for %s (start one with: %s)", errNoDaemon, e.dataDir, e.start)
}

func (e *noDaemonError) Is(target error) bool { return target == errNoDaemon }

// daemon returns a client of the daemon that runs for the data directory:
// the one daemon.json names, whose process is alive and whose /healthz
// answers. Without one it returns a *noDaemonError, which is errNoDaemon.
func (e *Env) daemon(ctx context.Context) (*client.Client, error) {
	none := &noDaemonError{dataDir: e.DataDir, start: e.hintPrefix() + " serve"}
	path := e.layout().DaemonInfo()
	info, err := e.layout().ReadInfo()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, none
	case errors.Is(err, daemon.ErrBadInfo) || err == nil && info.URL == "":
		// A daemon writing the file right now, or one that died while
		// writing it.
		return nil, none
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if !processAlive(info.PID) {
		return nil, none
	}
	token, err := os.ReadFile(info.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("read the API token of the daemon at %s: %w", info.URL, err)
	}
	c := client.New(info.URL, strings.TrimSpace(string(token)))
	if err := e.checkHealth(ctx, c, info); err != nil {
		c.Close()
		if isAPIError(err) {
			return nil, fmt.Errorf("the daemon at %s is not healthy: %w", info.URL, err)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("the daemon at %s (process %d) is alive but did not answer its health check within %s, longer than its log takes to elect a leader; see its log for why",
				info.URL, info.PID, healthPatience)
		}
		// Its process is alive but nothing listens: it is stopping, or
		// the pid now belongs to another process.
		return nil, none
	}
	return c, nil
}

// checkHealth asks the daemon for its health, waiting up to
// healthPatience, and says on stderr once healthTimeout has passed without
// an answer what it is waiting for.
func (e *Env) checkHealth(ctx context.Context, c *client.Client, info daemon.Info) error {
	ctx, cancel := context.WithTimeout(ctx, healthPatience)
	defer cancel()
	answered := make(chan error, 1)
	go func() {
		_, err := c.Health(ctx)
		answered <- err
	}()
	t := time.NewTimer(healthTimeout)
	defer t.Stop()
	select {
	case err := <-answered:
		return err
	case <-t.C:
	}
	fmt.Fprintf(e.Stderr, "agentjournal: the daemon at %s (process %d) has not answered its health check within %s; "+
		"its process is alive (its log may be electing a leader), so waiting up to %s\n", info.URL, info.PID, healthTimeout, healthPatience)
	return <-answered
}

// withDaemon calls fn with a client of the running daemon, closed when fn
// returns; with no daemon running it returns the error that says how to
// start one.
func (e *Env) withDaemon(ctx context.Context, fn func(*client.Client) error) error {
	cl, err := e.daemon(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	return fn(cl)
}

// askDaemon asks the running daemon with ask and prints its answer: as a
// line of JSON with asJSON, else as text writes it.
func askDaemon[T any](ctx context.Context, e *Env, asJSON bool, ask func(*client.Client) (T, error), text func(w io.Writer, v T) error) error {
	return e.withDaemon(ctx, func(cl *client.Client) error {
		v, err := ask(cl)
		if err != nil {
			return err
		}
		if asJSON {
			return writeJSONSafe(e.Stdout, v)
		}
		return text(e.Stdout, v)
	})
}

// processAlive reports whether a process with the pid exists.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// The CLI's names for the client package's types it prints or reads.
type (
	// apiError is an error answer of the daemon.
	apiError = client.Error
	// observationAck is what observe --json prints.
	observationAck = client.ObservationAck
	// sseEvent is one event of the daemon's event stream.
	sseEvent = client.Event
)

// errStreamEnded reports an event stream the daemon ended.
var errStreamEnded = client.ErrStreamEnded

// errStopEvents, returned by a readEvents callback, ends reading without
// an error.
var errStopEvents = errors.New("stop reading events")

// readEvents reads Server-Sent Events from r and calls fn with each, and
// comment with each comment line, until r ends (errStreamEnded) or a
// callback returns an error (errStopEvents ends reading without an error).
func readEvents(r io.Reader, fn func(sseEvent) error, comment func(string) error) error {
	return readStream(client.NewEventStream(r), fn, comment)
}

// readStream is readEvents on an open stream.
func readStream(s *client.EventStream, fn func(sseEvent) error, comment func(string) error) error {
	for {
		ev, err := s.Next()
		if err != nil {
			return err
		}
		if ev.Comment {
			err = comment(ev.Text)
		} else {
			err = fn(ev)
		}
		if errors.Is(err, errStopEvents) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// LaunchCommand starts an agent in the running daemon.
type LaunchCommand struct{ env *Env }

var launchSpec = cmdSpec{
	Name: "launch",
	Args: "[--owner ENTITY/ID] [--agent " + strings.Join(runtime.Adapters(), "|") + "] [--interactive] [--prompt TEXT] [--seed S] [--dir DIR] [--timeout DURATION] [--dispatch-mode MODE [--scheduled-for TIME] [--origin-surface S] [--origin-product P]] [--host NAME] [--on KEY=VALUE]... [--env-profile NAME] [--sandbox[=false]] [--sandbox-network host|none] [--sandbox-write PATH]... [--json] -- CMD ARGS...",
	Summary: `Start an agent in the running daemon (see serve) and print its execution
id. The daemon runs and journals it like run does, but in the background: the
agent outlives this command, and send, observe, stop and tail reach it by its
id. The agent's command goes after --; it runs in --dir, which defaults to the
current directory, so a relative command is found from there. --prompt is
recorded as the first message and delivered the agent's way.

--dispatch-mode, --origin-surface, --origin-product and --scheduled-for give
the launch a dispatch context (the runtime contract's AgentDispatchContext),
kept in the journal header: where it was asked for and how it runs. With
--dispatch-mode queued the daemon journals it at once (lifecycle starting) and
starts it when fewer agents than its --max-running are live; scheduled (or
--scheduled-for alone) also waits until the time given, RFC 3339 or a
duration from now. interactive and remote start at once. 'agentjournal queue'
lists the waiting ones and stop cancels one. Without any of these flags the
launch has no dispatch context and starts at once.

On a fleet of daemons sharing one log ('agentjournal hosts'), --host NAME
runs the launch on that host and --on KEY=VALUE on a host with that label
(serve --label); among the hosts that match, one with room is chosen, this
daemon first. Without them the daemon runs it itself, unless it has no room
and another host has. The launch, its environment included, is handed to
the chosen host; --dir and the command are paths on that host.

--sandbox runs the agent under bubblewrap (bwrap): the whole file system
read-only but for --dir, the agent CLI's state directories (such as
~/.claude) and each --sandbox-write PATH; the daemon's data directory, API
token, NATS secret and environment profiles absent; a private /tmp and
process namespace. --sandbox-network none leaves it loopback only; host, the
default, lets it reach its model's API and the host's loopback ports. A daemon
started with serve --sandbox sandboxes every launch but one given
--sandbox=false (refused under serve --sandbox=required). A host that cannot
make a sandbox refuses the launch and says why; nothing runs unconfined. The
journal header records the policy.

With --json, print the daemon's answer: the journal reference and the state.`,
	Example: "agentjournal launch -- ./my-agent --flag\n" +
		"agentjournal launch --owner Task/t-42 --prompt \"summarize the open issues\" -- ./my-agent\n" +
		"agentjournal launch --agent claude-code --interactive --prompt \"fix the failing test\"\n" +
		"agentjournal launch --dispatch-mode queued --origin-surface mobile --origin-product flowmonk --prompt \"triage\" -- ./my-agent\n" +
		"agentjournal launch --scheduled-for 2h --prompt \"nightly report\" -- ./my-agent\n" +
		"agentjournal launch --agent claude-code --sandbox --prompt \"fix the failing test\"",
}

// Run implements Command.
func (c *LaunchCommand) Run(ctx context.Context, args []string) error {
	fs := launchSpec.newFlagSet()
	owner := fs.String("owner", "System/local", "the owning `ENTITY/ID`; ENTITY is one of "+ownerEntityList())
	agent := fs.String("agent", "generic", "the agent adapter `NAME`, one of "+strings.Join(runtime.Adapters(), ", "))
	interactive := fs.Bool("interactive", false, "launch with posture "+string(eventstore.PostureStructuredInteractive)+
		", a terminal lane beside the structured one (default "+string(eventstore.PostureStructuredHeadless)+")")
	prompt := fs.String("prompt", "", "send `TEXT` to the agent as its first message, a prompt")
	seed := fs.String("seed", "", "derive the execution id from `S` (default: random, a new execution each launch)")
	dir := fs.String("dir", "", "run the agent in `DIR` (default: the current directory)")
	var env envFlag
	fs.Var(&env, "env", "add `NAME=VALUE` to the agent's environment (repeatable)")
	limit := fs.Duration("timeout", 0, "have the daemon stop the agent once it has run `DURATION` (e.g. 30m, at most 168h), as stop does, with the journal recording interruption.recorded, reason timeout; 0 for no limit")
	shape := fs.String("shape", "", "the session `SHAPE` of claude-code, codex and copilot: conversation (the default: after each result the agent waits for the next message) or one-shot (the execution ends with the first result)")
	mode := fs.String("dispatch-mode", "", "how the launch runs, `MODE`: "+joinEnum(eventstore.DispatchModes)+"; queued and scheduled wait in the daemon's queue (default: no dispatch context, at once)")
	surface := fs.String("origin-surface", "", "where the launch was asked for, `S`: "+joinEnum(eventstore.OriginSurfaces)+" (default desktop when a dispatch flag is given)")
	product := fs.String("origin-product", "", "the id `P` of the product that asked for the launch: letters, digits and . _ - : / @ (default agentjournal-cli when a dispatch flag is given)")
	scheduled := fs.String("scheduled-for", "", "start no earlier than `TIME`, RFC 3339 (2026-11-24T18:00:00Z) or a duration from now (90m); implies --dispatch-mode scheduled")
	profile := fs.String("env-profile", "", "add the environment profile `NAME` of the host that runs the launch (serve --env-profile); only hosts that have it run it")
	host := fs.String("host", "", "run the launch on the fleet's host `NAME` ('agentjournal hosts')")
	var on labelFlag
	fs.Var(&on, "on", "run the launch on a host with the label `KEY=VALUE` (repeatable; serve --label)")
	var sbx sandboxFlags
	sbx.register(fs)
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON")
	command, err := launchSpec.parseCommand(fs, args)
	if err != nil {
		return err
	}
	entity, ownerID, ok := strings.Cut(*owner, "/")
	if !ok || entity == "" || ownerID == "" {
		return launchSpec.usageErr(fs, "--owner %q: want ENTITY/ID with ENTITY one of %s, e.g. Task/t-42", *owner, ownerEntityList())
	}
	if *dir == "" {
		*dir = "."
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return launchSpec.usageErr(fs, "--dir %q: %v", *dir, err)
	}
	if *shape != "" && !slices.Contains(eventstore.SessionShapes, eventstore.SessionShape(*shape)) {
		return launchSpec.usageErr(fs, "--shape %q: want one of %s, %s", *shape, eventstore.ShapeConversation, eventstore.ShapeOneShot)
	}
	if *limit < 0 || *limit > runtime.MaxTimeout {
		return launchSpec.usageErr(fs, "--timeout %s: want a positive duration of at most 168h, e.g. 30m", *limit)
	}
	req := client.LaunchRequest{OwnerEntity: eventstore.OwnerEntity(entity), OwnerID: ownerID, Seed: *seed, Agent: *agent,
		Command: command, Prompt: *prompt, Dir: abs, Shape: eventstore.SessionShape(*shape), Env: envMap(env)}
	if *interactive {
		req.Posture = eventstore.PostureStructuredInteractive
	}
	req.EnvProfile = *profile
	if req.Sandbox, err = sbx.request(); err != nil {
		return launchSpec.usageErr(fs, "%v", err)
	}
	if *host != "" || len(on.m) > 0 {
		if *host != "" {
			if err := fleet.ValidName(*host); err != nil {
				return launchSpec.usageErr(fs, "--host: %v", err)
			}
		}
		req.Placement = &client.Placement{Host: *host, On: on.m}
	}
	if *limit > 0 {
		req.Timeout = limit.String()
	}
	if req.DispatchContext, err = dispatchFlags(*mode, *surface, *product, *scheduled, time.Now()); err != nil {
		return launchSpec.usageErr(fs, "%v", err)
	}

	return c.env.withDaemon(ctx, func(cl *client.Client) error {
		res, err := cl.Launch(ctx, req)
		if err != nil {
			return fmt.Errorf("launch: %w", err)
		}
		return c.env.printLaunched(res, *asJSON, "launched")
	})
}

// dispatchFlags builds a launch's dispatch context from its flags; nil
// when none is given. The daemon validates it again.
func dispatchFlags(mode, surface, product, scheduled string, now time.Time) (*eventstore.DispatchContext, error) {
	if mode == "" && surface == "" && product == "" && scheduled == "" {
		return nil, nil
	}
	d := &eventstore.DispatchContext{OriginSurface: eventstore.OriginDesktop, OriginProductID: "agentjournal-cli",
		DispatchMode: eventstore.DispatchMode(mode), InitiatedAt: now.UTC().Format(time.RFC3339)}
	if surface != "" {
		d.OriginSurface = eventstore.OriginSurface(surface)
	}
	if product != "" {
		d.OriginProductID = product
	}
	if mode == "" {
		d.DispatchMode = eventstore.DispatchInteractive
		if scheduled != "" {
			d.DispatchMode = eventstore.DispatchScheduled
		}
	}
	if scheduled != "" {
		if after, err := time.ParseDuration(scheduled); err == nil {
			scheduled = now.Add(after).UTC().Format(time.RFC3339)
		}
		d.ScheduledFor = scheduled
	}
	var verr *eventstore.ValidationError
	if err := d.Validate(); errors.As(err, &verr) {
		flags := map[string]string{"originSurface": "--origin-surface", "originProductId": "--origin-product",
			"dispatchMode": "--dispatch-mode", "scheduledFor": "--scheduled-for"}
		parts := make([]string, len(verr.Problems))
		for i, p := range verr.Problems {
			field := strings.TrimPrefix(p.Field, "dispatchContext.")
			p.Field = cmp.Or(flags[field], field)
			parts[i] = p.String()
		}
		return nil, errors.New(strings.Join(parts, "; "))
	}
	return d, nil
}

// SendCommand sends a message to an agent of the running daemon.
type SendCommand struct{ env *Env }

var sendSpec = cmdSpec{
	Name: "send",
	Args: "ID [--type T] [--id MESSAGE_ID] [--answer REQUEST_ID] [--json] TEXT...",
	Summary: `Send a message to an agent the running daemon hosts: the words of TEXT,
joined by spaces, as the payload {"text": TEXT}. The daemon records the message
in the journal, delivers it the agent's way (a line on stdin for the generic
agent) and records the delivery; send prints how it went.

--answer REQUEST_ID answers the agent's open input request (the requestId of
its needs_input signal): the type becomes "answer" and the payload names the
request; TEXT may be one of the request's choices or its number as shown
(2 for the second), and the choice is what is recorded. --type picks another
message type the agent declares (prompt, answer, interrupt, …). A message
sent again with the same --id is recorded once: the retry gets the first
acknowledgement back. A message the agent did not get (its process has
ended) is recorded as a failed delivery, and send exits 1.`,
	Example: "agentjournal send ae-0123456789abcdef01234567 summarize the open issues\n" +
		"agentjournal send ae-0123456789abcdef01234567 --answer r1 yes, use the main branch",
}

// Run implements Command.
func (c *SendCommand) Run(ctx context.Context, args []string) error {
	fs := sendSpec.newFlagSet()
	typ := fs.String("type", "", "the message type `T` (default prompt, or answer with --answer)")
	messageID := fs.String("id", "", "record the message as `MESSAGE_ID` (default: an id the daemon assigns); a retry with the same id is recorded once")
	answer := fs.String("answer", "", "answer the open input request `REQUEST_ID`")
	asJSON := fs.Bool("json", false, "print the acknowledgement as JSON")
	pos, err := sendSpec.parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return sendSpec.usageErr(fs, "missing ID (want the agentExecutionId of a running agent; 'agentjournal ls --lifecycle running' lists them)")
	case len(pos) == 1:
		return sendSpec.usageErr(fs, "missing TEXT (want the words of the message after the ID)")
	}
	id, text := pos[0], strings.Join(pos[1:], " ")
	if *typ == "" {
		*typ = "prompt"
		if *answer != "" {
			*typ = "answer"
		}
	}
	payload, err := json.Marshal(eventstore.MessagePayload{Text: text, RequestID: *answer})
	if err != nil {
		return err
	}

	return c.env.withDaemon(ctx, func(cl *client.Client) error {
		ack, err := cl.SendMessage(ctx, id, client.Message{MessageID: *messageID, Type: *typ, Payload: payload})
		if err != nil {
			return fmt.Errorf("send to %s: %w", id, err)
		}
		line := fmt.Sprintf("message %s (sequence %d): %s via %s", ack.MessageID, ack.Sequence, ack.Delivery, ack.Transport)
		if ack.Reason != "" {
			line += ": " + ack.Reason
		}
		if ack.Duplicate {
			line += " (duplicate: sent before with this id; nothing was appended)"
		}
		if *asJSON {
			if err := writeJSONLine(c.env.Stdout, ack); err != nil {
				return err
			}
		}
		if ack.Delivery == eventstore.DeliveryFailed {
			// Recorded, but the agent did not get it: a script must know.
			return fmt.Errorf("send to %s: %s", id, line)
		}
		if !*asJSON {
			writeLine(c.env.Stdout, "%s", line)
		}
		return nil
	})
}

// ObserveCommand records an observation for an agent of the running daemon.
type ObserveCommand struct{ env *Env }

var observeSpec = cmdSpec{
	Name: "observe",
	Args: "ID --signal TYPE [--id OBSERVATION_ID] [--confidence C] [--source S] [--json] JSON_PAYLOAD",
	Summary: `Record an observation for an execution of the running daemon, as an agent
or a tool watching it would: a signal of TYPE with the JSON_PAYLOAD, from
--source with --confidence. The daemon's policy decides on it (update the
state, record only, route to the owner, …); observe waits for the decision and
prints it. An observation sent again with the same --id is recorded once: the
retry gets the original decision, marked duplicate.`,
	Example: "agentjournal observe ae-0123456789abcdef01234567 --signal progress '{\"summary\":\"tests pass\"}'\n" +
		"agentjournal observe ae-0123456789abcdef01234567 --signal needs_input --id q-1 '{\"requestId\":\"r1\",\"question\":\"Which branch?\"}'",
}

// Run implements Command.
func (c *ObserveCommand) Run(ctx context.Context, args []string) error {
	fs := observeSpec.newFlagSet()
	signal := fs.String("signal", "", "the signal `TYPE`, one of "+joinEnum(eventstore.SurfacedSignalTypes()))
	observationID := fs.String("id", "", "record the observation as `OBSERVATION_ID` (default: a new random id); a retry with the same id is recorded once")
	confidence := fs.String("confidence", string(eventstore.ConfidenceAuthoritative), "how far the observation can be trusted, `C`: "+joinEnum(confidences))
	source := fs.String("source", string(eventstore.ObservedSDK), "where the observation comes from, `S`: "+joinEnum(observationSources))
	asJSON := fs.Bool("json", false, "print the acknowledgement and decision as JSON")
	pos, err := observeSpec.parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return observeSpec.usageErr(fs, "missing ID (want the agentExecutionId of an execution; 'agentjournal ls' lists them)")
	case len(pos) == 1:
		return observeSpec.usageErr(fs, "missing JSON_PAYLOAD (want the signal's payload as a JSON object, e.g. '{\"summary\":\"tests pass\"}')")
	case len(pos) > 2:
		return observeSpec.usageErr(fs, "too many arguments %q (want ID and JSON_PAYLOAD; quote the payload)", pos)
	case *signal == "":
		return observeSpec.usageErr(fs, "missing --signal TYPE (want one of: %s)", joinEnum(eventstore.SurfacedSignalTypes()))
	}
	id, payload := pos[0], pos[1]
	if !json.Valid([]byte(payload)) {
		return observeSpec.usageErr(fs, "JSON_PAYLOAD %q is not valid JSON (want an object, e.g. '{\"summary\":\"tests pass\"}')", payload)
	}
	if *observationID == "" {
		*observationID = "cli-" + randomHex(12)
	}

	return c.env.withDaemon(ctx, func(cl *client.Client) error {
		ack, err := cl.RecordObservation(ctx, id, client.Observation{ObservationID: *observationID,
			Source: eventstore.ObservationSource(*source), Confidence: eventstore.Confidence(*confidence),
			Signal: &client.Signal{Type: eventstore.SignalType(*signal), Payload: json.RawMessage(payload)}})
		if err != nil {
			return fmt.Errorf("observe %s: %w", id, err)
		}
		if *asJSON {
			return writeJSONLine(c.env.Stdout, ack)
		}
		line := fmt.Sprintf("observation %s (sequence %d): decision %s", ack.ObservationID, ack.Sequence, ack.Decision.Action)
		if ack.Decision.Reason != "" {
			line += ": " + ack.Decision.Reason
		}
		if ack.Duplicate {
			line += " (duplicate: recorded before with this id; this is the original decision)"
		}
		writeLine(c.env.Stdout, "%s", line)
		return nil
	})
}

// The confidences and sources observe offers in its help; the daemon
// checks the values.
var (
	confidences = []eventstore.Confidence{eventstore.ConfidenceAuthoritative, eventstore.ConfidenceHigh,
		eventstore.ConfidenceMedium, eventstore.ConfidenceLow, eventstore.ConfidenceDiagnostic}
	observationSources = []eventstore.ObservationSource{eventstore.ObservedSDK, eventstore.ObservedMCP, eventstore.ObservedPTY,
		eventstore.ObservedProviderOutput, eventstore.ObservedTerminalHeuristic, eventstore.ObservedFilesystem,
		eventstore.ObservedGit, eventstore.ObservedDaemon}
)

// StopCommand stops an agent of the running daemon.
type StopCommand struct{ env *Env }

var stopSpec = cmdSpec{
	Name: "stop",
	Args: "ID [--json]",
	Summary: `Stop an agent the running daemon hosts: SIGTERM to its process group, then
SIGKILL after the daemon's grace period. stop waits until the process has
ended and the journal holds its final lifecycle (cancelled, or terminated
when it had to be killed), and prints it. Only an execution running in this
daemon can be stopped, or one waiting in its queue (see queue): that one ends
cancelled at once, its process never started.`,
	Example: "agentjournal stop ae-0123456789abcdef01234567",
}

// Run implements Command.
func (c *StopCommand) Run(ctx context.Context, args []string) error {
	fs := stopSpec.newFlagSet()
	asJSON := fs.Bool("json", false, "print the final state as JSON")
	id, err := stopSpec.parseID(fs, args)
	if err != nil {
		return err
	}
	return c.env.withDaemon(ctx, func(cl *client.Client) error {
		v, err := cl.Stop(ctx, id)
		if err != nil {
			return fmt.Errorf("stop %s: %w", id, err)
		}
		if *asJSON {
			return writeJSONLine(c.env.Stdout, v)
		}
		lc := string(v.Lifecycle)
		if v.LifecycleReason != "" {
			lc += " (" + v.LifecycleReason + ")"
		}
		writeLine(c.env.Stdout, "%s: %s", id, lc)
		return nil
	})
}

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("read random bytes: %v", err))
	}
	return hex.EncodeToString(b)
}
