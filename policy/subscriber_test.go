package policy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
)

// signals cycles through every signal type, so the subscriber meets them all.
func signal(i int) eventstore.SignalPayload {
	switch i % 8 {
	case 0:
		return &eventstore.ProgressSignal{Summary: fmt.Sprint("step ", i)}
	case 1:
		return &eventstore.StatusSignal{Summary: "s", Phase: []string{"editing", "testing"}[i%2]}
	case 2:
		return &eventstore.NeedsInputSignal{RequestID: fmt.Sprint("req-", i), Question: "?"}
	case 3:
		return &eventstore.MessageSignal{Text: "hello"}
	case 4:
		n := int64(i)
		return &eventstore.UsageSignal{InputTokens: &n, Cumulative: true}
	case 5:
		return &eventstore.BlockedSignal{Reason: "waiting"}
	case 6:
		return &eventstore.DiagnosticSignal{Message: "odd line"}
	}
	return &eventstore.ReadyForVerificationSignal{Summary: "ready"}
}

func observation(id string, i int) *eventstore.Observation {
	return &eventstore.Observation{ObservationID: id, Source: eventstore.ObservedMCP,
		Confidence: eventstore.ConfidenceAuthoritative, Signal: eventstore.NewSignal(signal(i))}
}

// audit reads every journal and counts decisions per observation, and the
// records that carry each decision out.
type audit struct {
	observations map[string]bool
	decisions    map[string]int
	records      map[string]int // record id -> count
}

func readAudit(t *testing.T, s eventstore.Store, refs []eventstore.Reference) audit {
	t.Helper()
	a := audit{observations: map[string]bool{}, decisions: map[string]int{}, records: map[string]int{}}
	for _, ref := range refs {
		for e, err := range s.ReadJournal(context.Background(), ref, 1) {
			if err != nil {
				t.Fatal(err)
			}
			a.records[e.Record.RecordBase().RecordID]++
			switch r := e.Record.(type) {
			case *eventstore.Observation:
				a.observations[ref.AgentExecutionID+"/"+r.ObservationID] = true
			case *eventstore.Decision:
				a.decisions[ref.AgentExecutionID+"/"+r.ObservationID]++
			}
		}
	}
	return a
}

func (a audit) complete() bool {
	for o := range a.observations {
		if a.decisions[o] == 0 {
			return false
		}
	}
	return true
}

func (a audit) check(t *testing.T) {
	t.Helper()
	for o := range a.observations {
		if n := a.decisions[o]; n != 1 {
			t.Errorf("observation %s has %d decisions, want exactly 1", o, n)
		}
	}
	for id, n := range a.records {
		if n != 1 {
			t.Errorf("record %s stored %d times", id, n)
		}
	}
}

