package api_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/execution"
)

// TestReadsWaitForWhatAnObservationsAnswerTold: recordObservation answers
// without waiting for the projection, so a read after the answer must wait
// for the projection to apply what the answer told of. With the projector
// paused after the execution is projected, the timeline read stays
// unanswered until it runs again, and then holds the decision.
func TestReadsWaitForWhatAnObservationsAnswerTold(t *testing.T) {
	s := apitest.Start(t, apitest.Options{Configure: []func(*api.Config){
		func(c *api.Config) { c.DecisionWait = time.Minute },
	}})
	r := &rig{bus: s.Bus, store: s.Store, views: s.Views, rt: s.Runtime, srv: s.Server, http: s.HTTP, agent: s.Agent}
	id, ack, resume := r.toldWhilePaused(t, s.PauseProjector, "t-told", "o-told")

	type read struct {
		code int
		body []byte
	}
	got := make(chan read, 1)
	go func() {
		// A progress observation's decision records it as it came and
		// changes nothing else: only the whole timeline lists it.
		code, body := r.do(t, "GET", "/v1/executions/"+id+"/timeline?all=true", nil, testToken)
		got <- read{code, body}
	}()
	// Nothing can answer the read before the projector runs; give it the
	// chance to answer early before letting the projector go.
	select {
	case g := <-got:
		t.Fatalf("the timeline was read before the projection applied the observation's decision: %d %s", g.code, g.body)
	case <-time.After(200 * time.Millisecond):
	}
	resume()
	var g read
	select {
	case g = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the timeline read did not end after the projector ran")
	}
	if g.code != http.StatusOK {
		t.Fatalf("timeline: %d %s", g.code, g.body)
	}
	var page struct {
		Items []execution.TimelineItem `json:"items"`
	}
	if err := json.Unmarshal(g.body, &page); err != nil {
		t.Fatalf("timeline %s: %v", g.body, err)
	}
	decided := false
	for _, it := range page.Items {
		decided = decided || it.Kind == execution.ItemDecision && it.ObservationID == "o-told" && it.Sequence == ack.Decision.Sequence
	}
	if !decided {
		t.Errorf("timeline after the answer has no item of decision %d on o-told: %+v", ack.Decision.Sequence, page.Items)
	}
}

// TestReadsStopWaitingForAStalledProjection: once a read's wait for what an
// answer told of runs out, later reads are served without waiting until the
// projection moves, and the daemon says so once; when it moves, reads wait
// for it again.
func TestReadsStopWaitingForAStalledProjection(t *testing.T) {
	var logs logLines
	s := apitest.Start(t, apitest.Options{Configure: []func(*api.Config){
		func(c *api.Config) {
			c.DecisionWait = 300 * time.Millisecond
			c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		},
	}})
	r := &rig{bus: s.Bus, store: s.Store, views: s.Views, rt: s.Runtime, srv: s.Server, http: s.HTTP, agent: s.Agent}
	id, ack, resume := r.toldWhilePaused(t, s.PauseProjector, "t-stalled", "o-stalled")
	for range 3 {
		r.call(t, "GET", "/v1/executions/"+id+"/timeline", nil, http.StatusOK, nil)
	}
	const said = "the read models are behind what answers told of"
	lines := logs.all()
	n := 0
	for _, l := range lines {
		if strings.Contains(l, said) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%q logged %d times over three reads of a stalled projection, want once (the later reads do not wait):\n%s", said, n, strings.Join(lines, ""))
	}
	resume()
	eventually(t, 30*time.Second, "a read shows the decision once the projector runs again", func() bool {
		var page struct {
			Items []execution.TimelineItem `json:"items"`
		}
		r.call(t, "GET", "/v1/executions/"+id+"/timeline?all=true", nil, http.StatusOK, &page)
		return slices.ContainsFunc(page.Items, func(it execution.TimelineItem) bool { return it.Sequence == ack.Decision.Sequence })
	})
}

// toldWhilePaused launches an agent owned by ownerID, pauses the projector
// (pause) once the read models hold the execution, and records a progress
// observation obsID, whose answer tells of records the paused projection
// has not applied. It returns the execution, the answer and what resumes
// the projector.
func (r *rig) toldWhilePaused(t *testing.T, pause func() (resume func()), ownerID, obsID string) (id string, ack decisionAck, resume func()) {
	t.Helper()
	id = r.launch(t, ownerID, "", "sleep:60s").Reference.AgentExecutionID
	r.call(t, "GET", "/v1/executions/"+id+"/timeline", nil, http.StatusOK, nil)
	resume = pause()
	held, err := r.views.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	r.call(t, "POST", "/v1/executions/"+id+"/observations", map[string]any{"observationId": obsID, "source": "mcp", "confidence": "high",
		"signal": map[string]any{"type": "progress", "payload": map[string]any{"summary": "halfway"}}}, http.StatusOK, &ack)
	if cp, err := r.views.Checkpoint(); err != nil || cp != held {
		t.Fatalf("projection checkpoint %d (%v) while the projector is paused, want %d", cp, err, held)
	}
	return id, ack, resume
}
