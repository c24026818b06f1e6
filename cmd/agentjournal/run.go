package main

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/runtime"
	"github.com/agentjournal/agentjournal/runtime/marker"
	"github.com/agentjournal/agentjournal/transcript"
)

const (
	// settleTimeout bounds the wait for the policy to decide the last
	// observations once the agent has exited.
	settleTimeout = 5 * time.Second
	// stopMargin is how long a stop may take beyond the grace period: the
	// SIGKILL and the last records.
	stopMargin = 5 * time.Second
	// recordTimeout bounds one append or read done after the run was
	// interrupted.
	recordTimeout = 30 * time.Second
)

// RunCommand runs one agent in the foreground and keeps its journal, with
// no daemon: the runtime launches and follows the process, and the policy
// decides on its observations in the same process.
type RunCommand struct {
	env *Env
	// snapshots is --snapshots, for the runtime run builds.
	snapshots bool
	// raw is --raw: the agent's output as it prints it instead of the
	// transcript.
	raw bool
}

var runSpec = cmdSpec{
	Name: "run",
	Args: "[--owner ENTITY/ID] [--agent " + strings.Join(runtime.Adapters(), "|") + "] [--interactive] [--prompt TEXT] [--seed S] [--grace DURATION] [--timeout DURATION] [--raw] -- CMD ARGS...",
	Summary: `Run one agent in the foreground and keep its journal, without a daemon. The
journal gets the header first, then the prompt (a prompt the journal refuses
fails the run before the agent starts), the lifecycle, the prompt's delivery,
an observation for every signal the agent sends (stdout markers and, for the
known CLIs, their JSON output) and the policy's decision on each.

What the agent does is shown on stdout as a transcript, as the journal
records it (docs/transcript.md): the prompt, the agent's messages (Markdown
rendered, coloured on a terminal unless NO_COLOR is set), one line for each
tool call with its outcome (the first lines of a failure's output), plans,
questions and answers, turn ends with tokens and time, and the end. The
agent's own plain output (stderr, and stdout lines that are neither markers
nor a CLI's JSON events) is shown as it is printed, between. --raw shows
every line the agent prints instead, a CLI's JSON protocol included, and no
transcript.

The agent's command goes after --. The generic agent runs any program and
needs one; claude-code, codex and copilot run their CLI (claude, codex,
copilot) with its structured-output flags, and a command after -- replaces
the program and adds arguments. --prompt is recorded as the first message and
delivered the agent's way: a line on stdin for generic, a stream-json message
for claude-code, the command line for codex and copilot.

The generic agent gets every message on stdin as one line: its text, with
the line breaks inside it turned into spaces. An answer to the agent's
question (needs_input) is "REQUEST_ID: TEXT", so that the agent tells it
from a prompt that arrives while the question is open. With --interactive
the agent runs on a terminal of its own (a PTY, recorded as asciicast v2
under DATA/terminal-recordings), its stdin, stdout and stderr; every message
is typed into that terminal as a person types it: the text, then Enter (a
carriage return, which the terminal in its usual mode hands the program as a
line feed). An answer is typed as its text alone: the agent asked on that
terminal.

--interactive with run's stdin on a terminal makes that terminal the
agent's, as if the agent ran in it directly: it is put in raw mode, every
key is typed into the agent's terminal (and its recording, as the API's
terminal input is), the agent's output is shown byte for byte as it comes (a
prompt without a line feed too), the agent's terminal starts at the size of
yours and follows it when it is resized, and your terminal's mode is
restored when run ends, however it ends. Marker lines (signals, which the
journal keeps) are left out of what is shown. Ctrl-C and every other key go to
the agent; Ctrl-] stops the run. A question the agent asks through the
journal (below) is asked on a line, in your terminal's usual mode. With
stdin not a terminal (redirected, or a pipe), --interactive shows the
agent's terminal output line by line on stdout and passes no keys.

claude-code, codex and copilot run one-shot here: the execution ends with the
agent's first result, completed on success and failed on an error result, and
they need --prompt. (Under a daemon they converse: see 'agentjournal launch'.)
Claude Code asks before it runs a tool that needs permission, and may ask the
user a question. run answers permission requests through the journal as
--permissions says: ask (the default) shows the request at the controlling
terminal (/dev/tty, even when run's output is redirected), its choices
numbered, and sends what is typed, as the operator's answer: a choice's
number or text (allow, allow-always, deny), or y for allow; anything else
denies. deny (the tool does not run and the agent is told so) or allow answer
at once. A question is never answered by --permissions: it is asked at the
terminal, where its text or a choice's number answers it; without a terminal
it is declined. A generic agent's needs_input question is asked at the
terminal too; without one it stays open for an answer sent from another shell
(send --answer). A question answered from elsewhere is no longer asked at
the terminal. Codex and Copilot
CLI cannot ask in this mode; they run under the policy their adapter's flags
set, recorded in the journal header.

While it runs, run is reached the way a daemon is: it serves the HTTP API
(see serve) on 127.0.0.1 at a free port, with the API token in DATA/api-token
(created 0600 when missing), and writes DATA/daemon.json, which it removes
when it ends. So from another shell send, show, timeline, tail, logs and ls
work on the run's agent, and the agent gets AGENTJOURNAL_URL,
AGENTJOURNAL_MCP_URL and AGENTJOURNAL_TOKEN to signal through the API or MCP.
A launch through it is refused: run hosts only the agent it was started
with.

First, run marks every execution the journal still shows as starting or
running as terminated (reason system_restart), and prints one line for each:
the agentjournal that ran it was killed, and the data directory lock says no
other one is running it now. With --nats-url only the executions that an
agentjournal using this data directory launched and did not see end (its
hosted/ directory) are considered, since other agentjournals on that server
may be running theirs.

Ctrl-C (or SIGTERM) stops the agent, Ctrl-] on an interactive terminal:
SIGTERM to its process group, then SIGKILL after --grace. The journal records
cancelled, or terminated when the agent had to be killed. With --timeout the
agent is stopped the same way once it has run that long, and the journal
records interruption.recorded with reason timeout before its end.

When the agent has ended and the policy has decided its last observations
(waiting at most 5s), run prints the execution's state replayed from the
journal and how to view the journal. It exits 0 when the agent completed and
1 when it failed, was cancelled or was terminated, so a script can run
'agentjournal run' in place of the agent.`,
	Example: "agentjournal run -- ./my-agent --flag\n" +
		"agentjournal run --interactive -- ./my-agent\n" +
		"agentjournal run --owner Task/t-42 --prompt \"summarize the open issues\" -- ./my-agent\n" +
		"agentjournal run --agent claude-code --prompt \"fix the failing test\"",
}

