package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/runtime/outputlog"
	"github.com/agentjournal/agentjournal/supervisor"
	"github.com/agentjournal/agentjournal/terminal"
)

type rig struct {
	store      *eventstore.JetStreamStore
	rt         *runtime.Runtime
	agent      string
	recordings string
	hosted     string
	// output keeps the agents' plain output, stderr included, for a test
	// to show when an agent ends unexpectedly.
	output string
}

func newRig(t *testing.T, grace time.Duration) *rig {
	t.Helper()
	recordings := filepath.Join(t.TempDir(), "terminal-recordings")
	hosted := filepath.Join(t.TempDir(), "hosted")
	output := filepath.Join(t.TempDir(), "output")
	r := storeRig(t, runtime.Config{StopGrace: grace, Terminals: terminal.NewRegistry(nil), RecordingDir: recordings, HostDir: hosted, OutputDir: output})
	r.recordings, r.hosted, r.output = recordings, hosted, output
	return r
}

// storeRig is a rig whose runtime has cfg over a store of its own.
func storeRig(t *testing.T, cfg runtime.Config) *rig {
	t.Helper()
	s := fixtures.OpenStore(t, fixtures.StartNATS(t))
	cfg.Store = s
	return &rig{store: s, rt: startRuntime(t, cfg), agent: fixtures.AgentBinary(t)}
}

// startRuntime starts a runtime with cfg; it is closed, and then its
// terminals if it has them, when the test ends.
func startRuntime(t *testing.T, cfg runtime.Config) *runtime.Runtime {
	rt := runtime.New(cfg)
	t.Cleanup(func() {
		rt.Close(context.Background())
		if cfg.Terminals != nil {
			cfg.Terminals.Close()
		}
	})
	return rt
}

// stderr returns what an execution's agent wrote on stderr, for a failure
// message.
func (r *rig) stderr(t *testing.T, ref eventstore.Reference) string {
	t.Helper()
	page, err := outputlog.Read(r.output, ref.AgentExecutionID, 1, 200, "stderr")
	if err != nil {
		return fmt.Sprintf("(stderr not read: %v)", err)
	}
	var b strings.Builder
	for _, e := range page.Entries {
		b.WriteString(e.Line + "\n")
	}
	return b.String()
}

func (r *rig) launch(t *testing.T, steps ...string) eventstore.Reference {
	t.Helper()
	return r.launchAs(t, eventstore.PostureStructuredHeadless, steps...)
}

func (r *rig) launchAs(t *testing.T, posture eventstore.Posture, steps ...string) eventstore.Reference {
	t.Helper()
	ref, err := r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-1",
		Agent: "generic", Posture: posture, Command: append([]string{r.agent}, steps...)})
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func (r *rig) wait(t *testing.T, ref eventstore.Reference) *execution.State {
	t.Helper()
	if done := r.rt.Done(ref.AgentExecutionID); done != nil {
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatal("agent did not exit")
		}
	}
	return r.replay(t, ref)
}

func (r *rig) replay(t *testing.T, ref eventstore.Reference) *execution.State {
	t.Helper()
	return replayRecords(t, r.records(t, ref))
}

func (r *rig) records(t *testing.T, ref eventstore.Reference) []eventstore.Record {
	t.Helper()
	return fixtures.ReadJournal(t, r.store, ref)
}

