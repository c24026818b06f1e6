package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// Fixture agent steps that send signals through stdout markers.
const (
	progressStep = `signal:{"type":"progress","payload":{"summary":"working"}}`
	statusStep   = `signal:{"type":"status","payload":{"summary":"checking","phase":"testing"}}`
)

// The tests that start agent processes do not run in parallel: a process
// forked while another test closes its bus holds that bus's directory lock
// until it execs, and the other test's next command then finds the data
// directory in use.

// runningLine matches the line run prints once the agent is launched.
var runningLine = regexp.MustCompile(`agentjournal: running (ae-[0-9a-f]+) \(generic, journal (journal-[0-9a-f]+)\); Ctrl-C stops it\n`)

// launchedID returns the execution id run announced on stderr.
func launchedID(t *testing.T, stderr string) string {
	t.Helper()
	m := runningLine.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("stderr does not announce the launch (want a line matching %s):\n%s", runningLine, stderr)
	}
	return m[1]
}

// journalOf reads the journal of the execution id with journal cat --json.
func journalOf(t *testing.T, dir, id string) []eventstore.Record {
	t.Helper()
	return decodeLines(t, mustRun(t, dir, "journal", "cat", id, "--json"))
}

// finalLifecycle is the lifecycle and reason of the last state change that
// set one.
func finalLifecycle(records []eventstore.Record) (eventstore.Lifecycle, string) {
	var lc eventstore.Lifecycle
	var reason string
	for _, r := range records {
		if s, ok := r.(*eventstore.StateChanged); ok && s.Lifecycle != "" {
			lc, reason = s.Lifecycle, s.Reason
		}
	}
	return lc, reason
}

func TestRunCompletes(t *testing.T) {
	agent := fixtures.AgentBinary(t)
	dir := t.TempDir()
	// The sleep leaves the policy time to decide while the agent runs; the
	// test holds either way.
	r := run(t, dir, "run", "--owner", "Task/t-7", "--", agent, "say:hello from the agent", progressStep, statusStep, "sleep:200ms")
	if r.code != exitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	id := launchedID(t, r.stderr)
	for _, want := range []string{
		"hello from the agent\n",
		"execution:         " + id + " (Task/t-7, agent generic)",
		"lifecycle:         completed (exit status 0)",
		"processed:         0 messages, 2 observations, 2 decisions",
		"view the journal: agentjournal --data " + dir + " journal cat " + id + "\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout does not contain %q:\n%s", want, r.stdout)
		}
	}

	records := journalOf(t, dir, id)
	if _, ok := records[0].(*eventstore.Header); !ok {
		t.Fatalf("record 1 is %s, want the header", records[0].Kind())
	}
	running := false
	signals := map[string]eventstore.SignalType{} // observation id -> signal type
	decided := map[string]bool{}
	for _, rec := range records {
		switch rec := rec.(type) {
		case *eventstore.StateChanged:
			running = running || rec.Lifecycle == eventstore.LifecycleRunning
		case *eventstore.Observation:
			if rec.Signal != nil {
				signals[rec.ObservationID] = rec.Signal.Type
			}
		case *eventstore.Decision:
			decided[rec.ObservationID] = true
		}
	}
	if !running {
		t.Errorf("the journal never records lifecycle running")
	}
	var types []string
	for obs, typ := range signals {
		types = append(types, string(typ))
		if !decided[obs] {
			t.Errorf("observation %s (%s) has no decision: the policy did not run", obs, typ)
		}
	}
	if len(types) != 2 || !strings.Contains(strings.Join(types, " "), "progress") || !strings.Contains(strings.Join(types, " "), "status") {
		t.Errorf("observed signals %v, want progress and status", types)
	}
	if lc, reason := finalLifecycle(records); lc != eventstore.LifecycleCompleted {
		t.Errorf("final lifecycle %s (%s), want %s", lc, reason, eventstore.LifecycleCompleted)
	}
}