// Run implements Command.
func (c *RunCommand) Run(ctx context.Context, args []string) error {
	fs := runSpec.newFlagSet()
	owner := fs.String("owner", "System/local", "the owning `ENTITY/ID`; ENTITY is one of "+ownerEntityList())
	agent := fs.String("agent", "generic", "the agent adapter `NAME`, one of "+strings.Join(runtime.Adapters(), ", "))
	interactive := fs.Bool("interactive", false, "launch with posture "+string(eventstore.PostureStructuredInteractive)+
		", on a terminal lane (default "+string(eventstore.PostureStructuredHeadless)+"); with stdin on a terminal, that terminal is the agent's and Ctrl-] stops the run")
	prompt := fs.String("prompt", "", "send `TEXT` to the agent as its first message, a prompt")
	seed := fs.String("seed", "", "derive the execution id from `S` (default: random, a new execution each run)")
	grace := fs.Duration("grace", 5*time.Second, "after Ctrl-C, wait `DURATION` between SIGTERM and SIGKILL")
	permissions := fs.String("permissions", permissionsAsk, "answer the agent's permission requests: `MODE` ask (at the controlling terminal, or deny without one), deny or allow; questions are asked at the terminal whatever the mode")
	dir := fs.String("dir", "", "run the agent in `DIR` (default: the current directory)")
	limit := fs.Duration("timeout", 0, "stop the agent once it has run `DURATION` (e.g. 30m, at most 168h): as Ctrl-C does, with the journal recording interruption.recorded, reason timeout; 0 for no limit")
	snapshots := snapshotsFlag(fs)
	raw := fs.Bool("raw", false, "show the agent's output as it prints it, a CLI's JSON protocol included, instead of the transcript")
	var env envFlag
	fs.Var(&env, "env", "add `NAME=VALUE` to the agent's environment (repeatable)")
	command, err := runSpec.parseCommand(fs, args)
	if err != nil {
		return err
	}
	entity, ownerID, ok := strings.Cut(*owner, "/")
	ownerEntity, err := eventstore.ParseOwnerEntity(entity)
	if ok && ownerID != "" && err == nil {
		_, err = eventstore.NewAgentExecutionID(ownerEntity, ownerID, *seed)
	}
	if !ok || ownerID == "" || err != nil {
		return runSpec.usageErr(fs, "--owner %q: want ENTITY/ID with ENTITY one of %s, e.g. Task/t-42", *owner, ownerEntityList())
	}
	if !slices.Contains(runtime.Adapters(), *agent) {
		return runSpec.usageErr(fs, "--agent %q: want one of %s", *agent, strings.Join(runtime.Adapters(), ", "))
	}
	if *agent == "generic" && len(command) == 0 {
		return runSpec.usageErr(fs, "missing the agent's command: the generic agent runs the command that goes after --, e.g. agentjournal run -- ./my-agent --flag")
	}
	var shape eventstore.SessionShape
	if *agent != "generic" {
		if strings.TrimSpace(*prompt) == "" {
			return runSpec.usageErr(fs, "missing --prompt: %s runs one-shot here, on the prompt you give, e.g. agentjournal run --agent %s --prompt \"fix the failing test\"", *agent, *agent)
		}
		shape = eventstore.ShapeOneShot
	}
	if *grace <= 0 {
		return runSpec.usageErr(fs, "--grace %s: want a positive duration, e.g. 5s", *grace)
	}
	if *limit < 0 || *limit > runtime.MaxTimeout {
		return runSpec.usageErr(fs, "--timeout %s: want a positive duration of at most 168h, e.g. 30m", *limit)
	}
	if *permissions != permissionsAsk && *permissions != eventstore.AnswerDeny && *permissions != eventstore.AnswerAllow {
		return runSpec.usageErr(fs, "--permissions %q: want %s, %s or %s", *permissions, permissionsAsk, eventstore.AnswerDeny, eventstore.AnswerAllow)
	}
	posture := eventstore.PostureStructuredHeadless
	if *interactive {
		posture = eventstore.PostureStructuredInteractive
	}
	workDir := ""
	if *dir != "" {
		abs, err := filepath.Abs(*dir)
		if err == nil {
			var info os.FileInfo
			if info, err = os.Stat(abs); err == nil && !info.IsDir() {
				err = fmt.Errorf("not a directory")
			}
		}
		if err != nil {
			return runSpec.usageErr(fs, "--dir %q: %v", *dir, err)
		}
		workDir = abs
	}
	req := runtime.LaunchRequest{OwnerEntity: ownerEntity, OwnerID: ownerID, Seed: *seed, Agent: *agent,
		Command: command, Prompt: *prompt, Posture: posture, Shape: shape, Dir: workDir, Env: env, Timeout: *limit}
	c.snapshots, c.raw = bool(*snapshots), *raw
	return c.run(ctx, req, *grace, *permissions)
}