// replayRecords is the state of the execution whose journal holds recs.
func replayRecords(t *testing.T, recs []eventstore.Record) *execution.State {
	t.Helper()
	st, err := execution.Replay(recs)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestLifecycleFollowsTheProcess(t *testing.T) {
	r := newRig(t, 500*time.Millisecond)
	cases := []struct {
		name   string
		steps  []string
		stop   bool
		want   eventstore.Lifecycle
		reason string
	}{
		{"exit 0", []string{"say:hi"}, false, eventstore.LifecycleCompleted, "exit status 0"},
		{"exit 3", []string{"exit:3"}, false, eventstore.LifecycleFailed, "exit status 3"},
		{"crash", []string{"crash"}, false, eventstore.LifecycleFailed, "signal: killed"},
		{"stop", []string{"sleep:60s"}, true, eventstore.LifecycleCancelled, "stopped"},
		{"kill after grace", []string{"ignore-term", "sleep:60s"}, true, eventstore.LifecycleTerminated, "killed after"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ref := r.launch(t, c.steps...)
			if c.stop {
				time.Sleep(200 * time.Millisecond)
				if err := r.rt.Stop(context.Background(), ref.AgentExecutionID); err != nil {
					t.Fatal(err)
				}
				// Stop returned once the process ended: it is no longer
				// live here (the API's answer to a stop says so).
				if r.rt.Done(ref.AgentExecutionID) != nil {
					t.Fatalf("Done(%s) is not nil after Stop returned: still live", ref.AgentExecutionID)
				}
			}
			st := r.wait(t, ref)
			if st.Lifecycle != c.want || !strings.Contains(st.LifecycleReason, c.reason) {
				t.Fatalf("lifecycle %s (%s), want %s (%s)", st.Lifecycle, st.LifecycleReason, c.want, c.reason)
			}
			recs := r.records(t, ref)
			if _, ok := recs[0].(*eventstore.Header); !ok {
				t.Fatalf("first record %s, want the header", recs[0].Kind())
			}
		})
	}
}

func TestMarkersMessagesAndAnswers(t *testing.T) {
	for _, posture := range []eventstore.Posture{eventstore.PostureStructuredHeadless, eventstore.PostureStructuredInteractive} {
		t.Run(string(posture), func(t *testing.T) { testMarkersMessagesAndAnswers(t, posture) })
	}
}

