package api_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/contract"
	"github.com/agentjournal/agentjournal/eventstore"
)

// TestSessionRoutes: a one-shot Claude Code run (a real capture) ends its
// turn with a checkpoint; resumed, it is a second run of the same session;
// a checkpoint is asked for, retried, and refused for bad input; every
// answer is valid against openapi.yaml.
func TestSessionRoutes(t *testing.T) {
	t.Parallel()
	s, c, ctx := startClient(t, apitest.Options{})
	first := launchRun(t, ctx, c, todoLaunch(t, s, "t-s", "write the file\nthen test it"))
	// The turn's checkpoint is taken beside the run's end; wait for both.
	var cps []contract.AgentCheckpoint
	var err error
	for ex, _ := c.Execution(ctx, first); !ex.Lifecycle.Final() || len(cps) == 0; ex, _ = c.Execution(ctx, first) {
		if ctx.Err() != nil {
			t.Fatalf("first run never ended with a checkpoint: %s, %+v", ex.Lifecycle, cps)
		}
		time.Sleep(20 * time.Millisecond)
		if cps, err = c.Checkpoints(ctx, first); err != nil {
			t.Fatal(err)
		}
	}
	turn := cps[0]
	if turn.CheckpointID != "turn-1" || turn.Trigger != eventstore.CheckpointTurnEnd || turn.Source != string(eventstore.SourceDaemon) ||
		turn.SessionID != first || turn.RunID != first || turn.StateSummary.Title != "write the file" ||
		turn.ResumeToken == nil || *turn.ResumeToken == "" || len(turn.TodoIDs) != 2 || turn.AtSequence == 0 || turn.Sequence <= turn.AtSequence {
		t.Errorf("turn checkpoint %+v", turn)
	}

	// Resumed: a new run of the same session.
	res, err := c.Resume(ctx, first, client.ResumeRequest{Prompt: "and now the docs"})
	if err != nil {
		t.Fatal(err)
	}
	second := res.Reference.AgentExecutionID
	waitFinal(t, ctx, c, second, "second run never ended")
	run, err := c.Run(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	if run.SessionID != first || run.Resumes != first || run.Status != eventstore.RunCompleted || run.TaskID != "t-s" {
		t.Errorf("resumed run %+v", run)
	}

	// Asked for, with a title; asked again with the same id: one checkpoint.
	asked, err := c.Checkpoint(ctx, second, client.CheckpointRequest{ID: "before-review", Title: "ready for review"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Checkpoint(ctx, second, client.CheckpointRequest{ID: "before-review", Title: "another title"})
	if err != nil {
		t.Fatal(err)
	}
	if asked.Trigger != eventstore.CheckpointRequest || asked.Source != string(eventstore.SourceOperator) || asked.StateSummary.Title != "ready for review" ||
		asked.StatusAtCapture != eventstore.RunCompleted || asked.CurrentTaskID != nil || again.Sequence != asked.Sequence || again.StateSummary.Title != "ready for review" {
		t.Errorf("asked %+v\nagain %+v", asked, again)
	}

	sess, err := c.Session(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if got := sess.Session; got.SessionID != first || len(got.RunIDs) != 2 || got.RunIDs[0] != first || got.RunIDs[1] != second ||
		got.Status != contract.SessionCompleted || !got.Resumable || got.UserID != "Task/t-s" {
		t.Errorf("session %+v", got)
	}
	if len(sess.Runs) != 2 || len(sess.Tasks) != 1 || sess.Tasks[0].TaskID != "t-s" || len(sess.Tasks[0].RunIDs) != 2 || len(sess.Todos) != 4 {
		t.Errorf("runs %+v tasks %+v todos %d", sess.Runs, sess.Tasks, len(sess.Todos))
	}
	ids := map[string]int{}
	for _, cp := range sess.Checkpoints {
		ids[cp.RunID+"/"+cp.CheckpointID]++
	}
	if ids[first+"/turn-1"] != 1 || ids[second+"/turn-1"] != 1 || ids[second+"/before-review"] != 1 || len(sess.Checkpoints) != 3 {
		t.Errorf("checkpoints %v", ids)
	}
	// A run's id names its session as well.
	if byRun, err := c.Session(ctx, second); err != nil || byRun.Session.SessionID != first {
		t.Errorf("session by its second run: %+v, %v", byRun, err)
	}
	list, err := c.Sessions(ctx, client.SessionFilter{Status: contract.SessionCompleted})
	if err != nil || len(list) != 1 || list[0].SessionID != first {
		t.Errorf("sessions %+v, %v", list, err)
	}

	// Refused, with nothing recorded.
	for _, bad := range []struct {
		req   client.CheckpointRequest
		id    string
		field string
		code  int
	}{
		{client.CheckpointRequest{Title: strings.Repeat("t", 201)}, second, "title", http.StatusBadRequest},
		{client.CheckpointRequest{Summary: strings.Repeat("s", 2001)}, second, "summary", http.StatusBadRequest},
		{client.CheckpointRequest{ID: "a/b\x00"}, second, "id", http.StatusBadRequest},
		{client.CheckpointRequest{}, "ae-nope", "", http.StatusNotFound},
	} {
		_, err := c.Checkpoint(ctx, bad.id, bad.req)
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Status != bad.code || ce.Field != bad.field {
			t.Errorf("checkpoint %+v of %s: %v, want %d naming %q", bad.req, bad.id, err, bad.code, bad.field)
		}
	}
	if cps, err := c.Checkpoints(ctx, second); err != nil || len(cps) != 2 {
		t.Errorf("checkpoints after refusals: %d, %v", len(cps), err)
	}

	// The agent's own plan and checkpoint, sent as markers on its stdout.
	agentRun := launchRun(t, ctx, c, client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-s2", Agent: "generic", Prompt: "port it",
		Command: []string{s.Agent, `signal:{"type":"plan","payload":{"items":[{"id":"1","text":"lexer","status":"done"},{"id":"2","text":"parser","status":"open"}]}}`,
			`signal:{"type":"checkpoint","payload":{"title":"lexer done","summary":"the parser is next"}}`}})
	var byAgent []contract.AgentCheckpoint
	for len(byAgent) == 0 {
		if ctx.Err() != nil {
			t.Fatal("the agent's checkpoint never showed")
		}
		time.Sleep(20 * time.Millisecond)
		if byAgent, err = c.Checkpoints(ctx, agentRun); err != nil {
			t.Fatal(err)
		}
	}
	if cp := byAgent[0]; cp.Source != contract.SourceAgent || cp.StateSummary.Title != "lexer done" || cp.StateSummary.Summary != "the parser is next" ||
		cp.SessionID != agentRun || cp.Sequence == 0 || len(cp.TodoIDs) != 2 {
		t.Errorf("agent checkpoint %+v", cp)
	}
	// The plan any agent can send is its todo list.
	if todos, err := c.Todos(ctx, agentRun); err != nil || len(todos) != 2 || todos[0].Text != "lexer" || todos[0].Status != eventstore.PlanItemDone {
		t.Errorf("todos from the plan marker: %+v, %v", todos, err)
	}

	v := servedValidator(t, s.HTTP.URL)
	for path, want := range map[string]int{
		"/v1/executions/" + agentRun + "/checkpoints": http.StatusOK,
		"/v1/sessions":                              http.StatusOK,
		"/v1/sessions?status=completed&limit=1":     http.StatusOK,
		"/v1/sessions?status=bogus":                 http.StatusBadRequest,
		"/v1/sessions/" + first:                     http.StatusOK,
		"/v1/sessions/nope":                         http.StatusNotFound,
		"/v1/executions/" + second + "/run":         http.StatusOK,
		"/v1/executions/" + second + "/checkpoints": http.StatusOK,
		"/v1/executions/nope/run":                   http.StatusNotFound,
	} {
		if code, _, data := validatedGet(t, v, s.HTTP.URL, path); code != want {
			t.Errorf("GET %s → %d %s, want %d", path, code, data, want)
		}
	}
}