// run opens the daemon on the data directory for this one agent (no search
// index, no queue, no fork workspaces, the API on a free loopback port),
// launches the agent, waits for it and reports how it ended. The policy
// decides on its observations from before the launch until the daemon
// closes, after the last one is decided; the daemon's close stops any
// process still running before run returns.
func (c *RunCommand) run(ctx context.Context, req runtime.LaunchRequest, grace time.Duration, permissions string) (err error) {
	stdout := &flushWriter{w: c.env.Stdout}
	stderr := &flushWriter{w: c.env.Stderr}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	// After an interrupt the journal must still get the last records.
	bg := context.WithoutCancel(ctx)
	// The stop key of an interactive run ends it as Ctrl-C does otherwise.
	ctx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)

	var keys *passthrough
	if f, ok := c.env.Stdin.(*os.File); ok && req.Posture == eventstore.PostureStructuredInteractive && term.IsTerminal(int(f.Fd())) {
		if keys, err = newPassthrough(f, stderr, func() { stopRun(errStopKey) }); err != nil {
			return err
		}
		// After the daemon's close, which stops the agent.
		defer func() { err = errors.Join(err, keys.close()) }()
	}

	cfg := daemon.DefaultConfig(c.env.DataDir)
	if cfg.Bus, err = c.env.busConfig(); err != nil {
		return err
	}
	// The agent's output and run's own lines are what the user reads: the
	// log's server says nothing there.
	cfg.Logger, cfg.Bus.Logger = logger, slog.New(slog.DiscardHandler)
	cfg.NoSearch, cfg.NoQueue, cfg.NoWorkspaces = true, true, true
	cfg.StopGrace, cfg.Snapshots, cfg.Output = grace, c.snapshots, stdout
	// The transcript tells what the journal holds; the agent's own plain
	// output is shown beside it. On the user's own terminal (interactive,
	// below) the agent's terminal is what is shown.
	transcribe := !c.raw && !(req.Posture == eventstore.PostureStructuredInteractive && keys != nil)
	if transcribe {
		cfg.Output = &plainOutput{w: stdout, protocol: req.Agent != "generic"}
	}
	cfg.Recovered = func(id string) {
		fmt.Fprintf(stderr, "agentjournal: %s was left running by an agentjournal that is gone; marked it terminated (system_restart)\n", id)
	}
	var d *daemon.Daemon
	asker := &terminalAsker{}
	if keys != nil {
		asker.keys = keys
	}
	tty := asker.available()
	cfg.OnInputRequest = func(ref eventstore.Reference, q *eventstore.NeedsInputSignal) {
		// Asked after a launch, so after Open has returned d.
		s, rt := d.Store(), d.Runtime()
		// --permissions allow or deny answers permission requests only:
		// a question (which color?) is the operator's to answer.
		permission := q.Kind == string(eventstore.InputPermission)
		switch {
		case permission && permissions != permissionsAsk:
			answerInput(bg, s, rt, ref, q, permissions, "--permissions", eventstore.SourceSystem, stderr)
		case tty:
			done := rt.Done(ref.AgentExecutionID)
			if done == nil {
				return
			}
			watch, stopWatching := context.WithCancel(bg)
			defer stopWatching()
			if text, ok := asker.ask(q, watchRequest(watch, s, ref, q.RequestID, done)); ok {
				stopWatching()
				answerInput(bg, s, rt, ref, q, text, "typed at the terminal", eventstore.SourceOperator, stderr)
			}
		case q.Kind == "":
			// A generic agent's question: with nobody to ask here, it
			// stays open for an answer sent from elsewhere.
		default:
			answerInput(bg, s, rt, ref, q, eventstore.AnswerDeny, "no terminal to ask at", eventstore.SourceSystem, stderr)
		}
	}
	var display *marker.DisplayWriter
	if keys != nil {
		// The agent's terminal is the user's: its bytes as they come, but
		// for marker lines, which are the journal's and carry the nonce;
		// and its size.
		display = marker.NewDisplayWriter(stdout)
		cfg.TerminalOutput, cfg.TerminalSize = display, keys.size
	}
	// Served like a daemon, so that send, show, tail and the others reach
	// the run from another shell; unless the data directory names another
	// agentjournal that is alive.
	other, notServed := liveDaemon(c.env)
	if !notServed {
		cfg.Listen, cfg.WrapHandler = "127.0.0.1:0", refuseLaunch
	}
	if d, err = daemon.Open(ctx, cfg); err != nil {
		var locked *bus.LockedError
		if errors.As(err, &locked) {
			return c.env.lockedByDaemon(locked)
		}
		return err
	}
	defer func() {
		stop, cancel := context.WithTimeout(bg, d.CloseTimeout())
		defer cancel()
		err = errors.Join(err, d.Close(stop))
	}()
	s, rt := d.Store(), d.Runtime()
	if notServed {
		fmt.Fprintf(stderr, "agentjournal: %s names the agentjournal at %s (process %d); this run is not served, so send and the other client commands do not reach it\n",
			c.env.layout().DaemonInfo(), other.URL, other.PID)
	}

	stopHow := "Ctrl-C stops it"
	if keys != nil {
		stopHow = "Ctrl-] stops it; every other key, Ctrl-C included, goes to the agent"
		// Raw before the agent starts, so that all its output is shown
		// as it comes.
		if err := keys.makeRaw(); err != nil {
			return err
		}
	}
	ref, err := rt.Launch(ctx, req)
	if err != nil {
		return err
	}
	id := ref.AgentExecutionID
	fmt.Fprintf(stderr, "agentjournal: running %s (%s, journal %s); %s\n", id, req.Agent, ref.JournalID, stopHow)
	if keys != nil {
		keys.start(rt, d.Terminals(), id)
	}
	var transcribed <-chan struct{}
	stopTranscript := func() {}
	if transcribe {
		var follow context.Context
		follow, stopTranscript = context.WithCancel(bg)
		defer stopTranscript()
		transcribed = showTranscript(follow, s, ref, c.env.newTranscript(stdout, ""), stderr)
	}

	interrupted := false
	// A nil channel means the process has already exited and its lifecycle
	// is recorded.
	if done := rt.Done(id); done != nil {
		select {
		case <-done:
		case err := <-d.Failed():
			return fmt.Errorf("serve the run's API: %w", err)
		case <-ctx.Done():
			interrupted = true
			fmt.Fprintf(stderr, "agentjournal: stopping %s (SIGTERM, then SIGKILL after %s)\n", id, grace)
			stopCtx, cancel := context.WithTimeout(bg, grace+stopMargin)
			err := rt.Stop(stopCtx, id)
			cancel()
			if err != nil && !errors.Is(err, runtime.ErrNotRunning) {
				return err
			}
		}
	}
	if keys != nil {
		// The agent's output has ended: what was held back in case it
		// began a marker is shown.
		if err := display.Flush(); err != nil {
			return err
		}
		// The terminal is the user's again before run reports.
		if err := keys.close(); err != nil {
			return err
		}
	}

	if transcribed != nil {
		// The transcript ends with the execution's end, which the journal
		// has or is about to have.
		timer := time.AfterFunc(settleTimeout, stopTranscript)
		<-transcribed
		timer.Stop()
	}

	settleCtx, cancel := context.WithTimeout(bg, settleTimeout)
	undecided, err := runtime.AwaitDecisions(settleCtx, s, ref)
	cancel()
	if err != nil {
		return err
	}
	if undecided > 0 {
		fmt.Fprintf(stderr, "agentjournal: the policy has not decided %d observation(s) yet; it will the next time it runs on this data directory\n", undecided)
	}

	readCtx, cancel := context.WithTimeout(bg, recordTimeout)
	defer cancel()
	st, err := replayJournal(readCtx, s, ref)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	if err := printState(stdout, st); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "view the journal: %s journal cat %s\n", c.env.hintPrefix(), id)

	var ended error
	switch {
	case interrupted && errors.Is(context.Cause(ctx), errStopKey):
		ended = fmt.Errorf("run %s: %w; the agent was %s", id, errStopKey, st.Lifecycle)
	case interrupted:
		ended = fmt.Errorf("run %s: %w", id, ctx.Err())
	case st.Lifecycle != eventstore.LifecycleCompleted:
		reason := ""
		if st.LifecycleReason != "" {
			reason = ": " + st.LifecycleReason
		}
		ended = fmt.Errorf("agent execution %s %s%s", id, st.Lifecycle, reason)
	}
	return ended
}