func testMarkersMessagesAndAnswers(t *testing.T, posture eventstore.Posture) {
	r := newRig(t, time.Second)
	ref := r.launchAs(t, posture,
		`signal:{"type":"progress","payload":{"summary":"reading"}}`,
		`badnonce:{"type":"completed_claim","payload":{"summary":"forged"}}`,
		`raw:@@agentjournal nonce-is-missing`,
		`signal:{"type":"progress","payload":`,
		"ask:req-1:Which branch?",
		"echo:1",
	)
	// Wait for the question, then answer it and send one more message.
	waitFor(t, func() bool {
		for _, rec := range r.records(t, ref) {
			if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil && o.Signal.Type == eventstore.SignalNeedsInput {
				return true
			}
		}
		return false
	})
	wantTransport := eventstore.TransportAdapter
	if posture != eventstore.PostureStructuredHeadless {
		wantTransport = eventstore.TransportPTY
		// Raw terminal input is transport evidence: the recording gets it,
		// the journal does not. It is typed without Enter: the agent takes
		// the next line typed on its terminal as the answer, and the
		// answer typed below ends this one.
		before := len(r.records(t, ref))
		if err := r.rt.TerminalInput(ref.AgentExecutionID, []byte("raw keys ")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if after := len(r.records(t, ref)); after != before {
			t.Fatalf("raw terminal input added %d journal records", after-before)
		}
	}
	answer, _ := json.Marshal(map[string]string{"requestId": "req-1", "text": "main"})
	ack, err := r.rt.SendMessage(context.Background(), ref.AgentExecutionID, runtime.SendMessageInput{MessageID: "m-1", Type: "answer", Payload: answer})
	if err != nil || ack.Delivery != eventstore.DeliveryDelivered {
		t.Fatalf("answer: %+v, %v", ack, err)
	}
	again, err := r.rt.SendMessage(context.Background(), ref.AgentExecutionID, runtime.SendMessageInput{MessageID: "m-1", Type: "answer", Payload: answer})
	if err != nil || !again.Duplicate || again.Sequence != ack.Sequence || again.Delivery != ack.Delivery {
		t.Fatalf("repeated message id: %+v, %v; want the first acknowledgement %+v", again, err, ack)
	}
	prompt, _ := json.Marshal(map[string]string{"text": "carry on"})
	if _, err := r.rt.SendMessage(context.Background(), ref.AgentExecutionID, runtime.SendMessageInput{Type: "prompt", Payload: prompt}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.rt.SendMessage(context.Background(), ref.AgentExecutionID, runtime.SendMessageInput{Type: "sing", Payload: prompt}); !errors.Is(err, runtime.ErrUnknownMessageType) {
		t.Fatalf("undeclared message type: got %v, want ErrUnknownMessageType", err)
	}
	if ack.Transport != wantTransport {
		t.Fatalf("answer delivered via %s, want %s", ack.Transport, wantTransport)
	}
	st := r.wait(t, ref)
	if st.Posture != posture || st.TerminalAttached != (posture != eventstore.PostureStructuredHeadless) {
		t.Fatalf("state says posture %s, terminal attached %v", st.Posture, st.TerminalAttached)
	}
	if posture != eventstore.PostureStructuredHeadless {
		path, err := terminal.RecordingPath(r.recordings, ref.AgentExecutionID)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatalf("no terminal recording: %v", err)
		}
		defer f.Close()
		_, events, err := terminal.ReadRecording(f)
		if err != nil {
			t.Fatalf("recording does not parse: %v", err)
		}
		var in, out strings.Builder
		for _, e := range events {
			switch e.Code {
			case "i":
				in.WriteString(e.Data)
			case "o":
				out.WriteString(e.Data)
			}
		}
		if !strings.Contains(in.String(), "raw keys") || !strings.Contains(out.String(), "answer req-1") {
			t.Fatalf("recording input %q / output lacks the raw input or the agent's answer", in.String())
		}
	}
	if st.Lifecycle != eventstore.LifecycleCompleted {
		t.Fatalf("lifecycle %s (%s)", st.Lifecycle, st.LifecycleReason)
	}
	var signals []string
	var evidence, diagnostics, deliveries int
	for _, rec := range r.records(t, ref) {
		switch x := rec.(type) {
		case *eventstore.Observation:
			switch {
			case x.Signal == nil:
				evidence++
			case x.Signal.Type == eventstore.SignalDiagnostic:
				diagnostics++
			default:
				signals = append(signals, string(x.Signal.Type))
			}
		case *eventstore.MessageDelivery:
			if x.Status == eventstore.DeliveryDelivered {
				deliveries++
			}
		}
	}
	if fmt.Sprint(signals) != "[progress needs_input]" {
		t.Fatalf("signals %v, want [progress needs_input] (the forged claim must not count)", signals)
	}
	if evidence != 2 || diagnostics != 1 || deliveries != 2 {
		t.Fatalf("evidence %d, diagnostics %d, deliveries %d; want 2 (wrong and missing nonce), 1 (malformed), 2", evidence, diagnostics, deliveries)
	}
}

func TestMessageToADeadAgentIsAFailedDelivery(t *testing.T) {
	r := newRig(t, time.Second)
	ref := r.launch(t, "exit:0")
	r.wait(t, ref)
	prompt, _ := json.Marshal(map[string]string{"text": "anyone?"})
	ack, err := r.rt.SendMessage(context.Background(), ref.AgentExecutionID, runtime.SendMessageInput{Type: "prompt", Payload: prompt})
	if err != nil {
		t.Fatal(err)
	}
	if ack.Delivery != eventstore.DeliveryFailed || ack.Reason == "" {
		t.Fatalf("ack %+v, want a failed delivery with a reason", ack)
	}
}

// refusingStore cannot write headers.
type refusingStore struct{ runtime.Store }

func (refusingStore) EnsureJournal(context.Context, eventstore.Reference, *eventstore.Header) (eventstore.Reference, error) {
	return eventstore.Reference{}, errors.New("disk full")
}

func TestLaunchWithoutHeaderStartsNothing(t *testing.T) {
	r := newRig(t, time.Second)
	rt := runtime.New(runtime.Config{Store: refusingStore{r.store}})
	witness := filepath.Join(t.TempDir(), "started")
	_, err := rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t",
		Agent: "generic", Command: []string{"/bin/sh", "-c", "touch " + witness}})
	if err == nil {
		t.Fatal("launch succeeded without a header")
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := os.Stat(witness); !os.IsNotExist(err) {
		t.Fatalf("the agent process ran although its header was refused (%v)", err)
	}
}

