package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

// interruption returns the journal's interruption record, failing the test
// when there is none or more than one, or when it is not just before the
// final state change.
func interruption(t *testing.T, r *rig, ref eventstore.Reference) *eventstore.Interruption {
	t.Helper()
	recs := r.records(t, ref)
	var found *eventstore.Interruption
	for i, rec := range recs {
		in, ok := rec.(*eventstore.Interruption)
		if !ok {
			continue
		}
		if found != nil {
			t.Fatalf("two interruption records, at %d and %d", found.Sequence, in.Sequence)
		}
		found = in
		if i+1 >= len(recs) {
			t.Fatalf("the interruption is the journal's last record; want the final state change after it")
		}
	}
	if found == nil {
		t.Fatalf("no interruption record in %d records", len(recs))
	}
	return found
}

// awaitInput launches an agent that asks a question and waits until the
// journal says the request is open.
func awaitInput(t *testing.T, r *rig, token string) eventstore.Reference {
	t.Helper()
	ref := r.launch(t, "say:"+token, "ask:req-1:Which branch?", "sleep:60s")
	waitFor(t, func() bool {
		for _, rec := range r.records(t, ref) {
			if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil && o.Signal.Type == eventstore.SignalNeedsInput {
				return true
			}
		}
		return false
	})
	// The policy opens the request on the signal; it does not run here,
	// so its state change is appended as it would append it.
	open := &eventstore.StateChanged{Attention: eventstore.AttentionAwaitingOperator, CurrentInputRequestID: eventstore.SetInputRequest("req-1")}
	open.RecordID = eventstore.RecordID(ref.JournalID, eventstore.KindStateChanged, "policy:req-1")
	if _, err := r.store.Append(context.Background(), ref, open); err != nil {
		t.Fatal(err)
	}
	if !r.replay(t, ref).AwaitingInput() {
		t.Fatal("the request did not open")
	}
	return ref
}

func checkTimeline(t *testing.T, st *execution.State, reason eventstore.InterruptionReason) {
	t.Helper()
	if st.Interrupted == nil || st.Interrupted.Reason != reason {
		t.Fatalf("state.interrupted = %+v, want reason %s", st.Interrupted, reason)
	}
	for _, it := range st.Timeline {
		if it.Kind == execution.ItemInterruption {
			if it.Reason != string(reason) {
				t.Fatalf("timeline interruption reason %q, want %s", it.Reason, reason)
			}
			return
		}
	}
	t.Fatalf("no interruption item in the timeline")
}

func TestInterruptionOnCancel(t *testing.T) {
	r := newRig(t, 5*time.Second)
	ref := awaitInput(t, r, "cancel-me")
	if err := r.rt.Stop(context.Background(), ref.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	st := r.wait(t, ref)
	in := interruption(t, r, ref)
	if in.Reason != eventstore.InterruptCanceled || in.InputRequestID != "req-1" || in.Turn != 1 {
		t.Fatalf("interruption = %+v, want canceled, turn 1, input request req-1", in)
	}
	checkTimeline(t, st, eventstore.InterruptCanceled)
	if st.CurrentInputRequestID != "" || !st.Lifecycle.Final() {
		t.Fatalf("after the stop: %s, request %q; want final with no open request", st.Lifecycle, st.CurrentInputRequestID)
	}
}

// agentPID finds the fixture agent's process by an argument only it has.
func agentPID(t *testing.T, token string) int {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil || !bytes.Contains(b, []byte("say:"+token+"\x00")) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		if err == nil {
			return pid
		}
	}
	t.Fatalf("no process with argument say:%s", token)
	return 0
}

func TestInterruptionOnCrash(t *testing.T) {
	r := newRig(t, 5*time.Second)
	token := fmt.Sprintf("crash-%d", time.Now().UnixNano())
	ref := awaitInput(t, r, token)
	if err := syscall.Kill(agentPID(t, token), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st := r.wait(t, ref)
	in := interruption(t, r, ref)
	if in.Reason != eventstore.InterruptCrash || in.InputRequestID != "req-1" || in.Detail != "signal: killed" {
		t.Fatalf("interruption = %+v, want crash (signal: killed) with input request req-1", in)
	}
	checkTimeline(t, st, eventstore.InterruptCrash)
}

func TestInterruptionOnShutdown(t *testing.T) {
	r := newRig(t, 5*time.Second)
	ref := awaitInput(t, r, "shutdown")
	if err := r.rt.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	in := interruption(t, r, ref)
	if in.Reason != eventstore.InterruptShutdown || in.InputRequestID != "req-1" {
		t.Fatalf("interruption = %+v, want shutdown with input request req-1", in)
	}
	checkTimeline(t, r.replay(t, ref), eventstore.InterruptShutdown)
}

// An agent that ends by itself, even failing, interrupted nothing.
func TestNoInterruptionWhenTheAgentExits(t *testing.T) {
	r := newRig(t, 5*time.Second)
	ref := r.launch(t, "say:bye", "exit:3")
	st := r.wait(t, ref)
	if st.Lifecycle != eventstore.LifecycleFailed || st.Interrupted != nil {
		t.Fatalf("after exit 3: %s, interrupted %+v; want failed and not interrupted", st.Lifecycle, st.Interrupted)
	}
	for _, rec := range r.records(t, ref) {
		if rec.Kind() == eventstore.KindInterruption {
			t.Fatalf("an interruption record for an agent that exited by itself")
		}
	}
}

func TestInterruptionOnSystemRestart(t *testing.T) {
	r := newRig(t, 5*time.Second)
	ref := awaitInput(t, r, "restart")
	// A message accepted while the host dies: being delivered.
	pending := &eventstore.MessageAccepted{MessageID: "m-pending", Source: eventstore.SourceOperator, MessageType: "prompt",
		Payload: []byte(`{"text":"go on"}`), MutatesContext: true}
	if _, err := r.store.Append(context.Background(), ref, pending); err != nil {
		t.Fatal(err)
	}
	other := runtime.New(runtime.Config{Store: r.store})
	if _, err := other.Recover(context.Background(), runtime.RecoverAll); err != nil {
		t.Fatal(err)
	}
	in := interruption(t, r, ref)
	if in.Reason != eventstore.InterruptSystemRestart || in.InputRequestID != "req-1" || in.MessageID != "m-pending" || in.Turn != 1 {
		t.Fatalf("interruption = %+v, want system_restart, turn 1, message m-pending, input request req-1", in)
	}
	st := r.replay(t, ref)
	checkTimeline(t, st, eventstore.InterruptSystemRestart)
	if st.Lifecycle != eventstore.LifecycleTerminated {
		t.Fatalf("after recovery: %s, want terminated", st.Lifecycle)
	}
}