// liveDaemon returns what daemon.json says when it names another process
// that is alive: a daemon joined to the same log with --nats-url, whose
// file run must not take over.
func liveDaemon(env *Env) (daemon.Info, bool) {
	info, err := env.layout().ReadInfo()
	if err != nil {
		return info, false
	}
	return info, info.PID != os.Getpid() && processAlive(info.PID)
}

// refuseLaunch wraps the API of a run: run hosts the one agent it was
// started with, and its end stops anything else its runtime would run, so
// a launch through it is refused with the API's conflict error. A request
// without the API token goes on to be refused by the server as usual.
func refuseLaunch(next http.Handler, token string) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/executions" ||
			subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "conflict",
			"message": "this is 'agentjournal run', which serves only the agent it runs; launch agents with a daemon ('agentjournal serve') once the run has ended"}})
	})
}

// journalFollower is the store's watch on one journal
// (eventstore.JetStreamStore.FollowJournal): what run's waits for a record
// read, as it is appended.
type journalFollower interface {
	FollowJournal(ctx context.Context, ref eventstore.Reference, fromSeq uint64) iter.Seq2[[]eventstore.Entry, error]
}

// watchRequest returns a channel closed once the input request id of ref
// is no longer waiting for an answer: answered (from another shell, say),
// replaced, the execution ended, or done closed. It stops watching when
// ctx ends.
func watchRequest(ctx context.Context, s journalFollower, ref eventstore.Reference, id string, done <-chan struct{}) <-chan struct{} {
	closed := make(chan struct{})
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	go func() {
		defer close(closed)
		defer cancel()
		opened := false
		for batch, err := range s.FollowJournal(ctx, ref, 1) {
			var undecodable *eventstore.OffsetError
			if err != nil && !errors.As(err, &undecodable) {
				// The journal cannot be watched: the question stays
				// asked until the run ends it.
				<-ctx.Done()
				return
			}
			for _, e := range batch {
				sc, ok := e.Record.(*eventstore.StateChanged)
				switch {
				case !ok:
				case sc.Lifecycle.Final():
					return
				case sc.CurrentInputRequestID.Set && sc.CurrentInputRequestID.ID == id:
					opened = true
				case sc.CurrentInputRequestID.Set && opened:
					return
				}
			}
		}
	}()
	return closed
}