func TestRecoverTerminatesOrphans(t *testing.T) {
	r := newRig(t, time.Second)
	ref := r.launch(t, "sleep:60s")
	// A second runtime on the same store, as after a restart: the first
	// one's process is not its own.
	other := runtime.New(runtime.Config{Store: r.store})
	recovered, err := other.Recover(context.Background(), runtime.RecoverAll)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(recovered) != fmt.Sprint([]string{ref.AgentExecutionID}) {
		t.Fatalf("recovered %v, want [%s]", recovered, ref.AgentExecutionID)
	}
	st := r.replay(t, ref)
	if st.Lifecycle != eventstore.LifecycleTerminated || st.LifecycleReason != "system_restart" {
		t.Fatalf("after recovery: %s (%s), want terminated (system_restart)", st.Lifecycle, st.LifecycleReason)
	}
	if again, _ := other.Recover(context.Background(), runtime.RecoverAll); len(again) != 0 {
		t.Fatalf("second recovery touched %v", again)
	}
}

func TestFiftyConcurrentExecutions(t *testing.T) {
	r := newRig(t, time.Second)
	var wg sync.WaitGroup
	refs := make([]eventstore.Reference, 50)
	for i := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			refs[i] = r.launch(t, fmt.Sprintf(`signal:{"type":"status","payload":{"summary":"agent %d"}}`, i), "exit:"+fmt.Sprint(i%2))
		}()
	}
	wg.Wait()
	for i, ref := range refs {
		st := r.wait(t, ref)
		want := eventstore.LifecycleCompleted
		if i%2 == 1 {
			want = eventstore.LifecycleFailed
		}
		if st.Lifecycle != want || len(st.ProcessedObservations) != 1 {
			t.Fatalf("execution %d: %s with %d observations, want %s with 1", i, st.Lifecycle, len(st.ProcessedObservations), want)
		}
	}
}

func TestFloodNeitherBlocksNorGrows(t *testing.T) {
	r := newRig(t, time.Second)
	goruntime.GC()
	var before goruntime.MemStats
	goruntime.ReadMemStats(&before)
	ref := r.launch(t, "flood:100000000", `signal:{"type":"status","payload":{"summary":"after the flood"}}`)
	st := r.wait(t, ref)
	var after goruntime.MemStats
	goruntime.ReadMemStats(&after)
	if st.Lifecycle != eventstore.LifecycleCompleted || len(st.ProcessedObservations) != 1 {
		t.Fatalf("after 100 MB: %s with %d observations, want completed with the marker after the flood", st.Lifecycle, len(st.ProcessedObservations))
	}
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 64<<20 {
		t.Fatalf("heap grew by %d MiB while the agent printed 100 MB", grew>>20)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The provider adapters launch a fixture that replays a real capture in
// place of the CLI: its output becomes observations and activity.
func TestProviderCaptures(t *testing.T) {
	r := newRig(t, time.Second)
	cases := []struct {
		agent, capture string
		wantSignals    []eventstore.SignalType
	}{
		{"claude-code", "claude/testdata/gleam/basic_query.ndjson",
			[]eventstore.SignalType{eventstore.SignalMessage, eventstore.SignalCompletedClaim}},
		{"codex", "codex/testdata/agentcmd/stream-output-5.jsonl",
			[]eventstore.SignalType{eventstore.SignalMessage}},
		{"copilot", "copilot/testdata/minions/copilot-output-sample-claude.jsonl",
			[]eventstore.SignalType{eventstore.SignalMessage}},
	}
	for _, c := range cases {
		t.Run(c.agent, func(t *testing.T) {
			capture, err := filepath.Abs(c.capture)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerRepository, OwnerID: "repo",
				Agent: c.agent, Command: []string{r.agent, "replay:" + capture}, Prompt: "replay the capture", Shape: eventstore.ShapeOneShot})
			if err != nil {
				t.Fatal(err)
			}
			st := r.wait(t, ref)
			if st.Lifecycle != eventstore.LifecycleCompleted {
				t.Fatalf("lifecycle %s (%s)", st.Lifecycle, st.LifecycleReason)
			}
			seen := map[eventstore.SignalType]bool{}
			for _, rec := range r.records(t, ref) {
				if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil {
					if o.Source != eventstore.ObservedProviderOutput {
						t.Fatalf("observation %s from %s, want provider-output", o.ObservationID, o.Source)
					}
					seen[o.Signal.Type] = true
				}
			}
			for _, s := range c.wantSignals {
				if !seen[s] {
					t.Errorf("no %s signal from the %s capture (saw %v)", s, c.agent, seen)
				}
			}
		})
	}
}