func TestRunFails(t *testing.T) {
	agent := fixtures.AgentBinary(t)
	dir := t.TempDir()
	r := run(t, dir, "run", "--", agent, "say:about to fail", "exit:3")
	if r.code != exitError {
		t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, exitError, r.stderr)
	}
	id := launchedID(t, r.stderr)
	if want := "agentjournal: agent execution " + id + " failed: exit status 3\n"; !strings.HasSuffix(r.stderr, want) {
		t.Errorf("stderr does not end with %q:\n%s", want, r.stderr)
	}
	if want := "lifecycle:         failed (exit status 3)"; !strings.Contains(r.stdout, want) {
		t.Errorf("stdout does not contain %q:\n%s", want, r.stdout)
	}
	if lc, _ := finalLifecycle(journalOf(t, dir, id)); lc != eventstore.LifecycleFailed {
		t.Errorf("final lifecycle %s, want %s", lc, eventstore.LifecycleFailed)
	}
}

// watchWriter is a buffer, safe for concurrent use, that closes seen once
// its content contains want.
type watchWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
}

func newWatchWriter(want string) *watchWriter {
	return &watchWriter{want: want, seen: make(chan struct{})}
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := strings.Contains(w.buf.String(), w.want)
	n, err := w.buf.Write(p)
	if !had && strings.Contains(w.buf.String(), w.want) {
		close(w.seen)
	}
	return n, err
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestRunInterrupted(t *testing.T) {
	agent := fixtures.AgentBinary(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// Interrupt once the agent is running, as Ctrl-C would.
	stdout := newWatchWriter("agent started\n")
	go func() {
		select {
		case <-stdout.seen:
			time.Sleep(300 * time.Millisecond)
		case <-time.After(30 * time.Second):
		}
		cancel()
	}()
	var stderr bytes.Buffer
	start := time.Now()
	code := Main{Stdout: stdout, Stderr: &stderr}.Run(ctx,
		[]string{"--data", dir, "run", "--grace", "2s", "--", agent, "say:agent started", "sleep:60s"})
	if elapsed := time.Since(start); elapsed > 30*time.Second {
		t.Errorf("run took %s to return after the interrupt; want it to stop the agent, not wait for it", elapsed)
	}
	if code != exitError || !strings.HasSuffix(stderr.String(), "agentjournal: interrupted\n") {
		t.Fatalf("exit %d, want %d and \"interrupted\"; stderr:\n%s", code, exitError, stderr.String())
	}
	id := launchedID(t, stderr.String())
	if want := "lifecycle:         cancelled (stopped)"; !strings.Contains(stdout.String(), want) {
		t.Errorf("stdout does not contain %q:\n%s", want, stdout.String())
	}
	if lc, reason := finalLifecycle(journalOf(t, dir, id)); lc != eventstore.LifecycleCancelled {
		t.Errorf("final lifecycle %s (%s), want %s", lc, reason, eventstore.LifecycleCancelled)
	}
}

// leaveRunning writes the journal of an execution whose host was killed
// while it ran: a header and lifecycle running, and nothing after.
func leaveRunning(t *testing.T, dir string) string {
	t.Helper()
	ctx := t.Context()
	cfg := bus.DefaultConfig()
	cfg.DataDir = dir
	b, err := bus.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s, err := eventstore.OpenJetStream(ctx, b.JetStream(), eventstore.JetStreamConfig{Stream: b.StreamName()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id, err := eventstore.NewAgentExecutionID(eventstore.OwnerTask, "t-left", "killed host")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := eventstore.NewReference(eventstore.OwnerTask, "t-left", id)
	if err != nil {
		t.Fatal(err)
	}
	header := &eventstore.Header{AgentID: "generic",
		ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureStructuredHeadless,
			Signals: eventstore.SurfacedSignalTypes(), SignalTransports: []eventstore.SignalTransport{eventstore.SignalViaStdoutMarker}},
		TransportState: &eventstore.TransportState{StructuredLane: eventstore.LaneStdio}}
	if _, err := s.EnsureJournal(ctx, ref, header); err != nil {
		t.Fatal(err)
	}
	running := &eventstore.StateChanged{Lifecycle: eventstore.LifecycleRunning,
		Attention: eventstore.AttentionAutonomous, Activity: eventstore.ActivityIdle, Reason: "process 4242 started"}
	running.RecordID = eventstore.RecordID(ref.JournalID, eventstore.KindStateChanged, "lifecycle:running")
	if _, err := s.Append(ctx, ref, running); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestRunRecoversLeftovers(t *testing.T) {
	agent := fixtures.AgentBinary(t)
	dir := t.TempDir()
	leftover := leaveRunning(t, dir)
	r := run(t, dir, "run", "--", agent, "say:fresh start")
	if r.code != exitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	want := "agentjournal: " + leftover + " was left running by an agentjournal that is gone; marked it terminated (system_restart)\n"
	if !strings.HasPrefix(r.stderr, want) {
		t.Errorf("stderr does not start with %q:\n%s", want, r.stderr)
	}
	if id := launchedID(t, r.stderr); id == leftover {
		t.Errorf("run launched %s, the leftover execution's id", id)
	}
	if lc, reason := finalLifecycle(journalOf(t, dir, leftover)); lc != eventstore.LifecycleTerminated || reason != "system_restart" {
		t.Errorf("leftover's final lifecycle %s (%s), want %s (system_restart)", lc, reason, eventstore.LifecycleTerminated)
	}
	// A second run finds nothing left to recover.
	r = run(t, dir, "run", "--", agent, "say:again")
	if r.code != exitOK || strings.Contains(r.stderr, "left running") {
		t.Errorf("second run: exit %d, stderr:\n%s\nwant 0 and no recovered executions", r.code, r.stderr)
	}
}

func TestRunUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want []string // in stderr
	}{
		{"no command", []string{"run"}, []string{"run: missing the agent's command", "after --", "agentjournal run -- ./my-agent"}},
		{"empty command", []string{"run", "--"}, []string{"missing the agent's command"}},
		{"command without --", []string{"run", "./my-agent", "--flag"}, []string{"unknown flag --flag"}},
		{"argument without --", []string{"run", "./my-agent"}, []string{`unexpected argument "./my-agent"`, "goes after --"}},
		{"unknown agent", []string{"run", "--agent", "gpt-9", "--", "x"}, []string{`--agent "gpt-9"`, "generic, claude-code, codex, copilot"}},
		{"bad owner", []string{"run", "--owner", "Nobody/x", "--", "x"}, []string{`--owner "Nobody/x"`, "ENTITY/ID"}},
		{"bad grace", []string{"run", "--grace", "-1s", "--", "x"}, []string{"--grace -1s", "positive"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runWithoutData(t, tc.args, exitUsage, "a usage error")
			mentions(t, "stderr", r.stderr, tc.want)
		})
	}
}

func TestRunHelp(t *testing.T) {
	t.Parallel()
	r := run(t, filepath.Join(t.TempDir(), "data"), "run", "-h")
	if r.code != exitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	mentions(t, "run -h", r.stdout, []string{
		"-- CMD ARGS...", "--owner ENTITY/ID", "--agent NAME", "--interactive", "--prompt TEXT", "--seed S", "--grace DURATION",
		"system_restart", "SIGKILL", "exits 0 when the agent completed",
		"Example:\n  agentjournal run -- ./my-agent --flag\n",
		`agentjournal run --agent claude-code --prompt "fix the failing test"`,
	})
}

// TestRunNoGoroutineLeak checks that run stops the policy, the runtime and
// the store before it returns. It does not run in parallel, so other tests'
// servers do not count.
func TestRunNoGoroutineLeak(t *testing.T) {
	agent := fixtures.AgentBinary(t)
	before := runtime.NumGoroutine()
	mustRun(t, t.TempDir(), "run", "--", agent, "say:hi", progressStep)
	awaitGoroutines(t, before, "run")
}

func TestRunInteractive(t *testing.T) {
	dir := t.TempDir()
	agent := fixtures.AgentBinary(t)
	r := run(t, dir, "run", "--interactive", "--", agent, "say:on a terminal", `signal:{"type":"status","payload":{"summary":"interactive"}}`)
	if r.code != 0 || !strings.Contains(r.stdout, "on a terminal") {
		t.Fatalf("run --interactive: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	recs, _ := filepath.Glob(filepath.Join(daemon.Layout{Dir: dir}.Recordings(), "*.terminal.jsonl"))
	if len(recs) != 1 {
		t.Fatalf("terminal recordings %v, want one", recs)
	}
}