// envFlag collects NAME=VALUE pairs for the agent's environment.
type envFlag []string

func (e *envFlag) String() string { return strings.Join(*e, " ") }

func (e *envFlag) Set(v string) error {
	name, _, ok := strings.Cut(v, "=")
	if !ok || name == "" || strings.ContainsRune(v, 0) {
		return fmt.Errorf("%q is not NAME=VALUE", v)
	}
	*e = append(*e, v)
	return nil
}

// answerInput answers an agent's permission request or question, as source
// (the operator at the terminal, or run itself for --permissions), through
// the journal: an answer message, decided by
// the policy and delivered to the agent. It waits for the policy to open
// the request first, so the answer is decided as the answer to it.
func answerInput(ctx context.Context, s journalFollower, rt *runtime.Runtime, ref eventstore.Reference, q *eventstore.NeedsInputSignal, answer, why string, source eventstore.MessageSource, log io.Writer) {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	if !requestOpened(ctx, s, ref, q.RequestID) {
		fmt.Fprintf(log, "agentjournal: input request %s was not opened in time; answering it anyway\n", q.RequestID)
	}
	what := "question"
	if q.Kind == string(eventstore.InputPermission) && q.Tool != nil {
		what = "permission to run " + q.Tool.Name
	}
	fmt.Fprint(log, termSafe(fmt.Sprintf("agentjournal: the agent asks %s (%s): %s; answering %q (%s)", what, q.RequestID, q.Question, answer, why))+"\n")
	payload, _ := json.Marshal(map[string]string{"requestId": q.RequestID, "text": answer})
	if _, err := rt.SendMessage(context.WithoutCancel(ctx), ref.AgentExecutionID, runtime.SendMessageInput{
		MessageID: "answer-" + q.RequestID, Type: "answer", Source: source, Payload: payload}); err != nil {
		fmt.Fprintf(log, "agentjournal: answer %s: %v\n", q.RequestID, err)
	}
}