func waitComplete(t *testing.T, s eventstore.Store, refs []eventstore.Reference, within time.Duration) audit {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		a := readAudit(t, s, refs)
		if a.complete() {
			return a
		}
		if time.Now().After(deadline) {
			missing := 0
			for o := range a.observations {
				if a.decisions[o] == 0 {
					missing++
				}
			}
			t.Fatalf("%d of %d observations still lack a decision", missing, len(a.observations))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSubscriberDecidesEveryObservationOnce(t *testing.T) {
	s := fixtures.OpenStore(t, fixtures.StartNATS(t))
	ctx := t.Context()
	stop := start(ctx, t, "Run", NewSubscriber(s, SubscriberConfig{PinnedTTL: 2 * time.Second}))

	refs := newJournals(ctx, t, s, "exec-", 3)
	for _, ref := range refs {
		for i := 0; i < 16; i++ {
			if _, err := s.Append(ctx, ref, observation(fmt.Sprint("o-", i), i)); err != nil {
				t.Fatal(err)
			}
		}
		// Observations appended twice (a retrying agent) are one observation.
		if _, err := s.Append(ctx, ref, observation("o-0", 0)); err != nil {
			t.Fatal(err)
		}
	}
	a := waitComplete(t, s, refs, 60*time.Second)
	a.check(t)
	stop()

	// A fresh subscriber on the same consumer after a restart: everything is
	// a duplicate, nothing new is appended.
	before := readAudit(t, s, refs)
	stopFresh := start(ctx, t, "fresh Run", NewSubscriber(s, SubscriberConfig{Consumer: "policy-replay", PinnedTTL: 2 * time.Second}))
	time.Sleep(2 * time.Second)
	stopFresh()
	after := readAudit(t, s, refs)
	if len(after.records) != len(before.records) {
		t.Fatalf("a fresh policy re-reading the log appended %d records, want 0", len(after.records)-len(before.records))
	}
}

// failingLog fails the first append of a follow-up record, like a
// subscriber killed between appending a decision and its state change.
type failingLog struct {
	Log
	mu     sync.Mutex
	failed bool
}

func (f *failingLog) Append(ctx context.Context, ref eventstore.Reference, r eventstore.Record) (eventstore.Entry, error) {
	f.mu.Lock()
	fail := !f.failed && r.Kind() == eventstore.KindStateChanged
	if fail {
		f.failed = true
	}
	f.mu.Unlock()
	if fail {
		return eventstore.Entry{}, errors.New("killed")
	}
	return f.Log.Append(ctx, ref, r)
}

func TestSubscriberCompletesInterruptedDecision(t *testing.T) {
	s := fixtures.OpenStore(t, fixtures.StartNATS(t))
	ctx := context.Background()
	ref, e := askingJournal(ctx, t, s, "exec-crash")
	if err := NewSubscriber(&failingLog{Log: s}, SubscriberConfig{}).Handle(ctx, e); err == nil {
		t.Fatal("the interrupted handler reported success")
	}
	// A fresh subscriber gets the record again and completes the decision.
	if err := NewSubscriber(s, SubscriberConfig{}).Handle(ctx, e); err != nil {
		t.Fatal(err)
	}
	var kinds []eventstore.Kind
	for e, err := range s.ReadJournal(ctx, ref, 1) {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, e.Record.Kind())
	}
	want := "[journal.header observation.recorded decision.recorded state.changed]"
	if fmt.Sprint(kinds) != want {
		t.Fatalf("journal %v, want %s", kinds, want)
	}
	// Handling it once more appends nothing.
	if err := NewSubscriber(s, SubscriberConfig{}).Handle(ctx, e); err != nil {
		t.Fatal(err)
	}
	h, _ := s.Head(ctx, ref)
	if h.LastSequence != 4 {
		t.Fatalf("head %d after a third handling, want 4", h.LastSequence)
	}
}

// TestSubscriberLeavesAnotherPolicysDecision: a decision another version
// of the policy made (its reason worded otherwise), in a journal imported
// whole, is not completed with this policy's records.
func TestSubscriberLeavesAnotherPolicysDecision(t *testing.T) {
	s := fixtures.OpenStore(t, fixtures.StartNATS(t))
	ctx := context.Background()
	ref, e := askingJournal(ctx, t, s, "exec-older")
	older := &eventstore.Decision{DecisionID: DecisionID("dec-", "o-1"), ObservationID: "o-1",
		Action: eventstore.ActionUpdateState, Reason: "as an older policy put it"}
	if _, err := s.Append(ctx, ref, older); err != nil {
		t.Fatal(err)
	}
	if err := NewSubscriber(s, SubscriberConfig{}).Handle(ctx, e); err != nil {
		t.Fatal(err)
	}
	if h, _ := s.Head(ctx, ref); h.LastSequence != 3 {
		t.Fatalf("head %d after handling, want 3: nothing appended to another policy's decision", h.LastSequence)
	}
}

const childEnv = "AGENTJOURNAL_TEST_POLICY_CHILD"

// TestPolicyChild is the child side of TestTwoSubscriberProcesses.
func TestPolicyChild(t *testing.T) {
	url := os.Getenv(childEnv)
	if url == "" {
		return // run only as a child process
	}
	cfg := bus.DefaultConfig()
	cfg.URL = url
	cfg.Secret = fixtures.NATSSecret
	b, err := bus.Open(context.Background(), cfg)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	s := fixtures.OpenStore(t, b)
	sc := SubscriberConfig{AckWait: 2 * time.Second, PinnedTTL: 2 * time.Second}
	if m := os.Getenv(childMemberEnv); m != "" {
		sc.Partitions, sc.Member = 6, m
	}
	sub := NewSubscriber(&announcingLog{Log: s}, sc)
	fmt.Println("ready")
	if err := sub.Run(context.Background()); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
}

// announcingLog prints each decision appended, so the parent knows which
// child is active.
type announcingLog struct{ Log }

func (a *announcingLog) ConsumePartitioned(ctx context.Context, cfg eventstore.PartitionConfig, fn func(context.Context, eventstore.Entry) error) error {
	return a.Log.(partitionedLog).ConsumePartitioned(ctx, cfg, fn)
}

func (a *announcingLog) Append(ctx context.Context, ref eventstore.Reference, r eventstore.Record) (eventstore.Entry, error) {
	e, err := a.Log.Append(ctx, ref, r)
	if d, ok := r.(*eventstore.Decision); ok && err == nil {
		fmt.Println("decided", d.ObservationID)
	}
	return e, err
}

// childMemberEnv, set for a TestPolicyChild, makes it a member of that
// name of a group of subscribers that share 6 partitions.
const childMemberEnv = "AGENTJOURNAL_POLICY_MEMBER"

// policyChild is a subscriber process running TestPolicyChild.
type policyChild struct {
	cmd     *exec.Cmd
	decided chan string
}

// startPolicyChild starts a subscriber process on b's log, a member of the
// partitioned group when member is not "".
func startPolicyChild(t *testing.T, b *bus.Bus, member string) *policyChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPolicyChild$")
	cmd.Env = append(os.Environ(), childEnv+"="+b.ClientURL(), childMemberEnv+"="+member)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &policyChild{cmd: cmd, decided: make(chan string, 10000)}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "ready":
				close(ready)
			case strings.HasPrefix(line, "decided "):
				c.decided <- strings.TrimPrefix(line, "decided ")
			case strings.HasPrefix(line, "error"):
				t.Errorf("child: %s", line)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("child did not start")
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return c
}

