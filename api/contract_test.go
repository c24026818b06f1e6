package api_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/contract"
	"github.com/agentjournal/agentjournal/eventstore"
)

// TestContractRoutes: a run's plan updates and questions, read back as
// AgentTodos and AgentApprovalCheckpoints, answers valid against
// openapi.yaml.
func TestContractRoutes(t *testing.T) {
	t.Parallel()
	s, c, ctx := startClient(t, apitest.Options{})
	id := launchRun(t, ctx, c, client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-c", Agent: "generic",
		Prompt: "go", Command: []string{s.Agent,
			"ask:r1:Proceed?",
			`signal:{"type":"needs_input","payload":{"requestId":"q2","question":"which?","choices":["a","b"]}}`,
			"ask:r3:Still there?"}})
	waitAsked(t, ctx, c, id, "r1")
	before := time.Now()
	if _, err := c.SendMessage(ctx, id, client.Message{Type: "answer", Payload: json.RawMessage(`{"text":"yes","requestId":"r1"}`)}); err != nil {
		t.Fatal(err)
	}
	var approvals []contract.AgentApprovalCheckpoint
	var err error
	for len(approvals) < 3 {
		if ctx.Err() != nil {
			t.Fatalf("q2 never asked: %+v", approvals)
		}
		time.Sleep(20 * time.Millisecond)
		if approvals, err = c.Approvals(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	r1, q2, r3 := approvals[0], approvals[1], approvals[2]
	if r1.ApprovalID != "r1" || r1.Status != contract.ApprovalAnswered || r1.Answer != "yes" || r1.ResolvedBy != "operator" ||
		r1.ResolvedAt == nil || r1.ResolvedAt.Before(before.Add(-time.Second)) {
		t.Fatalf("r1 = %+v", r1)
	}
	if r1.RunID != id || r1.SessionID != id || r1.AgentID != "generic" {
		t.Fatalf("r1 carries no run context: %+v", r1)
	}
	if q2.ApprovalID != "q2" || q2.Status != contract.ApprovalPending || len(q2.Choices) != 2 {
		t.Fatalf("q2 = %+v", q2)
	}
	if r3.ApprovalID != "r3" || r3.Status != contract.ApprovalPending || r3.ResolvedAt != nil {
		t.Fatalf("r3 = %+v", r3)
	}
	// A todo list emitted during a run: Claude Code's TodoWrite, from a
	// real capture, updated once.
	todoRun := launchRun(t, ctx, c, todoLaunch(t, s, "t-c", "do it"))
	waitFinal(t, ctx, c, todoRun, "todo run never ended")
	todos, err := c.Todos(ctx, todoRun)
	if err != nil {
		t.Fatal(err)
	}
	if len(todos) != 2 || todos[0].Text != "Write the file" || todos[0].Status != eventstore.PlanItemDone || len(todos[0].History) != 2 ||
		todos[0].History[0].Status != eventstore.PlanItemInProgress || todos[1].History[0].Status != eventstore.PlanItemOpen ||
		todos[1].History[1].Sequence <= todos[1].History[0].Sequence || todos[0].SessionID != todoRun {
		t.Fatalf("todos = %+v", todos)
	}

	v := servedValidator(t, s.HTTP.URL)
	for _, path := range []string{"/v1/executions/" + todoRun + "/todos", "/v1/executions/" + id + "/approvals", "/v1/executions/nope/todos"} {
		code, _, data := validatedGet(t, v, s.HTTP.URL, path)
		if want := path != "/v1/executions/nope/todos"; (code == http.StatusOK) != want {
			t.Errorf("GET %s → %d %s", path, code, data)
		}
	}
}