// The hosted directory names an execution from just before its process
// starts until its end is in the journal.
func TestHostedFileLastsAsLongAsTheProcess(t *testing.T) {
	r := newRig(t, time.Second)
	hostedFiles := func() []string {
		names, err := filepath.Glob(filepath.Join(r.hosted, "host-*", "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range names {
			names[i] = filepath.Base(n)
		}
		return names
	}
	ref := r.launch(t, "sleep:60s")
	if got, want := hostedFiles(), []string{ref.AgentExecutionID + ".json"}; !slices.Equal(got, want) {
		t.Fatalf("hosted files %q while it runs, want %q", got, want)
	}
	hostDirs, _ := filepath.Glob(filepath.Join(r.hosted, "host-*"))
	if len(hostDirs) != 1 {
		t.Fatalf("host directories %q, want one", hostDirs)
	}
	data, err := os.ReadFile(filepath.Join(hostDirs[0], ref.AgentExecutionID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var stored eventstore.Reference
	if err := json.Unmarshal(data, &stored); err != nil || stored.JournalID != ref.JournalID || stored.AgentExecutionID != ref.AgentExecutionID {
		t.Fatalf("hosted file holds %s (%v), want the reference of %s", data, err, ref.AgentExecutionID)
	}
	if err := r.rt.Stop(context.Background(), ref.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	r.wait(t, ref)
	if got := hostedFiles(); len(got) != 0 {
		t.Fatalf("hosted files %q after the execution ended, want none", got)
	}
	// A launch whose process cannot start ends at once, and is forgotten.
	_, err = r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-1",
		Agent: "generic", Command: []string{filepath.Join(t.TempDir(), "no-such-agent")}})
	if err == nil {
		t.Fatal("launching a missing program succeeded")
	}
	if got := hostedFiles(); len(got) != 0 {
		t.Fatalf("hosted files %q after a failed start, want none", got)
	}
	// A runtime that closes with nothing left running leaves nothing.
	if err := r.rt.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(r.hosted); len(left) != 0 {
		t.Fatalf("%s holds %d entries after Close, want none", r.hosted, len(left))
	}
}

// Runtimes sharing a HostDir (two run commands on one data dir and a shared
// log) never recover each other's executions while they live.
func TestRecoverHostedSparesLiveRuntimes(t *testing.T) {
	r := newRig(t, time.Second)
	ref := r.launch(t, "sleep:60s")
	other := runtime.New(runtime.Config{Store: r.store, HostDir: r.hosted})
	t.Cleanup(func() { other.Close(context.Background()) })
	otherRef, err := other.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-2",
		Agent: "generic", Command: []string{r.agent, "sleep:60s"}})
	if err != nil {
		t.Fatal(err)
	}
	third := runtime.New(runtime.Config{Store: r.store, HostDir: r.hosted})
	for _, rt := range []*runtime.Runtime{third, other, r.rt} {
		recovered, err := rt.Recover(context.Background(), runtime.RecoverHosted)
		if err != nil || len(recovered) != 0 {
			t.Fatalf("Recover(RecoverHosted) with every runtime alive: %v, %v; want nothing", recovered, err)
		}
	}
	for _, ref := range []eventstore.Reference{ref, otherRef} {
		if st := r.replay(t, ref); st.Lifecycle != eventstore.LifecycleRunning {
			t.Errorf("%s is %s (%s), want running", ref.AgentExecutionID, st.Lifecycle, st.LifecycleReason)
		}
	}
}