// Two subscriber processes on one log: the active one is killed with
// SIGKILL mid-stream; the other takes over, and in the end every observation
// has exactly one decision.
func TestTwoSubscriberProcesses(t *testing.T) {
	b := fixtures.StartNATS(t, func(c *bus.Config) { c.Listen = "127.0.0.1:0" })
	s := fixtures.OpenStore(t, b)
	ctx := context.Background()

	children := []*policyChild{startPolicyChild(t, b, ""), startPolicyChild(t, b, "")}
	refs := newJournals(ctx, t, s, "exec-", 5)
	appendRoundRobin(ctx, t, s, refs, 0, 100)
	// Find the active child by its decisions, and kill it mid-stream.
	var active int
	select {
	case <-children[0].decided:
		active = 0
	case <-children[1].decided:
		active = 1
	case <-time.After(30 * time.Second):
		t.Fatal("no child decided anything")
	}
	appendRoundRobin(ctx, t, s, refs, 100, 200)
	if err := children[active].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	children[active].cmd.Wait()
	appendRoundRobin(ctx, t, s, refs, 200, 300)

	a := waitComplete(t, s, refs, 90*time.Second)
	a.check(t)
	if len(a.observations) != 300 {
		t.Fatalf("%d observations, want 300", len(a.observations))
	}
	standby := children[1-active]
	if len(standby.decided) == 0 {
		t.Fatal("the standby never decided: the killed child cannot have decided everything")
	}
}

