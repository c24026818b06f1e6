package apibench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/benchkit"
)

// textBytes is the length of every message text and progress summary.
const textBytes = 256

// runner carries what the measurements of one Run share.
type runner struct {
	cfg Config
	st  *stack
	// text is every message's text and every observation's summary.
	text string
	// rawRounds and observationRounds count the rounds begun, whose
	// number is in each record's id: a round must not repeat an earlier
	// one's ids, which would be duplicates.
	rawRounds, observationRounds int
}

// observation is the record recordObservation writes for the benchmark's
// request body: a progress signal an agent reports through MCP.
func observation(id, summary string) *eventstore.Observation {
	return &eventstore.Observation{
		ObservationID: id,
		Source:        eventstore.ObservedMCP,
		Confidence:    eventstore.ConfidenceAuthoritative,
		Signal:        eventstore.NewSignal(&eventstore.ProgressSignal{Summary: summary}),
	}
}

// rawAppend appends Requests observations with the store from Clients
// goroutines to as many journals of their own as there are agents, each
// goroutine keeping to one: the baseline of the API results.
func (r *runner) rawAppend(ctx context.Context) (benchkit.Result, error) {
	refs := make([]eventstore.Reference, r.cfg.Agents)
	for i := range refs {
		task := fmt.Sprintf("%sraw-%d", ownerPrefix, i)
		id, err := eventstore.NewAgentExecutionID(eventstore.OwnerTask, task, "raw")
		if err == nil {
			refs[i], err = eventstore.NewReference(eventstore.OwnerTask, task, id)
		}
		if err == nil {
			refs[i], err = r.st.store.EnsureJournal(ctx, refs[i], &eventstore.Header{AgentID: "generic",
				ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureStructuredHeadless}})
		}
		if err != nil {
			return benchkit.Result{}, fmt.Errorf("%s: journal %d: %w", nameRawAppend, i, err)
		}
	}
	r.rawRounds++
	recs := make([]eventstore.Record, r.cfg.Requests)
	for i := range recs {
		recs[i] = observation(fmt.Sprintf("raw-%d-%d", r.rawRounds, i), r.text)
	}
	calls, err := benchkit.TimeEach(ctx, len(recs), r.cfg.Clients, func(ctx context.Context, worker, i int) error {
		_, err := r.st.store.Append(ctx, refs[worker%len(refs)], recs[i])
		return err
	})
	if err != nil {
		return benchkit.Result{}, fmt.Errorf("%s: %w", nameRawAppend, err)
	}
	return result(nameRawAppend, r.cfg.Clients, calls.Latencies, calls.Elapsed, "",
		fmt.Sprintf("JetStreamStore.Append of a progress observation (a %d-byte summary) from %d goroutines to %d journals of their own, "+
			"each goroutine keeping to one, while the projector and the policy follow the log", textBytes, r.cfg.Clients, len(refs))), nil
}