func TestRecoverHostedNeedsHostDir(t *testing.T) {
	r := newRig(t, time.Second)
	bare := runtime.New(runtime.Config{Store: r.store})
	if _, err := bare.Recover(context.Background(), runtime.RecoverHosted); err == nil || !strings.Contains(err.Error(), "HostDir") {
		t.Fatalf("Recover(RecoverHosted) without a HostDir: %v, want an error naming HostDir", err)
	}
}

// TestRecoverSkipsADamagedJournal: a journal with records missing, or with
// a record that does not decode, is left for a person to restore, not
// built on; the other orphans are recovered.
func TestRecoverSkipsADamagedJournal(t *testing.T) {
	b := fixtures.StartNATS(t)
	s := fixtures.OpenStore(t, b)
	ctx := context.Background()
	var refs []eventstore.Reference
	for _, id := range []string{"ae-sound", "ae-gap", "ae-undecodable"} {
		refs = append(refs, fixtures.WriteJournal(t, s, id, nil, true))
	}
	fixtures.PublishPastTheEnd(t, b, refs[1], 5)
	subj, err := refs[2].Subject(bus.SubjectPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.JetStream().Publish(ctx, subj, []byte(`{"sequence":4,"type":"message.accepted","bogus":1}`)); err != nil {
		t.Fatal(err)
	}
	recovered, err := runtime.New(runtime.Config{Store: s}).Recover(ctx, runtime.RecoverAll)
	if err != nil || fmt.Sprint(recovered) != "[ae-sound]" {
		t.Fatalf("recovered %v, %v; want [ae-sound] and no error", recovered, err)
	}
	for _, damaged := range refs[1:] {
		after, err := s.Lookup(ctx, damaged.AgentExecutionID)
		if err != nil {
			t.Fatal(err)
		}
		if after.RecordCount != 3 {
			t.Errorf("the damaged journal %s holds %d records, want its 3: nothing appended", damaged.AgentExecutionID, after.RecordCount)
		}
	}
}

// TestRecoverSkipsAJournalTheStoreRefuses: a journal found damaged before
// the recovery (its store refuses writes to it: a lost tail, which reads
// whole and running) gets no interruption and no end; the others are
// recovered.
func TestRecoverSkipsAJournalTheStoreRefuses(t *testing.T) {
	b := fixtures.StartNATS(t)
	ctx := context.Background()
	refuse := func(ref eventstore.Reference) error {
		if ref.AgentExecutionID == "ae-lost-tail" {
			return fmt.Errorf("execution %s lost records: %w", ref.AgentExecutionID, eventstore.ErrDamaged)
		}
		return nil
	}
	s, err := eventstore.OpenJetStream(ctx, b.JetStream(), eventstore.JetStreamConfig{Stream: b.StreamName(), Refuse: refuse})
	if err != nil {
		t.Fatal(err)
	}
	plain := fixtures.OpenStore(t, b)
	var refs []eventstore.Reference
	for _, id := range []string{"ae-sound", "ae-lost-tail"} {
		refs = append(refs, fixtures.WriteJournal(t, plain, id, nil, true))
	}
	recovered, err := runtime.New(runtime.Config{Store: s}).Recover(ctx, runtime.RecoverAll)
	if err != nil || fmt.Sprint(recovered) != "[ae-sound]" {
		t.Fatalf("recovered %v, %v; want [ae-sound] and no error", recovered, err)
	}
	after, err := s.Lookup(ctx, refs[1].AgentExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	if after.RecordCount != 2 {
		t.Errorf("the refused journal holds %d records, want its 2: nothing appended", after.RecordCount)
	}
}

// TestRecoverFailsUndeliveredMessages: a message the journal accepted but
// whose delivery its host never recorded (the host died between the two)
// gets a failed delivery when the execution is recovered; a message that
// has an outcome keeps it.
func TestRecoverFailsUndeliveredMessages(t *testing.T) {
	s := fixtures.OpenStore(t, fixtures.StartNATS(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ref := fixtures.WriteJournal(t, s, "ae-in-flight", nil, true,
		&eventstore.MessageAccepted{MessageID: "m-done", Source: eventstore.SourceOperator, MessageType: "prompt", Payload: []byte(`{"text":"a"}`)},
		&eventstore.MessageDelivery{MessageID: "m-done", Status: eventstore.DeliveryDelivered, Transport: eventstore.TransportAdapter},
		&eventstore.MessageAccepted{MessageID: "m-in-flight", Source: eventstore.SourceOperator, MessageType: "prompt", Payload: []byte(`{"text":"b"}`)})
	if _, err := runtime.New(runtime.Config{Store: s}).Recover(ctx, runtime.RecoverAll); err != nil {
		t.Fatal(err)
	}
	var got []string
	for e, err := range s.ReadJournal(ctx, ref, 6) {
		if err != nil {
			t.Fatal(err)
		}
		switch r := e.Record.(type) {
		case *eventstore.MessageDelivery:
			got = append(got, fmt.Sprintf("delivery %s %s", r.MessageID, r.Status))
		case *eventstore.StateChanged:
			got = append(got, fmt.Sprintf("lifecycle %s", r.Lifecycle))
		}
	}
	want := []string{"delivery m-in-flight failed", "lifecycle terminated"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records the recovery appended (-want +got):\n%s", diff)
	}
}

// TestRecoverTakesOverAConversationBetweenTurns: a conversation whose turns
// are processes of their own (Codex) is not ended by a restart of its
// host: the turn that ran when the host went is recorded lost, and the
// execution waits for its next message, which will resume the session the
// journal names.
func TestRecoverTakesOverAConversationBetweenTurns(t *testing.T) {
	s := fixtures.OpenStore(t, fixtures.StartNATS(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const id = "ae-conversation"
	adapter, err := runtime.NewAdapter("codex")
	if err != nil {
		t.Fatal(err)
	}
	h := &eventstore.Header{AgentID: "codex", ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureStructuredHeadless,
		Messages: adapter.Messages(eventstore.ShapeConversation), SessionShape: eventstore.ShapeConversation}}
	journalID := eventstore.JournalIDFor(eventstore.OwnerTask, "t-1", id)
	state := func(key string, st *eventstore.StateChanged) *eventstore.StateChanged {
		st.RecordID = eventstore.RecordID(journalID, eventstore.KindStateChanged, key)
		return st
	}
	ref := fixtures.WriteJournal(t, s, id, h, false,
		&eventstore.MessageAccepted{MessageID: "prompt", Source: eventstore.SourceOperator, MessageType: "prompt", Payload: []byte(`{"text":"a"}`)},
		state("lifecycle:running", &eventstore.StateChanged{Lifecycle: eventstore.LifecycleRunning, Attention: eventstore.AttentionAutonomous}),
		&eventstore.MessageDelivery{MessageID: "prompt", Status: eventstore.DeliveryDelivered, Transport: eventstore.TransportAdapter},
		&eventstore.Observation{ObservationID: "out-1-0", Source: eventstore.ObservedProviderOutput, Confidence: eventstore.ConfidenceHigh,
			Native: &eventstore.NativeIDs{SessionID: "thread-1"}, Signal: eventstore.NewSignal(&eventstore.MessageSignal{Text: "hi"})},
		state("turn:1:end", &eventstore.StateChanged{Attention: eventstore.AttentionAwaitingOperator}),
		&eventstore.MessageAccepted{MessageID: "m-2", Source: eventstore.SourceOperator, MessageType: "prompt", Payload: []byte(`{"text":"b"}`)},
		&eventstore.MessageDelivery{MessageID: "m-2", Status: eventstore.DeliveryDelivered, Transport: eventstore.TransportAdapter},
		state("turn:2:start", &eventstore.StateChanged{Attention: eventstore.AttentionAutonomous}),
		&eventstore.Observation{ObservationID: "out2-3-0", Source: eventstore.ObservedProviderOutput, Confidence: eventstore.ConfidenceHigh,
			Native: &eventstore.NativeIDs{SessionID: "thread-1"}, Signal: eventstore.NewSignal(&eventstore.MessageSignal{Text: "working"})},
		&eventstore.MessageAccepted{MessageID: "m-3", Source: eventstore.SourceOperator, MessageType: "prompt", Payload: []byte(`{"text":"c"}`)},
	)
	supDir := t.TempDir()
	info, _ := json.Marshal(map[string]any{"ref": ref, "agent": "codex", "shape": "conversation", "nonce": "n-1"})
	if err := os.WriteFile(filepath.Join(supDir, ref.AgentExecutionID+".launch.json"), info, 0o600); err != nil {
		t.Fatal(err)
	}
	rt := runtime.New(runtime.Config{Store: s, Supervisor: &supervisor.Config{Binary: "/nonexistent"}, SupervisedDir: supDir})
	recovered, err := rt.Recover(ctx, runtime.RecoverAll)
	if err != nil || len(recovered) != 0 {
		t.Fatalf("Recover: %v, %v; want nothing marked terminated", recovered, err)
	}
	if rt.Done(ref.AgentExecutionID) == nil {
		t.Fatal("the conversation is not live after Recover")
	}
	var reasons []string
	var all []eventstore.Record
	for e, err := range s.ReadJournal(ctx, ref, 1) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, e.Record)
		if sc, ok := e.Record.(*eventstore.StateChanged); ok && e.Record.RecordBase().Sequence >= 10 {
			reasons = append(reasons, sc.Reason)
		}
	}
	var deliveries []string
	for _, r := range all {
		if d, ok := r.(*eventstore.MessageDelivery); ok && d.MessageID == "m-3" {
			deliveries = append(deliveries, string(d.Status))
		}
	}
	if !slices.Equal(deliveries, []string{"failed"}) {
		t.Errorf("deliveries of the prompt accepted as the host went: %v, want one failed", deliveries)
	}
	want := []string{"turn 2 lost: its host stopped while it ran; waiting for the next message",
		"attached after a restart of its host; waiting for the next message, which resumes session thread-1"}
	if diff := cmp.Diff(want, reasons); diff != "" {
		t.Errorf("records of the take-over (-want +got):\n%s", diff)
	}
	if st := replayRecords(t, all); st.Lifecycle != eventstore.LifecycleRunning || st.Attention != eventstore.AttentionAwaitingOperator {
		t.Errorf("state %s/%s, want running and awaiting the operator", st.Lifecycle, st.Attention)
	}
}

// Once the journal holds an execution's final lifecycle, the runtime no
// longer calls it running: the API's live overlay must never show an
// ended run as running.
func TestEndedRunIsNotRunningOnceItsEndIsRecorded(t *testing.T) {
	r := newRig(t, 500*time.Millisecond)
	for range 10 {
		ref := r.launch(t, "say:hi")
		deadline := time.Now().Add(60 * time.Second)
		for !r.replay(t, ref).Lifecycle.Final() {
			if time.Now().After(deadline) {
				t.Fatal("the run never ended")
			}
		}
		if r.rt.IsRunning(ref.AgentExecutionID) {
			t.Fatalf("%s: final lifecycle recorded, but IsRunning says it still runs", ref.AgentExecutionID)
		}
		r.wait(t, ref)
	}
}