// Three subscriber processes share the journals' partitions: each decides
// on its share, one is killed mid-stream and the others take its share over,
// and in the end every observation has exactly one decision.
func TestPartitionedSubscriberProcesses(t *testing.T) {
	b := fixtures.StartNATS(t, func(c *bus.Config) { c.Listen = "127.0.0.1:0" })
	s := fixtures.OpenStore(t, b)
	ctx := context.Background()
	children := []*policyChild{startPolicyChild(t, b, "a"), startPolicyChild(t, b, "b"), startPolicyChild(t, b, "c")}
	refs := newJournals(ctx, t, s, "exec-", 24)
	// drain counts each child's decisions since the last call.
	drain := func() []int {
		n := make([]int, len(children))
		for i, c := range children {
			for len(c.decided) > 0 {
				<-c.decided
				n[i]++
			}
		}
		return n
	}
	// The first member to start decides on everything until the others
	// have joined: rounds of one observation per journal go on until a
	// round is decided by all three.
	next := 0
	for round := 0; ; round++ {
		appendRoundRobin(ctx, t, s, refs, next, next+len(refs))
		next += len(refs)
		waitComplete(t, s, refs, 90*time.Second)
		time.Sleep(100 * time.Millisecond) // the children's last lines
		n := drain()
		if n[0] > 0 && n[1] > 0 && n[2] > 0 {
			break
		}
		if round == 50 {
			t.Fatalf("decisions per child in the last round %v, want all three deciding", n)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// One is killed mid-stream; the others take its partitions over.
	appendRoundRobin(ctx, t, s, refs, next, next+len(refs)*5)
	next += len(refs) * 5
	if err := children[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	children[0].cmd.Wait()
	appendRoundRobin(ctx, t, s, refs, next, next+len(refs)*5)
	next += len(refs) * 5
	a := waitComplete(t, s, refs, 90*time.Second)
	a.check(t)
	if len(a.observations) != next {
		t.Fatalf("%d observations, want %d", len(a.observations), next)
	}
	time.Sleep(100 * time.Millisecond)
	if n := drain(); n[1] == 0 || n[2] == 0 {
		t.Errorf("decisions per child after the kill %v, want both survivors deciding", n)
	}
}

// An agent that signals and exits at once: by the time the policy reads the
// observation the journal already says completed, but the decision is taken
// on the journal as it was at the observation.
func TestDecisionUsesTheJournalAtTheObservation(t *testing.T) {
	s := fixtures.OpenStore(t, fixtures.StartNATS(t))
	ctx := context.Background()
	ref := newJournal(ctx, t, s, "exec-quick")
	running := &eventstore.StateChanged{Lifecycle: eventstore.LifecycleRunning}
	running.RecordID = eventstore.RecordID(ref.JournalID, eventstore.KindStateChanged, "running")
	if _, err := s.Append(ctx, ref, running); err != nil {
		t.Fatal(err)
	}
	obs, err := s.Append(ctx, ref, observation("o-1", 5)) // blocked: update-state
	if err != nil {
		t.Fatal(err)
	}
	done := &eventstore.StateChanged{Lifecycle: eventstore.LifecycleCompleted}
	done.RecordID = eventstore.RecordID(ref.JournalID, eventstore.KindStateChanged, "done")
	if _, err := s.Append(ctx, ref, done); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []*Subscriber{NewSubscriber(s, SubscriberConfig{}), NewSubscriber(s, SubscriberConfig{})} {
		if err := sub.Handle(ctx, obs); err != nil {
			t.Fatal(err)
		}
	}
	var actions []eventstore.DecisionAction
	for e, err := range s.ReadJournal(ctx, ref, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := e.Record.(*eventstore.Decision); ok {
			actions = append(actions, d.Action)
		}
	}
	if fmt.Sprint(actions) != "[update-state]" {
		t.Fatalf("decisions %v, want exactly one update-state (not a reject because the journal moved on)", actions)
	}
}

// countingLog counts the reads of each journal, and the records read.
type countingLog struct {
	*eventstore.JetStreamStore
	mu      sync.Mutex
	reads   map[string]int
	records int
}

func (l *countingLog) ReadJournal(ctx context.Context, ref eventstore.Reference, fromSeq uint64) iter.Seq2[eventstore.Entry, error] {
	l.mu.Lock()
	l.reads[ref.JournalID]++
	l.mu.Unlock()
	return func(yield func(eventstore.Entry, error) bool) {
		for e, err := range l.JetStreamStore.ReadJournal(ctx, ref, fromSeq) {
			l.mu.Lock()
			l.records++
			l.mu.Unlock()
			if !yield(e, err) {
				return
			}
		}
	}
}

// A subscriber under a new consumer name goes through a log whose
// observations are all decided: it appends nothing, and it reads each
// journal about once, not once per observation.
func TestNewConsumerReplaysLongJournalOnce(t *testing.T) {
	s := fixtures.OpenStore(t, fixtures.StartNATS(t))
	ctx := t.Context()
	ref := newJournal(ctx, t, s, "exec-long")
	const n = 200
	for i := range n {
		if _, err := s.Append(ctx, ref, observation(fmt.Sprint("o-", i), i)); err != nil {
			t.Fatal(err)
		}
	}
	first := NewSubscriber(s, SubscriberConfig{PinnedTTL: 2 * time.Second})
	stop := start(ctx, t, "Run", first)
	waitComplete(t, s, []eventstore.Reference{ref}, 60*time.Second).check(t)
	head, err := s.Head(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	heads := map[string]uint64{ref.JournalID: head.LastSequence}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !folded(first, heads); {
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	if head, err = s.Head(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	heads[ref.JournalID] = head.LastSequence

	log := &countingLog{JetStreamStore: s, reads: map[string]int{}}
	fresh := NewSubscriber(log, SubscriberConfig{Consumer: "policy-new", PinnedTTL: 2 * time.Second})
	stopFresh := start(ctx, t, "fresh Run", fresh)
	deadline := time.Now().Add(60 * time.Second)
	for !folded(fresh, heads) {
		if time.Now().After(deadline) {
			t.Fatal("the new consumer did not go through the journal")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopFresh()
	if after, _ := s.Head(context.Background(), ref); after.LastSequence != head.LastSequence {
		t.Fatalf("the new consumer appended %d records, want none", after.LastSequence-head.LastSequence)
	}
	// The first load reads the journal; each decided observation then
	// looks for its decision's records just after it.
	t.Logf("the new consumer read %d records of a %d-record journal in %d reads", log.records, head.LastSequence, log.reads[ref.JournalID])
	if limit := 4 * int(head.LastSequence); log.records > limit {
		t.Fatalf("the new consumer read %d records of a %d-record journal (%d reads), want at most %d",
			log.records, head.LastSequence, log.reads[ref.JournalID], limit)
	}
}

// decisions returns the ids of the observations and answers in a journal,
// with the number of decisions each has.
func decisions(t *testing.T, s eventstore.Store, ref eventstore.Reference) map[string]int {
	t.Helper()
	ids := map[string]int{}
	for e, err := range s.ReadJournal(context.Background(), ref, 1) {
		if err != nil {
			t.Fatal(err)
		}
		// Each observation and answer is listed, decided or not.
		switch r := e.Record.(type) {
		case *eventstore.Observation:
			ids[r.ObservationID] += 0
		case *eventstore.MessageAccepted:
			if req, _ := r.RequestID(); req != "" {
				ids[r.MessageID] += 0
			}
		case *eventstore.Decision:
			// A decision answers either an observation or a message.
			ids[r.ObservationID+r.MessageID]++
		}
	}
	return ids
}

// In the steady state each record the consumer delivers is the next of its
// journal: the subscriber folds it into the state it keeps and reads a
// journal only once, the first time it decides in it; and what it folds is
// what a replay of the journal gives.
func TestSubscriberFoldsDeliveredRecords(t *testing.T) {
	s := fixtures.OpenStore(t, fixtures.StartNATS(t))
	log := &countingLog{JetStreamStore: s, reads: map[string]int{}}
	ctx := t.Context()
	sub := NewSubscriber(log, SubscriberConfig{PinnedTTL: 2 * time.Second})
	stop := start(ctx, t, "Run", sub)

	refs := newJournals(ctx, t, s, "exec-fold-", 3)
	for i := 0; i < 50; i++ {
		for _, ref := range refs {
			recs := []eventstore.Record{observation(fmt.Sprint("o-", i), i)}
			if i%8 == 2 {
				// An answer to the needs_input just signalled, and a prompt
				// that is not decided on.
				recs = append(recs,
					&eventstore.MessageAccepted{MessageID: fmt.Sprint("answer-", i), Source: eventstore.SourceOperator,
						MessageType: "answer", Payload: json.RawMessage(fmt.Sprintf(`{"requestId":"req-%d"}`, i))},
					&eventstore.MessageAccepted{MessageID: fmt.Sprint("prompt-", i), Source: eventstore.SourceOperator,
						MessageType: "prompt", Payload: json.RawMessage(`{"text":"hi"}`)})
			}
			for _, r := range recs {
				if _, err := s.Append(ctx, ref, r); err != nil {
					t.Fatal(err)
				}
			}
		}
		if i%10 == 9 {
			// Let the subscriber catch up now and then, so that some
			// observations are appended while it is idle and some while
			// its decisions are still on their way back.
			time.Sleep(20 * time.Millisecond)
		}
	}

	// Every observation and answer decided, and then the subscriber's
	// states given a moment to fold the records its decisions appended.
	deadline := time.Now().Add(60 * time.Second)
	for !allDecided(t, s, refs) {
		if time.Now().After(deadline) {
			t.Fatal("the subscriber did not decide every observation and answer")
		}
		time.Sleep(50 * time.Millisecond)
	}
	heads := map[string]uint64{}
	for _, ref := range refs {
		h, err := s.Head(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		heads[ref.JournalID] = h.LastSequence
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !folded(sub, heads); {
		time.Sleep(20 * time.Millisecond)
	}
	stop()

	for _, ref := range refs {
		if n := log.reads[ref.JournalID]; n > 1 {
			t.Errorf("journal %s read %d times, want once (its first load)", ref.AgentExecutionID, n)
		}
		c := sub.states[ref.JournalID]
		if c == nil {
			t.Errorf("journal %s is not cached", ref.AgentExecutionID)
			continue
		}
		if last := c.state.Journal.LastSequence; last != heads[ref.JournalID] {
			t.Errorf("journal %s folded up to %d, want its last record %d", ref.AgentExecutionID, last, heads[ref.JournalID])
		}
		var recs []eventstore.Record
		decided := map[string]uint64{}
		for e, err := range s.ReadJournal(context.Background(), ref, 1) {
			if err != nil {
				t.Fatal(err)
			}
			if e.Record.RecordBase().Sequence > c.state.Journal.LastSequence {
				break
			}
			recs = append(recs, e.Record)
			if d, ok := e.Record.(*eventstore.Decision); ok {
				decided[d.ObservationID+d.MessageID] = d.Sequence
			}
		}
		want, err := execution.Replay(recs)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, c.state, cmpopts.IgnoreFields(execution.State{}, "Timeline")); diff != "" {
			t.Errorf("folded state of %s differs from a replay (-replay +folded):\n%s", ref.AgentExecutionID, diff)
		}
		if diff := cmp.Diff(decided, c.decided); diff != "" {
			t.Errorf("decided ids of %s (-journal +cached):\n%s", ref.AgentExecutionID, diff)
		}
		for id, n := range decisions(t, s, ref) {
			if n != 1 {
				t.Errorf("%s in %s has %d decisions, want exactly 1", id, ref.AgentExecutionID, n)
			}
		}
	}
}

// allDecided reports whether every observation and answer in refs has a
// decision.
func allDecided(t *testing.T, s eventstore.Store, refs []eventstore.Reference) bool {
	t.Helper()
	for _, ref := range refs {
		for _, n := range decisions(t, s, ref) {
			if n == 0 {
				return false
			}
		}
	}
	return true
}

// folded reports whether sub has folded every journal up to its head.
func folded(sub *Subscriber, heads map[string]uint64) bool {
	for id, head := range heads {
		unlock := sub.lock(id)
		sub.mu.Lock()
		c := sub.states[id]
		sub.mu.Unlock()
		ok := c != nil && c.state.Journal.LastSequence == head
		unlock()
		if !ok {
			return false
		}
	}
	return true
}

// TestSubscriberSkipsADamagedJournal: an observation of a journal with
// records missing is left undecided, and handling it succeeds, so the log
// does not stall behind it; a sound journal's observation is decided.
func TestSubscriberSkipsADamagedJournal(t *testing.T) {
	b := fixtures.StartNATS(t)
	s := fixtures.OpenStore(t, b)
	ctx := context.Background()
	ref := newJournal(ctx, t, s, "exec-damaged")
	// An observation at sequence 4 where 2 and 3 are missing, as a
	// damaged log file leaves it.
	o := observation("o-after-hole", 0)
	o.Base = eventstore.Base{RecordID: eventstore.RecordID(ref.JournalID, eventstore.KindObservation, o.ObservationID), Sequence: 4,
		Type: o.Kind(), SchemaVersion: 1, JournalID: ref.JournalID, AgentExecutionID: ref.AgentExecutionID,
		OwnerID: ref.OwnerID, Scope: ref.OwnerEntity, OccurredAt: time.Now().UTC()}
	offset := fixtures.PublishAround(t, b, ref, o)
	sub := NewSubscriber(s, SubscriberConfig{})
	if err := sub.Handle(ctx, eventstore.Entry{Offset: offset, Record: o}); err != nil {
		t.Fatalf("handling an observation of a damaged journal: %v, want it skipped without an error", err)
	}
	after, err := s.Lookup(ctx, ref.AgentExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	if after.RecordCount != 2 {
		t.Fatalf("the damaged journal holds %d records, want its 2: nothing decided on it", after.RecordCount)
	}
}

// overlapLog watches the subscriber's appends: it holds every decision
// back until appends to two journals are in flight at once, and counts the
// times one journal had two appends in flight.
type overlapLog struct {
	Log
	overlap chan struct{} // closed once two journals had appends in flight at once

	mu       sync.Mutex
	inFlight map[string]int
	same     int
}

func newOverlapLog(l Log) *overlapLog {
	return &overlapLog{Log: l, overlap: make(chan struct{}), inFlight: map[string]int{}}
}

func (l *overlapLog) Append(ctx context.Context, ref eventstore.Reference, r eventstore.Record) (eventstore.Entry, error) {
	l.mu.Lock()
	if l.inFlight[ref.JournalID]++; l.inFlight[ref.JournalID] > 1 {
		l.same++
	}
	if len(l.inFlight) == 2 {
		select {
		case <-l.overlap:
		default:
			close(l.overlap)
		}
	}
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		if l.inFlight[ref.JournalID]--; l.inFlight[ref.JournalID] == 0 {
			delete(l.inFlight, ref.JournalID)
		}
		l.mu.Unlock()
	}()
	if _, ok := r.(*eventstore.Decision); ok {
		// A subscriber deciding one record at a time never gets here
		// twice at once, and waits until ctx ends.
		select {
		case <-l.overlap:
		case <-ctx.Done():
			return eventstore.Entry{}, ctx.Err()
		}
	}
	return l.Log.Append(ctx, ref, r)
}

// order returns a journal's observation ids in log order, and the ids its
// decisions answer in log order.
func order(t *testing.T, s eventstore.Store, ref eventstore.Reference) (observed, decided []string) {
	t.Helper()
	for e, err := range s.ReadJournal(t.Context(), ref, 1) {
		if err != nil {
			t.Fatal(err)
		}
		switch r := e.Record.(type) {
		case *eventstore.Observation:
			observed = append(observed, r.ObservationID)
		case *eventstore.Decision:
			decided = append(decided, r.ObservationID)
		}
	}
	return observed, decided
}

// checkInOrder checks a (check), that it counts n observations, and that
// each journal's decisions answer its observations in their log order
// (checkOrder).
func (a audit) checkInOrder(t *testing.T, s eventstore.Store, refs []eventstore.Reference, n int) {
	t.Helper()
	a.check(t)
	if got := len(a.observations); got != n {
		t.Fatalf("%d observations, want %d", got, n)
	}
	checkOrder(t, s, refs)
}

// checkOrder fails unless each journal's decisions answer its
// observations in their log order.
func checkOrder(t *testing.T, s eventstore.Store, refs []eventstore.Reference) {
	t.Helper()
	for _, ref := range refs {
		observed, decided := order(t, s, ref)
		if diff := cmp.Diff(observed, decided); diff != "" {
			t.Errorf("decisions of %s out of the observations' order (-observed +decided):\n%s", ref.AgentExecutionID, diff)
		}
	}
}

// appendObservations appends observations from .. to-1 to every journal
// in refs, one goroutine per journal, so that their records interleave in
// the log.
func appendObservations(ctx context.Context, t *testing.T, s eventstore.Store, refs []eventstore.Reference, from, to int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(refs))
	for _, ref := range refs {
		wg.Go(func() {
			for i := from; i < to; i++ {
				if _, err := s.Append(ctx, ref, observation(fmt.Sprint("o-", i), i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// newJournals creates n journals named after prefix.
func newJournals(ctx context.Context, t *testing.T, s eventstore.Store, prefix string, n int) []eventstore.Reference {
	t.Helper()
	refs := make([]eventstore.Reference, n)
	for j := range refs {
		refs[j] = newJournal(ctx, t, s, fmt.Sprint(prefix, j))
	}
	return refs
}

// journalsWithin opens a store with n new journals (prefix0, prefix1, …)
// for a test that must be done within the given time: the context
// returned ends then.
func journalsWithin(t *testing.T, within time.Duration, prefix string, n int) (context.Context, *eventstore.JetStreamStore, []eventstore.Reference) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), within)
	t.Cleanup(cancel)
	s := fixtures.OpenStore(t, fixtures.StartNATS(t))
	return ctx, s, newJournals(ctx, t, s, prefix, n)
}

// askingJournal creates the journal of execution id with one observation,
// o-1, a needs_input signal, whose decision comes with a state change.
func askingJournal(ctx context.Context, t *testing.T, s eventstore.Store, id string) (eventstore.Reference, eventstore.Entry) {
	t.Helper()
	ref := newJournal(ctx, t, s, id)
	e, err := s.Append(ctx, ref, observation("o-1", 2))
	if err != nil {
		t.Fatal(err)
	}
	return ref, e
}

// newJournal creates the journal of execution id, owned by task t.
func newJournal(ctx context.Context, t *testing.T, s eventstore.Store, id string) eventstore.Reference {
	t.Helper()
	ref := storetest.Ref(eventstore.OwnerTask, "t", id)
	if _, err := s.EnsureJournal(ctx, ref, storetest.Header("a")); err != nil {
		t.Fatal(err)
	}
	return ref
}

// appendRoundRobin appends observations from .. to-1 one at a time, the
// i-th to journal i mod len(refs).
func appendRoundRobin(ctx context.Context, t *testing.T, s eventstore.Store, refs []eventstore.Reference, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if _, err := s.Append(ctx, refs[i%len(refs)], observation(fmt.Sprint("o-", i), i)); err != nil {
			t.Fatal(err)
		}
	}
}

// start runs sub in the background until the stop it returns is called,
// or the test ends. stop cancels the run, waits for Run to return and
// fails the test, naming the run as what, when Run returned an error; it
// does nothing the second time.
func start(ctx context.Context, t *testing.T, what string, sub *Subscriber) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sub.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// TestSubscriberDecidesJournalsConcurrently: records of many journals
// taken at once are decided concurrently across journals (two journals'
// appends are in flight at once, which a subscriber deciding one record at
// a time never reaches), one journal's never two at a time, and each
// journal's decisions land in its observations' order, one each.
func TestSubscriberDecidesJournalsConcurrently(t *testing.T) {
	ctx, s, refs := journalsWithin(t, 90*time.Second, "exec-many-", 12)
	log := newOverlapLog(s)
	stop := start(ctx, t, "Run", NewSubscriber(log, SubscriberConfig{PinnedTTL: 2 * time.Second, MaxAckPending: 64}))

	appendObservations(ctx, t, s, refs, 0, 24)
	select {
	case <-log.overlap:
	case <-ctx.Done():
		t.Fatal("no two journals' decisions were ever appended at once")
	}
	a := waitComplete(t, s, refs, 60*time.Second)
	stop()
	a.checkInOrder(t, s, refs, len(refs)*24)
	if log.same != 0 {
		t.Errorf("one journal had two appends in flight %d times, want never", log.same)
	}
}

// stallingLog appends the first n records and then hangs every append
// until its context ends, like a subscriber that stops in the middle of
// the records it has taken.
type stallingLog struct {
	Log
	stalled chan struct{} // closed at the first append held

	mu   sync.Mutex
	left int
}

func (l *stallingLog) Append(ctx context.Context, ref eventstore.Reference, r eventstore.Record) (eventstore.Entry, error) {
	l.mu.Lock()
	hang := l.left == 0
	if hang {
		select {
		case <-l.stalled:
		default:
			close(l.stalled)
		}
	} else {
		l.left--
	}
	l.mu.Unlock()
	if hang {
		<-ctx.Done()
		return eventstore.Entry{}, ctx.Err()
	}
	return l.Log.Append(ctx, ref, r)
}

// TestSubscriberTakesOverABatch: a subscriber that has taken many records
// at once stops mid-way, some decisions appended, some cut short after
// the decision, the rest not begun; another on the same consumer gets the
// records again, with new ones, and every observation ends with exactly
// one decision, its records stored once, each journal's in order.
func TestSubscriberTakesOverABatch(t *testing.T) {
	ctx, s, refs := journalsWithin(t, 120*time.Second, "exec-batch-", 8)
	// Everything is in the log before the first subscriber starts, so its
	// first pull takes the lot.
	appendObservations(ctx, t, s, refs, 0, 25)

	// The records the first leaves come again AckWait after it took them,
	// well after the second takes over (PinnedTTL), so the second meets
	// new records of a journal before the journal's older ones.
	cfg := SubscriberConfig{AckWait: 6 * time.Second, PinnedTTL: 2 * time.Second, MaxAckPending: 1024}
	first := &stallingLog{Log: s, stalled: make(chan struct{}), left: 30}
	stopFirst := start(ctx, t, "first Run", NewSubscriber(first, cfg))
	select {
	case <-first.stalled:
	case <-ctx.Done():
		t.Fatal("the first subscriber never appended its records")
	}
	stopFirst()
	if a := readAudit(t, s, refs); a.complete() {
		t.Fatal("the first subscriber decided everything before it stopped; want it stopped mid-way")
	}

	stopSecond := start(ctx, t, "second Run", NewSubscriber(s, cfg))
	// New records may reach the second subscriber before the ones the
	// first left are delivered again.
	appendObservations(ctx, t, s, refs, 25, 30)
	a := waitComplete(t, s, refs, 90*time.Second)
	stopSecond()
	a.checkInOrder(t, s, refs, len(refs)*30)
}

// failOnceLog fails the first decision appended to one journal.
type failOnceLog struct {
	Log
	journal string

	mu     sync.Mutex
	failed bool
}

func (l *failOnceLog) Append(ctx context.Context, ref eventstore.Reference, r eventstore.Record) (eventstore.Entry, error) {
	l.mu.Lock()
	_, decision := r.(*eventstore.Decision)
	fail := decision && !l.failed && ref.JournalID == l.journal
	l.failed = l.failed || fail
	l.mu.Unlock()
	if fail {
		return eventstore.Entry{}, errors.New("append refused")
	}
	return l.Log.Append(ctx, ref, r)
}

// TestSubscriberRetriesInOrder: a decision whose append fails is tried
// again before the journal's next observation is decided, while the other
// journals go on; every observation ends with one decision, in order.
func TestSubscriberRetriesInOrder(t *testing.T) {
	ctx, s, refs := journalsWithin(t, 90*time.Second, "exec-retry-", 4)
	appendObservations(ctx, t, s, refs, 0, 10)
	log := &failOnceLog{Log: s, journal: refs[0].JournalID}
	stop := start(ctx, t, "Run", NewSubscriber(log, SubscriberConfig{PinnedTTL: 2 * time.Second}))
	a := waitComplete(t, s, refs, 60*time.Second)
	stop()
	if !log.failed {
		t.Fatal("no append failed")
	}
	a.check(t)
	checkOrder(t, s, refs)
}
