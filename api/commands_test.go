package api_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/commands"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// commandTree is a git work tree with one commit.
func commandTree(t *testing.T) string {
	t.Helper()
	return fixtures.GitTree(t, "main.go", "package main\n\nfunc Launch() {}\n")
}

// TestCommandRoutes: completions by prefix and focus; a dry run previews
// the typed invocation and records nothing; a command is carried out and
// recorded as its target is; a parse failure answers the shape expected
// and is recorded as a diagnostic unless it was a preview; terminal input
// appends nothing; every answer is valid against openapi.yaml.
func TestCommandRoutes(t *testing.T) {
	t.Parallel()
	s, c, ctx := startClient(t, apitest.Options{})
	id := launchRun(t, ctx, c, client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-cmd", Agent: "generic",
		Posture: eventstore.PostureStructuredInteractive, Command: []string{s.Agent, "wait"}, Dir: commandTree(t)})
	t.Cleanup(func() { c.Stop(context.Background(), id) })
	count := func() int {
		t.Helper()
		recs, _, err := c.Records(ctx, id, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}

	cs, err := c.Commands(ctx, id, "/ch", "")
	if err != nil || len(cs) != 1 || cs[0].Label != "/checkpoint" || cs[0].Category != commands.CategoryEntityCommand ||
		cs[0].Portability != eventstore.PortabilityMissionNative || cs[0].InputShape != "/checkpoint [title]" {
		t.Fatalf("completions of /ch: %+v, %v; want /checkpoint alone", cs, err)
	}
	all, err := c.Commands(ctx, id, "", commands.FocusTerminal)
	if err != nil || len(all) < 9 {
		t.Fatalf("all completions: %+v, %v", all, err)
	}
	if _, err := c.Commands(ctx, id, "", "pty"); !errors.Is(err, client.ErrInvalidField) || !strings.Contains(err.Error(), "prompt, terminal") {
		t.Errorf("focus pty: %v, want an invalid field naming prompt and terminal", err)
	}

	before := count()
	preview, err := c.Command(ctx, id, client.CommandRequest{Text: "/checkpoint before review"}, true)
	if err != nil || !preview.DryRun || preview.Result != nil || preview.Invocation.Operation != commands.OpCheckpoint || preview.Invocation.Title != "before review" {
		t.Fatalf("dry run: %+v, %v; want the checkpoint invocation, not carried out", preview, err)
	}
	if _, err := c.Command(ctx, id, client.CommandRequest{Text: "/frobnicate"}, true); !errors.Is(err, client.ErrInvalidField) || !strings.Contains(err.Error(), "want: one of: /checkpoint") {
		t.Errorf("dry run of an unknown command: %v, want the commands offered", err)
	}
	if n := count(); n != before {
		t.Fatalf("previews appended %d records, want none", n-before)
	}

	done, err := c.Command(ctx, id, client.CommandRequest{Text: "/checkpoint before review"}, false)
	if err != nil || done.Result == nil || done.Result.RecordType != string(eventstore.KindCheckpoint) || done.Result.Sequence == 0 {
		t.Fatalf("/checkpoint: %+v, %v; want a recorded checkpoint", done, err)
	}
	cps, err := c.Checkpoints(ctx, id)
	if err != nil || len(cps) == 0 || cps[len(cps)-1].CheckpointID != done.Result.ID || cps[len(cps)-1].StateSummary.Title != "before review" {
		t.Errorf("checkpoints %+v, %v; want %s titled before review", cps, err, done.Result.ID)
	}

	// A retry with the same id is the same invocation: nothing new.
	before = count()
	first, err := c.Command(ctx, id, client.CommandRequest{Text: "/verify", ID: "verify-1"}, false)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Command(ctx, id, client.CommandRequest{Text: "/verify", ID: "verify-1"}, false)
	if err != nil || again.Result.ID != first.Result.ID || again.Result.Sequence != first.Result.Sequence {
		t.Errorf("retried /verify: %+v, %v; want the first %+v", again.Result, err, first.Result)
	}
	if n := count(); n != before+1 {
		t.Errorf("/verify twice with one id appended %d records, want 1", n-before)
	}
	if _, err := c.Command(ctx, id, client.CommandRequest{Text: "/verify", ID: "no spaces"}, false); !errors.Is(err, client.ErrInvalidField) || !strings.Contains(err.Error(), "letters, digits") {
		t.Errorf("a bad id: %v, want it refused with what is accepted", err)
	}

	impact, err := c.Command(ctx, id, client.CommandRequest{Text: "/impact Launch"}, false)
	if err != nil || impact.Result == nil || !strings.Contains(impact.Result.Summary, "1 definitions") {
		t.Fatalf("/impact: %+v, %v", impact, err)
	}

	before = count()
	_, err = c.Command(ctx, id, client.CommandRequest{Text: "/blocked"}, false)
	if !errors.Is(err, client.ErrInvalidField) || !strings.Contains(err.Error(), "/blocked <reason>") || !strings.Contains(err.Error(), "recorded as diagnostic observation") {
		t.Fatalf("/blocked without a reason: %v, want the shape expected, recorded", err)
	}
	recs, _, err := c.Records(ctx, id, uint64(before)+1, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, rec := range recs {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil && o.Signal.Type == eventstore.SignalDiagnostic {
			d := o.Signal.Payload.(*eventstore.DiagnosticSignal)
			found = d.Code == runtime.DiagnosticCommandParseFailed && strings.Contains(d.Message, "/blocked <reason>")
		}
	}
	if !found {
		t.Errorf("records after the failure %+v: want a command-parse-failed diagnostic", recs)
	}

	// /blocked from the operator blocks the execution through the policy.
	if _, err := c.Command(ctx, id, client.CommandRequest{Text: "/blocked the staging database is down"}, false); err != nil {
		t.Fatal(err)
	}
	for ex, _ := c.Execution(ctx, id); ex.Attention != eventstore.AttentionBlocked; ex, _ = c.Execution(ctx, id) {
		if ctx.Err() != nil {
			t.Fatalf("attention %s after /blocked, want blocked", ex.Attention)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ex, err := c.Execution(ctx, id); err != nil || ex.Blocked == nil || ex.Blocked.Reason != "the staging database is down" {
		t.Errorf("blocked %+v, %v; want the operator's reason", ex.Blocked, err)
	}

	before = count()
	raw, err := c.Command(ctx, id, client.CommandRequest{Text: "/doctor", Focus: commands.FocusTerminal}, false)
	if err != nil || raw.Invocation.Category != commands.CategoryTerminalInput || raw.Result.Sequence != 0 {
		t.Fatalf("terminal input: %+v, %v", raw, err)
	}
	if _, err := c.Command(ctx, id, client.CommandRequest{Text: "/verify"}, false); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != before+1 {
		t.Errorf("terminal input then /verify appended %d records, want 1 (the owner effect)", n-before)
	}

	if _, err := c.Command(ctx, "ae-nope", client.CommandRequest{Text: "/verify"}, false); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("unknown execution: %v, want not found", err)
	}
	if _, err := c.Command(ctx, id, client.CommandRequest{Text: "/read ../../etc/passwd"}, false); !errors.Is(err, client.ErrInvalidField) || !strings.Contains(err.Error(), "leaves the working directory") {
		t.Errorf("/read outside the tree: %v", err)
	}

	v := servedValidator(t, s.HTTP.URL)
	for path, want := range map[string]int{
		"/v1/executions/" + id + "/commands":                 http.StatusOK,
		"/v1/executions/" + id + "/commands?prefix=/im":      http.StatusOK,
		"/v1/executions/" + id + "/commands?focus=terminal":  http.StatusOK,
		"/v1/executions/" + id + "/commands?focus=elsewhere": http.StatusBadRequest,
		"/v1/executions/nope/commands":                       http.StatusNotFound,
	} {
		if code, _, data := validatedGet(t, v, s.HTTP.URL, path); code != want {
			t.Errorf("GET %s → %d %s, want %d", path, code, data, want)
		}
	}
}

// TestCommandsOfferWhatTheAgentAdvertised: the slash commands of Claude
// Code's init line (a real capture) reach the read model, and the
// completions route offers them as adapter-scoped commands of claude-code.
func TestCommandsOfferWhatTheAgentAdvertised(t *testing.T) {
	t.Parallel()
	s, c, ctx := startClient(t, apitest.Options{})
	id := launchRun(t, ctx, c, todoLaunch(t, s, "t-adv", "go"))
	waitFinal(t, ctx, c, id, "the run never ended")
	cs, err := c.Commands(ctx, id, "/sec", "")
	if err != nil || len(cs) != 1 || cs[0].Label != "/security-review" || cs[0].Portability != eventstore.PortabilityAdapterScoped || cs[0].AdapterID != "claude-code" {
		t.Fatalf("completions of /sec: %+v, %v; want /security-review, adapter-scoped of claude-code", cs, err)
	}
	preview, err := c.Command(ctx, id, client.CommandRequest{Text: "/security-review the last commit"}, true)
	if err != nil || preview.Invocation.Category != commands.CategoryAgentMessage || preview.Invocation.MessageType != "security-review" {
		t.Fatalf("preview: %+v, %v; want an adapter-scoped message", preview, err)
	}
}
