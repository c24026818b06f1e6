package projbench

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/policy"
)

// owners spread the benchmark journals over owner entities.
var owners = []eventstore.OwnerEntity{eventstore.OwnerTask, eventstore.OwnerMission, eventstore.OwnerRepository}

// reference returns the reference of benchmark journal i of a group (a
// group names the journals of one measurement, so they never collide).
func reference(group string, i int) (eventstore.Reference, error) {
	ref, err := eventstore.NewReference(owners[i%len(owners)], fmt.Sprintf("%s-owner-%d", group, i%50), fmt.Sprintf("%s-%05d", group, i))
	if err != nil {
		return ref, fmt.Errorf("journal %s-%d: %w", group, i, err)
	}
	ref.JournalID = eventstore.JournalIDFor(ref.OwnerEntity, ref.OwnerID, ref.AgentExecutionID)
	return ref, nil
}

// generator writes one journal of a running agent, record by record, the
// way the daemon would: each turn the operator sends a prompt (or answers
// the open question), the agent reports status, progress, token usage and
// chat through observations, every observation gets its decision from the
// real policy with the records that carry it out (activity updates, state
// changes, owner effects), and every few turns the agent asks a question or
// claims completion. Every record is complete (ids, sequence, time) as the
// store would write it, and is folded into the generator's state so that the
// policy sees what it would see live.
type generator struct {
	ref   eventstore.Reference
	state *execution.State
	seq   uint64
	at    time.Time
	turn  int
	queue []eventstore.Record
	// left is how many records the journal may still get, header included;
	// the last is always the state change that completes the execution.
	left int
	// request is the open input request the next prompt answers.
	request string
}

// start is the time of the first record of every generated journal.
var start = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// newGenerator returns the generator of a journal of n records (at least 1,
// the header).
func newGenerator(ref eventstore.Reference, n int) *generator {
	return &generator{ref: ref, state: &execution.State{}, at: start, left: n}
}

// header returns the journal's header, complete.
func (g *generator) header() *eventstore.Header {
	h := &eventstore.Header{
		// What the store writes into every header it completes.
		JournalKind: "agent-execution-interaction-journal",
		AgentID:     "agent-" + g.ref.OwnerID,
		ProtocolDescriptor: eventstore.ProtocolDescriptor{
			Posture: eventstore.PostureStructuredHeadless,
			Messages: []eventstore.MessageDescriptor{{
				Type: "prompt", Label: "Prompt", Delivery: eventstore.DeliveryRequired,
				MutatesContext: true, Portability: eventstore.PortabilityCrossAgent,
			}},
			Signals:          eventstore.SurfacedSignalTypes(),
			SignalTransports: []eventstore.SignalTransport{eventstore.SignalViaStdoutMarker},
		},
		TransportState:   &eventstore.TransportState{StructuredLane: eventstore.LaneStdio},
		WorkingDirectory: "/work/" + g.ref.AgentExecutionID,
	}
	g.place(h)
	return h
}

// done reports whether the journal has all its records.
func (g *generator) done() bool { return g.left <= 0 && len(g.queue) == 0 }

// next returns the journal's next record; call header first and stop when
// done reports true.
func (g *generator) next() eventstore.Record {
	if len(g.queue) == 0 {
		g.plan()
	}
	r := g.queue[0]
	g.queue = g.queue[1:]
	return r
}