// requestOpened waits until the journal of ref shows the input request id
// open (or the execution ended), and reports whether it did before ctx
// ended.
func requestOpened(ctx context.Context, s journalFollower, ref eventstore.Reference, id string) bool {
	for batch, err := range s.FollowJournal(ctx, ref, 1) {
		var undecodable *eventstore.OffsetError
		if err != nil && !errors.As(err, &undecodable) {
			<-ctx.Done()
			return false
		}
		for _, e := range batch {
			if sc, ok := e.Record.(*eventstore.StateChanged); ok && (sc.CurrentInputRequestID.ID == id || sc.Lifecycle.Final()) {
				return true
			}
		}
	}
	return false
}

// replayJournal folds the journal of ref into the execution's state, a
// fork's through its link.
func replayJournal(ctx context.Context, s eventstore.Store, ref eventstore.Reference) (*execution.State, error) {
	st, err := execution.ReplayLineage(ctx, s, ref)
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", ref.AgentExecutionID, err)
	}
	return st, nil
}

// flushWriter serializes writes from several goroutines (the agent's stdout
// and stderr, the loggers) and flushes each one through a buffered writer,
// so output is shown as it is printed.
type flushWriter struct {
	mu sync.Mutex
	w  io.Writer
	// crlf ends lines with CR LF: the terminal is in raw mode, where a
	// line feed alone does not return the cursor.
	crlf bool
}