// messageBody is the body of sendMessage.
type messageBody struct {
	MessageID string          `json:"messageId"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

// sendMessage sends Requests prompts from Clients HTTP clients, client c
// to agent c mod Agents.
func (r *runner) sendMessage(ctx context.Context) (benchkit.Result, error) {
	payload, err := json.Marshal(map[string]string{"text": r.text})
	if err != nil {
		return benchkit.Result{}, err
	}
	bodies := make([][]byte, r.cfg.Requests)
	for i := range bodies {
		if bodies[i], err = json.Marshal(messageBody{MessageID: fmt.Sprintf("msg-%d", i), Type: "prompt", Payload: payload}); err != nil {
			return benchkit.Result{}, err
		}
	}
	paths := r.paths("messages")
	calls, err := benchkit.TimeEach(ctx, len(bodies), r.cfg.Clients, func(ctx context.Context, worker, i int) error {
		var ack runtime.MessageAck
		if err := r.st.post(ctx, paths[worker%len(paths)], bodies[i], http.StatusOK, &ack); err != nil {
			return err
		}
		if ack.Delivery != eventstore.DeliveryDelivered || ack.Duplicate {
			return fmt.Errorf("message %s: delivery %s (%s), duplicate %t; want delivered, not a duplicate",
				ack.MessageID, ack.Delivery, ack.Reason, ack.Duplicate)
		}
		return nil
	})
	if err != nil {
		return benchkit.Result{}, fmt.Errorf("%s: %w", nameSendMessage, err)
	}
	return result(nameSendMessage, r.cfg.Clients, calls.Latencies, calls.Elapsed, nameRawAppend,
		fmt.Sprintf("POST /v1/executions/{id}/messages of a prompt (a %d-byte text, its own messageId) from %d clients to %d running agents, "+
			"each client keeping to one; answered once it is recorded, written to the agent's stdin and its delivery recorded", textBytes, r.cfg.Clients, len(paths))), nil
}

// observationBody is the body of recordObservation.
type observationBody struct {
	ObservationID string                       `json:"observationId"`
	Source        eventstore.ObservationSource `json:"source"`
	Confidence    eventstore.Confidence        `json:"confidence"`
	Signal        *eventstore.Signal           `json:"signal"`
}

// observationAnswer is the part of recordObservation's answer the
// benchmark checks.
type observationAnswer struct {
	ObservationID string `json:"observationId"`
	Duplicate     bool   `json:"duplicate"`
	Decision      struct {
		Action eventstore.DecisionAction `json:"action"`
	} `json:"decision"`
}

// recordObservation records Requests progress observations from Clients
// HTTP clients, client c for agent c mod Agents.
func (r *runner) recordObservation(ctx context.Context) (benchkit.Result, error) {
	r.observationRounds++
	bodies := make([][]byte, r.cfg.Requests)
	for i := range bodies {
		o := observation(fmt.Sprintf("obs-%d-%d", r.observationRounds, i), r.text)
		var err error
		if bodies[i], err = json.Marshal(observationBody{ObservationID: o.ObservationID, Source: o.Source, Confidence: o.Confidence, Signal: o.Signal}); err != nil {
			return benchkit.Result{}, err
		}
	}
	paths := r.paths("observations")
	calls, err := benchkit.TimeEach(ctx, len(bodies), r.cfg.Clients, func(ctx context.Context, worker, i int) error {
		var ans observationAnswer
		if err := r.st.post(ctx, paths[worker%len(paths)], bodies[i], http.StatusOK, &ans); err != nil {
			return err
		}
		if ans.Decision.Action != eventstore.ActionRecordOnly || ans.Duplicate {
			return fmt.Errorf("observation %s: decision %q, duplicate %t; want %s, not a duplicate",
				ans.ObservationID, ans.Decision.Action, ans.Duplicate, eventstore.ActionRecordOnly)
		}
		return nil
	})
	if err != nil {
		return benchkit.Result{}, fmt.Errorf("%s: %w", nameRecordObservation, err)
	}
	res := result(nameRecordObservation, r.cfg.Clients, calls.Latencies, calls.Elapsed, nameRawAppend,
		fmt.Sprintf("POST /v1/executions/{id}/observations of a progress signal (a %d-byte summary) from %d clients for %d running agents, "+
			"each client keeping to one; answered with the policy's decision (%s) once the policy subscriber has appended it", textBytes, r.cfg.Clients, len(paths), eventstore.ActionRecordOnly))
	return res, nil
}

// paths returns the path of a route under each agent's execution.
func (r *runner) paths(route string) []string {
	out := make([]string, len(r.st.agents))
	for i, ref := range r.st.agents {
		out[i] = "/v1/executions/" + url.PathEscape(ref.AgentExecutionID) + "/" + route
	}
	return out
}

// result summarizes timed operations.
func result(name string, concurrency int, lat []time.Duration, elapsed time.Duration, baseline, method string) benchkit.Result {
	res := benchkit.Result{Name: name, Count: len(lat), Elapsed: elapsed,
		Rate: benchkit.Rate(len(lat), elapsed), RateUnit: "ops/s", Baseline: baseline, Method: method,
		Figures: []benchkit.Figure{{Name: figureConcurrency, Value: float64(concurrency)}}}
	res.P50, res.P99 = latencies(lat)
	return res
}