// plan queues the records of the next turn, as many as the journal has
// room for, or the final state change when only that one is left.
func (g *generator) plan() {
	if g.left <= 0 {
		panic("projbench: generator asked past its journal's end")
	}
	if g.left == 1 {
		g.place(stateChange(g.ref, "finish", &eventstore.StateChanged{Lifecycle: eventstore.LifecycleCompleted,
			Attention: eventstore.AttentionNone, Reason: "exit status 0"}))
		return
	}
	if g.turn == 0 {
		g.add(stateChange(g.ref, "start", &eventstore.StateChanged{Lifecycle: eventstore.LifecycleRunning,
			Attention: eventstore.AttentionAutonomous, Activity: eventstore.ActivityPlanning}))
	}
	g.turn++
	t := g.turn
	var msgID string
	if g.request != "" {
		msgID = fmt.Sprintf("answer-%d", t)
		payload, _ := json.Marshal(map[string]string{"text": "yes, go ahead with the migration", "requestId": g.request})
		m := &eventstore.MessageAccepted{MessageID: msgID, Source: eventstore.SourceOperator,
			MessageType: "prompt", Payload: payload, MutatesContext: true}
		g.request = ""
		if g.add(m) {
			if out, ok := policy.DecideMessage(g.state, m); ok {
				g.outcome(out)
			}
		}
	} else {
		msgID = fmt.Sprintf("prompt-%d", t)
		payload, _ := json.Marshal(map[string]string{"text": fmt.Sprintf("Step %d: update the handlers in internal/api and run the package tests.", t)})
		g.add(&eventstore.MessageAccepted{MessageID: msgID, Source: eventstore.SourceOperator,
			MessageType: "prompt", Payload: payload, MutatesContext: true})
	}
	delivery := &eventstore.MessageDelivery{MessageID: msgID, Status: eventstore.DeliveryDelivered, Transport: eventstore.TransportPTY}
	if t%20 == 0 {
		delivery.Status, delivery.Reason = eventstore.DeliveryFailed, "pty closed"
	}
	g.add(delivery)

	phases := []string{"planning", "editing", "executing", "testing", "reviewing"}
	phase := phases[t%len(phases)]
	g.observe(fmt.Sprintf("o-%d-status", t), eventstore.ConfidenceAuthoritative,
		&eventstore.StatusSignal{Summary: fmt.Sprintf("%s step %d", phase, t), Phase: phase})
	done, total := int64(t%10), int64(10)
	g.observe(fmt.Sprintf("o-%d-progress", t), eventstore.ConfidenceAuthoritative,
		&eventstore.ProgressSignal{Summary: fmt.Sprintf("editing internal/api/handler_%d.go", t),
			Units: &eventstore.Units{Completed: &done, Total: &total, Unit: "files"}})
	in, out := int64(1200+37*t), int64(300+11*t)
	g.observe(fmt.Sprintf("o-%d-usage", t), eventstore.ConfidenceAuthoritative,
		&eventstore.UsageSignal{InputTokens: &in, OutputTokens: &out})
	g.observe(fmt.Sprintf("o-%d-test", t), eventstore.ConfidenceMedium,
		&eventstore.ProgressSignal{Summary: "go test ./internal/api/...", Detail: fmt.Sprintf("ok  \tinternal/api\t0.%03ds", t%1000)})
	g.observe(fmt.Sprintf("o-%d-chat", t), eventstore.ConfidenceAuthoritative,
		&eventstore.MessageSignal{Text: fmt.Sprintf("Updated %d handlers; the tests pass. Next I will look at the error paths of step %d.", t%7+1, t)})
	if t%10 == 0 {
		// The runtime's checkpoint of a turn's end, as the read models see
		// it every few turns.
		g.add(&eventstore.CheckpointCreated{CheckpointID: fmt.Sprintf("turn-%d", t), Trigger: eventstore.CheckpointTurnEnd,
			Source: eventstore.SourceDaemon, AtSequence: g.seq, StatusAtCapture: eventstore.RunRunning, CurrentTaskID: g.ref.OwnerID,
			TodoIDs: []string{}, ArtifactRefs: []string{}, MemoryRefs: []string{}, ApprovalRefs: []string{},
			StateSummary: eventstore.CheckpointSummary{Title: "update the handlers in internal/api", Summary: fmt.Sprintf("running after %d turns", t)}})
	}
	switch {
	case t%25 == 0:
		g.observe(fmt.Sprintf("o-%d-done", t), eventstore.ConfidenceAuthoritative,
			&eventstore.CompletedClaimSignal{Summary: fmt.Sprintf("steps up to %d are done", t), Evidence: []string{"go test ./..."}})
	case t%5 == 0:
		g.request = fmt.Sprintf("req-%d", t)
		g.observe(fmt.Sprintf("o-%d-ask", t), eventstore.ConfidenceAuthoritative,
			&eventstore.NeedsInputSignal{RequestID: g.request, Question: "The migration drops a column; go ahead?", Choices: []string{"yes", "no"}})
	}
}

// observe queues an observation with the policy's decision on it and the
// records that carry the decision out.
func (g *generator) observe(id string, c eventstore.Confidence, p eventstore.SignalPayload) {
	obs := &eventstore.Observation{ObservationID: id, Source: eventstore.ObservedMCP, Confidence: c, Signal: eventstore.NewSignal(p)}
	if g.add(obs) {
		g.outcome(policy.Decide(g.state, obs))
	}
}

func (g *generator) outcome(out policy.Outcome) {
	if out.Duplicate {
		return
	}
	g.add(out.Decision)
	for _, r := range out.Records {
		g.add(r)
	}
}

// add places a record when the journal has room for it besides the final
// state change, and reports whether it did.
func (g *generator) add(r eventstore.Record) bool {
	if g.left <= 1 {
		return false
	}
	g.place(r)
	return true
}

// place completes a record as the store would, folds it into the state and
// queues it (a header is returned by header instead).
func (g *generator) place(r eventstore.Record) {
	g.seq++
	g.left--
	g.at = g.at.Add(1500 * time.Millisecond)
	b := r.RecordBase()
	b.Sequence = g.seq
	b.JournalID = g.ref.JournalID
	b.AgentExecutionID = g.ref.AgentExecutionID
	b.OwnerID = g.ref.OwnerID
	b.Scope = g.ref.OwnerEntity
	b.OccurredAt = g.at
	b.Type = r.Kind()
	b.SchemaVersion = eventstore.SchemaVersion
	if b.RecordID == "" {
		key := eventstore.NaturalKey(r)
		if key == "" {
			key = fmt.Sprintf("bench-%d", g.seq)
		}
		b.RecordID = eventstore.RecordID(g.ref.JournalID, r.Kind(), key)
	}
	if _, err := g.state.Apply(r); err != nil {
		panic(fmt.Sprintf("projbench: generated record %s does not fold: %v", r.Kind(), err))
	}
	if _, ok := r.(*eventstore.Header); !ok {
		g.queue = append(g.queue, r)
	}
}

func stateChange(ref eventstore.Reference, key string, sc *eventstore.StateChanged) *eventstore.StateChanged {
	sc.RecordID = eventstore.RecordID(ref.JournalID, eventstore.KindStateChanged, key)
	return sc
}

// journal returns the n records of one generated journal, header first.
func journal(ref eventstore.Reference, n int) []eventstore.Record {
	g := newGenerator(ref, n)
	recs := make([]eventstore.Record, 0, n)
	recs = append(recs, g.header())
	for !g.done() {
		recs = append(recs, g.next())
	}
	return recs
}