// setCRLF turns CR LF line ends on or off.
func (f *flushWriter) setCRLF(on bool) {
	f.mu.Lock()
	f.crlf = on
	f.mu.Unlock()
}

func (f *flushWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crlf && bytes.IndexByte(p, '\n') >= 0 {
		if _, err := f.w.Write(bytes.ReplaceAll(p, []byte("\n"), []byte("\r\n"))); err != nil {
			return 0, err
		}
		return len(p), f.flush()
	}
	n, err := f.w.Write(p)
	if err == nil {
		err = f.flush()
	}
	return n, err
}

// flush flushes the writer under f, if it buffers. The caller holds mu.
func (f *flushWriter) flush() error {
	if fl, ok := f.w.(interface{ Flush() error }); ok {
		return fl.Flush()
	}
	return nil
}

// showTranscript writes the transcript of ref's journal to tw as the
// journal is appended, until it has told the execution's end or ctx ends;
// the channel is closed then. A journal that cannot be followed is said on
// log once.
func showTranscript(ctx context.Context, s journalFollower, ref eventstore.Reference, tw *transcript.Writer, log io.Writer) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer tw.Flush()
		for batch, err := range s.FollowJournal(ctx, ref, 1) {
			var undecodable *eventstore.OffsetError
			if err != nil && !errors.As(err, &undecodable) {
				if ctx.Err() == nil {
					fmt.Fprintf(log, "agentjournal: the transcript stops here: follow the journal of %s: %v\n", ref.AgentExecutionID, err)
				}
				return
			}
			for _, e := range batch {
				if err := tw.Add(e.Record); err != nil {
					return
				}
				if sc, ok := e.Record.(*eventstore.StateChanged); ok && sc.Lifecycle.Final() {
					return
				}
			}
		}
	}()
	return done
}

// plainOutput passes on the lines of the agent's output that are its own
// plain text, leaving out what the transcript tells from the journal: marker
// lines, and with protocol the JSON lines a known CLI speaks. The runtime
// writes a line at a time, its line feed sometimes apart: a line is judged
// whole.
type plainOutput struct {
	mu       sync.Mutex
	w        io.Writer
	protocol bool
	line     []byte
}

func (p *plainOutput) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.line = append(p.line, b...)
			break
		}
		p.line = append(p.line, b[:i+1]...)
		b = b[i+1:]
		line := p.line
		p.line = p.line[:0]
		trimmed := bytes.TrimLeft(line, " \t")
		if bytes.HasPrefix(trimmed, []byte(marker.Prefix)) || (p.protocol && bytes.HasPrefix(trimmed, []byte("{"))) {
			continue
		}
		if _, err := p.w.Write(line); err != nil {
			return 0, err
		}
	}
	return n, nil
}
