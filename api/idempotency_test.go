package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/policy"
)

// TestRetryAfterTheDuplicateWindow: a message or observation id retried
// after the log forgot it (its duplicate window passed) still gets the
// first acknowledgement and appends nothing.
func TestRetryAfterTheDuplicateWindow(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := r.launch(t, "t-idem", "", "sleep:60s").Reference.AgentExecutionID
	msgPath, obsPath := "/v1/executions/"+id+"/messages", "/v1/executions/"+id+"/observations"
	msg := map[string]any{"messageId": "m-old", "type": "prompt", "payload": map[string]any{"text": "hello"}}
	obs := map[string]any{"observationId": "o-old", "source": "mcp", "confidence": "high",
		"signal": map[string]any{"type": "progress", "payload": map[string]any{"summary": "half way"}}}
	var firstMsg runtime.MessageAck
	r.call(t, "POST", msgPath, msg, http.StatusOK, &firstMsg)
	var firstObs decisionAck
	r.call(t, "POST", obsPath, obs, http.StatusOK, &firstObs)

	// The log forgets record ids after its duplicate window: make it short
	// and wait until a probe id is forgotten.
	stream, err := r.bus.JetStream().Stream(ctx, r.bus.StreamName())
	if err != nil {
		t.Fatal(err)
	}
	// Twice, with two windows: nats-server 2.15.2 sets its purge timer to
	// fire at once before it stores the new window, so under load the
	// purge may run with the old one (ten minutes) and not come again for
	// as long. The second change fires it once the first window is stored.
	cfg := stream.CachedInfo().Config
	for _, window := range []time.Duration{200 * time.Millisecond, 250 * time.Millisecond} {
		cfg.Duplicates = window
		if _, err := r.bus.JetStream().UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	probe := storetest.Ref(eventstore.OwnerTask, "t-probe", "probe")
	if _, err := r.store.EnsureJournal(ctx, probe, storetest.Header("probe")); err != nil {
		t.Fatal(err)
	}
	first, err := r.store.Append(ctx, probe, storetest.Message("p", "x"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		e, err := r.store.Append(ctx, probe, storetest.Message("p", "x"))
		if err != nil {
			t.Fatal(err)
		}
		if e.Offset != first.Offset {
			break // appended anew: the window has passed
		}
		select {
		case <-ctx.Done():
			t.Fatal("the log still knew the probe id at the test's deadline")
		case <-time.After(100 * time.Millisecond):
		}
	}

	before := r.lookup(t, id).RecordCount
	var againMsg runtime.MessageAck
	r.call(t, "POST", msgPath, msg, http.StatusOK, &againMsg)
	wantMsg := firstMsg
	wantMsg.Duplicate = true
	if againMsg != wantMsg {
		t.Errorf("message retried after the window: ack %+v, want %+v", againMsg, wantMsg)
	}
	var againObs decisionAck
	r.call(t, "POST", obsPath, obs, http.StatusOK, &againObs)
	wantObs := firstObs
	wantObs.Duplicate = true
	if againObs != wantObs {
		t.Errorf("observation retried after the window: ack %+v, want %+v", againObs, wantObs)
	}
	if after := r.lookup(t, id).RecordCount; after != before {
		t.Errorf("the retries appended %d records, want none", after-before)
	}
}

// TestAnswerToARequestThatIsNotOpen: an answer naming another request than
// the open one is refused, naming the open one, and writes nothing; the
// right answer is taken, and retried after it closed the request, gets its
// first acknowledgement.
func TestAnswerToARequestThatIsNotOpen(t *testing.T) {
	r := newRig(t)
	id := r.launch(t, "t-answer", "", "sleep:60s").Reference.AgentExecutionID
	var ack decisionAck
	r.call(t, "POST", "/v1/executions/"+id+"/observations", map[string]any{"observationId": "o-q1", "source": "mcp", "confidence": "high",
		"signal": map[string]any{"type": "needs_input", "payload": map[string]any{"requestId": "q1", "question": "Which branch?"}}}, http.StatusOK, &ack)
	ref := r.lookup(t, id)
	e := r.fail(t, "POST", "/v1/executions/"+id+"/messages", map[string]any{"messageId": "a-wrong", "type": "answer",
		"payload": map[string]any{"requestId": "q9", "text": "yes"}}, testToken, http.StatusConflict, "conflict", "")
	if !strings.Contains(e.Error.Message, "q9") || !strings.Contains(e.Error.Message, "q1") {
		t.Errorf("refusal %q, want it to name q9 and the open q1", e.Error.Message)
	}
	if after := r.lookup(t, id); after.RecordCount != ref.RecordCount {
		t.Errorf("the refused answer appended %d records", after.RecordCount-ref.RecordCount)
	}
	answer := map[string]any{"messageId": "a-right", "type": "answer", "payload": map[string]any{"requestId": "q1", "text": "main"}}
	var first, again runtime.MessageAck
	r.call(t, "POST", "/v1/executions/"+id+"/messages", answer, http.StatusOK, &first)
	eventually(t, 10*time.Second, "the request closes", func() bool {
		st, err := r.views.Execution(id)
		return err == nil && st.CurrentInputRequestID == ""
	})
	r.call(t, "POST", "/v1/executions/"+id+"/messages", answer, http.StatusOK, &again)
	if !again.Duplicate || again.Sequence != first.Sequence {
		t.Errorf("retried answer: %+v, want the first acknowledgement %+v as a duplicate", again, first)
	}
}

// slowStateLog holds back every state change the policy appends: the
// decision is in the log well before the state change that carries it out.
type slowStateLog struct{ policy.Log }

func (l slowStateLog) Append(ctx context.Context, ref eventstore.Reference, r eventstore.Record) (eventstore.Entry, error) {
	if _, ok := r.(*eventstore.StateChanged); ok {
		select {
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
			return eventstore.Entry{}, ctx.Err()
		}
	}
	return l.Log.Append(ctx, ref, r)
}

// TestObservationAnsweredOnceItsDecisionIsCarriedOut: recordObservation
// answers once the decision's state changes are appended too, so that an
// answer sent right after to the request the observation opened finds it
// open, however long the state change takes after the decision.
func TestObservationAnsweredOnceItsDecisionIsCarriedOut(t *testing.T) {
	decisions := &api.Decisions{}
	r := startRig(t, false, func(c *api.Config) { c.Decisions = decisions })
	ctx, cancel := context.WithCancel(context.Background())
	sub := policy.NewSubscriber(slowStateLog{r.store}, policy.SubscriberConfig{Decided: decisions.Deliver})
	done := make(chan struct{})
	go func() { defer close(done); sub.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	id := r.launch(t, "t-carried", "", "sleep:60s").Reference.AgentExecutionID
	for i, req := range []string{"q1", "q2"} {
		var ack decisionAck
		r.call(t, "POST", "/v1/executions/"+id+"/observations", map[string]any{"observationId": "o-" + req, "source": "mcp", "confidence": "high",
			"signal": map[string]any{"type": "needs_input", "payload": map[string]any{"requestId": req, "question": "Which branch?"}}}, http.StatusOK, &ack)
		var answered runtime.MessageAck
		r.call(t, "POST", "/v1/executions/"+id+"/messages", map[string]any{"messageId": "a-" + req, "type": "answer",
			"payload": map[string]any{"requestId": req, "text": "main"}}, http.StatusOK, &answered)
		if answered.Sequence == 0 {
			t.Fatalf("answer %d: %+v, want it recorded", i, answered)
		}
		eventually(t, 10*time.Second, "the request closes", func() bool {
			st, err := r.views.Execution(id)
			return err == nil && st.CurrentInputRequestID == ""
		})
	}
}
