package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
)

func queuedDispatch() map[string]any {
	return map[string]any{"originSurface": "browser", "originProductId": "claw-cowork", "dispatchMode": "queued",
		"initiatedAt": "2026-11-24T08:00:00Z"}
}

// TestLaunchDispatchRefused: every bad dispatch context is refused with
// the field it is about, and nothing is journaled.
func TestLaunchDispatchRefused(t *testing.T) {
	r := newRig(t)
	for _, tc := range []struct {
		name  string
		set   func(d map[string]any)
		field string
		want  string
	}{
		{"unknown surface", func(d map[string]any) { d["originSurface"] = "fax" }, "dispatchContext.originSurface", "product-api"},
		{"missing product", func(d map[string]any) { delete(d, "originProductId") }, "dispatchContext.originProductId", "required"},
		{"unsafe product", func(d map[string]any) { d["originProductId"] = "a\nb" }, "dispatchContext.originProductId", "letters, digits"},
		{"long product", func(d map[string]any) { d["originProductId"] = strings.Repeat("p", 200) }, "dispatchContext.originProductId", "1 to 128"},
		{"unknown mode", func(d map[string]any) { d["dispatchMode"] = "eventually" }, "dispatchContext.dispatchMode", "scheduled"},
		{"missing initiatedAt", func(d map[string]any) { delete(d, "initiatedAt") }, "dispatchContext.initiatedAt", "RFC 3339"},
		{"bad initiatedAt", func(d map[string]any) { d["initiatedAt"] = "24/11/2026" }, "dispatchContext.initiatedAt", "RFC 3339"},
		{"scheduled without time", func(d map[string]any) { d["dispatchMode"] = "scheduled" }, "dispatchContext.scheduledFor", "required"},
		{"time without schedule", func(d map[string]any) { d["scheduledFor"] = "2026-11-24T09:00:00Z" }, "dispatchContext.scheduledFor", "only with dispatchMode scheduled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := queuedDispatch()
			tc.set(d)
			seed := strings.ReplaceAll(tc.name, " ", "-")
			body := map[string]any{"ownerEntity": "Task", "ownerId": "t-1", "seed": seed, "agent": "generic",
				"command": []string{r.agent, "exit:0"}, "dispatchContext": d}
			e := r.fail(t, "POST", "/v1/executions", body, testToken, http.StatusBadRequest, "invalid_field", tc.field)
			if !strings.Contains(e.Error.Message, tc.want) {
				t.Fatalf("message %q, want it to say %q", e.Error.Message, tc.want)
			}
			id, _ := eventstore.NewAgentExecutionID(eventstore.OwnerTask, "t-1", seed)
			if _, err := r.store.Lookup(context.Background(), id); err == nil {
				t.Fatalf("refused launch %s was journaled", id)
			}
		})
	}
	// An unknown field inside the context is refused too.
	d := queuedDispatch()
	d["priority"] = "high"
	body := map[string]any{"ownerEntity": "Task", "ownerId": "t-1", "agent": "generic", "command": []string{r.agent, "exit:0"}, "dispatchContext": d}
	if got, data := r.do(t, "POST", "/v1/executions", body, testToken); got != http.StatusBadRequest || !strings.Contains(string(data), "priority") {
		t.Fatalf("unknown field: %d %s, want 400 naming priority", got, data)
	}
}

// TestQueueThroughTheAPI: with a limit of one running agent, a queued
// launch answers starting, is listed by GET /v1/queue, a stop cancels it
// while queued, and another one starts once the running agent ends.
func TestQueueThroughTheAPI(t *testing.T) {
	s, cl, ctx := startClient(t, apitest.Options{MaxRunning: 1})
	launch := func(d *eventstore.DispatchContext, steps ...string) client.Launched {
		t.Helper()
		res, err := cl.Launch(ctx, client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-queue", Agent: "generic",
			Command: append([]string{s.Agent}, steps...), DispatchContext: d})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	dispatch := func() *eventstore.DispatchContext {
		return &eventstore.DispatchContext{OriginSurface: eventstore.OriginProductAPI, OriginProductID: "flowmonk",
			DispatchMode: eventstore.DispatchQueued, InitiatedAt: time.Now().UTC().Format(time.RFC3339)}
	}
	first := launch(nil, "sleep:60s")
	cancelled := launch(dispatch(), "say:never")
	if st := cancelled.State; st.Lifecycle != eventstore.LifecycleStarting || !strings.HasPrefix(st.LifecycleReason, "queued") ||
		st.DispatchContext == nil || st.DispatchContext.DispatchMode != eventstore.DispatchQueued {
		t.Fatalf("queued launch answered %s (%s) dispatch %+v, want starting, queued", st.Lifecycle, st.LifecycleReason, st.DispatchContext)
	}
	later := launch(dispatch(), "say:later")
	q, err := cl.Queue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if q.MaxRunning != 1 || len(q.Queued) != 2 || q.Queued[0].AgentExecutionID != cancelled.Reference.AgentExecutionID ||
		q.Queued[1].Position != 2 || q.Queued[1].DispatchContext.OriginProductID != "flowmonk" {
		t.Fatalf("queue %+v, want both queued runs in launch order under a limit of 1", q)
	}

	st, err := cl.Stop(ctx, cancelled.Reference.AgentExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Lifecycle != eventstore.LifecycleCancelled || st.Interrupted == nil || st.Interrupted.Reason != eventstore.InterruptCanceled {
		t.Fatalf("stopped queued run: %s, interrupted %+v; want cancelled, canceled", st.Lifecycle, st.Interrupted)
	}
	if q, err := cl.Queue(ctx); err != nil || len(q.Queued) != 1 || q.Queued[0].Position != 1 {
		t.Fatalf("queue after the stop: %+v, %v; want the other run at position 1", q, err)
	}
	if _, err := cl.Stop(ctx, first.Reference.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	for {
		e, err := cl.Execution(ctx, later.Reference.AgentExecutionID)
		if err != nil {
			t.Fatal(err)
		}
		if e.Lifecycle == eventstore.LifecycleCompleted {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("queued run is %s (%s), want it to start and complete once the first ended", e.Lifecycle, e.LifecycleReason)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if e, err := cl.Execution(ctx, cancelled.Reference.AgentExecutionID); err != nil || e.Lifecycle != eventstore.LifecycleCancelled {
		t.Fatalf("cancelled run is %v (%v), want still cancelled: it never starts", e.Lifecycle, err)
	}
}
