package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/commands"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures/modelserver"
	"github.com/agentjournal/agentjournal/fixtures/realagent"
	"github.com/agentjournal/agentjournal/terminal"
)

// invoke resolves text against the execution as its journal says it is,
// and carries it out.
func invoke(t *testing.T, r *rig, ref eventstore.Reference, text string, focus commands.Focus) (runtime.InvokeResult, error) {
	t.Helper()
	inv, err := commands.Resolve(commands.ViewOf(r.replay(t, ref)), text, focus)
	if err != nil {
		t.Fatalf("resolve %q: %v", text, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return r.rt.Invoke(ctx, ref.AgentExecutionID, inv, "")
}

// recordAt returns the journal record at seq.
func recordAt(t *testing.T, r *rig, ref eventstore.Reference, seq uint64) eventstore.Record {
	t.Helper()
	for _, rec := range r.records(t, ref) {
		if rec.RecordBase().Sequence == seq {
			return rec
		}
	}
	t.Fatalf("no record at sequence %d", seq)
	return nil
}

// TestMissionNativeCommandsReachTheirEffects: each Mission-native command
// is recorded the way its target is, terminal input is never journaled and
// a parse failure the operator saw is a diagnostic observation.
func TestMissionNativeCommandsReachTheirEffects(t *testing.T) {
	r := storeRig(t, runtime.Config{StopGrace: time.Second, Snapshots: true, Terminals: terminal.NewRegistry(nil),
		RecordingDir: filepath.Join(t.TempDir(), "recordings")})
	rt := r.rt
	dir := fixtures.GitRepo(t, map[string]string{"widget.go": "package w\n\nfunc Widget() int { return 1 }\n", "use.go": "package w\n\nvar x = Widget()\n"})
	ref, err := rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-cmd",
		Agent: "generic", Posture: eventstore.PostureStructuredInteractive, Command: []string{r.agent, "wait"}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Stop(context.Background(), ref.AgentExecutionID) })
	id := ref.AgentExecutionID

	res, err := invoke(t, r, ref, "/checkpoint before the change", commands.FocusPrompt)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := recordAt(t, r, ref, res.Sequence).(*eventstore.CheckpointCreated); !ok || c.Source != eventstore.SourceOperator || c.StateSummary.Title != "before the change" {
		t.Errorf("/checkpoint recorded %+v, want an operator checkpoint titled %q", recordAt(t, r, ref, res.Sequence), "before the change")
	}

	res, err = invoke(t, r, ref, "/blocked the staging database is down", commands.FocusPrompt)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := recordAt(t, r, ref, res.Sequence).(*eventstore.Observation)
	if b, isBlocked := signalOf[*eventstore.BlockedSignal](o); !ok || !isBlocked || b.Reason != "the staging database is down" || o.Payload["from"] != "operator" {
		t.Errorf("/blocked recorded %+v, want a blocked observation from the operator", o)
	}

	res, err = invoke(t, r, ref, "/verify", commands.FocusPrompt)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := recordAt(t, r, ref, res.Sequence).(*eventstore.OwnerEffect); !ok || e.EffectType != runtime.EffectVerificationRequested || e.OwnerEntity != eventstore.OwnerTask {
		t.Errorf("/verify recorded %+v, want an owner effect %s of the Task", recordAt(t, r, ref, res.Sequence), runtime.EffectVerificationRequested)
	}

	res, err = invoke(t, r, ref, "/read widget.go", commands.FocusPrompt)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := recordAt(t, r, ref, res.Sequence).(*eventstore.MessageAccepted)
	var payload struct {
		Text    string         `json:"text"`
		Context map[string]any `json:"context"`
	}
	if ok {
		json.Unmarshal(m.Payload, &payload)
	}
	if !ok || !m.MutatesContext || m.Source != eventstore.SourceOperator || !strings.Contains(payload.Text, "func Widget() int") || payload.Context["path"] != "widget.go" {
		t.Errorf("/read recorded %+v (payload %+v), want a context message carrying widget.go", m, payload)
	}

	// The daemon checks where a path really leads and how big it is.
	if err := os.Symlink("/etc/hostname", filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(strings.Repeat("x", runtime.MaxContextFile+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]string{
		"/attach escape":  "leads outside the working directory",
		"/attach big.txt": "want at most",
		"/attach nope.go": "no such file",
		"/read .git":      "not a regular file",
	} {
		if _, err := invoke(t, r, ref, text, commands.FocusPrompt); !errors.Is(err, runtime.ErrBadCommand) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want ErrBadCommand saying %q", text, err, want)
		}
	}
	os.Remove(filepath.Join(dir, "big.txt"))
	os.Remove(filepath.Join(dir, "escape"))

	// Change the work tree: one file edited, one added.
	fixtures.WriteFiles(t, dir, map[string]string{"use.go": "package w\n\nvar x = Widget()\nvar y = Widget()\n", "new.txt": "new\n"})
	res, err = invoke(t, r, ref, "/summarize-diff", commands.FocusPrompt)
	if err != nil {
		t.Fatal(err)
	}
	o, _ = recordAt(t, r, ref, res.Sequence).(*eventstore.Observation)
	if o == nil || o.Source != eventstore.ObservedDaemon || o.Payload["operation"] != commands.OpSummarizeDiff ||
		!strings.HasPrefix(o.Payload["base"].(string), "refs/agentjournal/") || !strings.Contains(o.RawText, "2 files changed") || !strings.Contains(o.RawText, "+1") {
		t.Errorf("/summarize-diff recorded %+v, want a daemon observation of 2 files changed (+1) since the start snapshot", o)
	}

	res, err = invoke(t, r, ref, "/impact w.Widget", commands.FocusPrompt)
	if err != nil {
		t.Fatal(err)
	}
	o, _ = recordAt(t, r, ref, res.Sequence).(*eventstore.Observation)
	js, _ := json.Marshal(o)
	if o == nil || !strings.Contains(o.RawText, "1 definitions, 2 uses in 2 files") || !strings.Contains(string(js), `"line":3,"path":"widget.go"`) {
		t.Errorf("/impact recorded %s, want the definition in widget.go:3 and 2 uses", js)
	}

	// Terminal input reaches the lane, never the journal: the next
	// journaled command follows the last record directly.
	last := res.Sequence
	res, err = invoke(t, r, ref, "/doctor", commands.FocusTerminal)
	if err != nil || res.Sequence != 0 {
		t.Fatalf("terminal input: %+v, %v; want no journal sequence", res, err)
	}
	res, err = invoke(t, r, ref, "/verify", commands.FocusPrompt)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range r.records(t, ref) {
		if seq := rec.RecordBase().Sequence; seq > last && seq < res.Sequence {
			if _, snap := rec.(*eventstore.SnapshotCreated); !snap {
				t.Errorf("record %d (%s) appended between the command before the terminal input and the one after", seq, rec.RecordBase().Type)
			}
		}
		if strings.Contains(string(must(json.Marshal(rec))), "/doctor") {
			t.Errorf("the journal holds the terminal input: %T at %d", rec, rec.RecordBase().Sequence)
		}
	}

	// A parse failure the operator saw is a diagnostic observation.
	_, perr := commands.Resolve(commands.ViewOf(r.replay(t, ref)), "/impact", commands.FocusPrompt)
	var pe *commands.ParseError
	if !errors.As(perr, &pe) {
		t.Fatalf("/impact without a symbol: %v, want a parse error", perr)
	}
	res, err = rt.RecordCommandFailure(context.Background(), id, pe)
	if err != nil {
		t.Fatal(err)
	}
	o, _ = recordAt(t, r, ref, res.Sequence).(*eventstore.Observation)
	if d, ok := signalOf[*eventstore.DiagnosticSignal](o); !ok || d.Code != runtime.DiagnosticCommandParseFailed || !strings.Contains(d.Message, "/impact <symbol>") {
		t.Errorf("parse failure recorded %+v, want a diagnostic naming the expected shape", o)
	}
}

// signalOf returns the observation's signal payload as a T.
func signalOf[T eventstore.SignalPayload](o *eventstore.Observation) (T, bool) {
	var zero T
	if o == nil || o.Signal == nil {
		return zero, false
	}
	p, ok := o.Signal.Payload.(T)
	return p, ok
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestClaudeAdvertisedCommandsAreAdapterScoped: the slash commands of
// Claude Code's init line (a real capture) are recorded once as
// adapter-scoped descriptors of claude-code; resolution and completions
// see them after the Mission-native and cross-agent ones; a provider
// command it did not advertise stays terminal-only.
func TestClaudeAdvertisedCommandsAreAdapterScoped(t *testing.T) {
	r := newRig(t, time.Second)
	capture, err := filepath.Abs(filepath.Join("claude", "testdata", "real", "todo.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-adv",
		Agent: "claude-code", Command: []string{r.agent, "replay:" + capture}, Prompt: "go", Shape: eventstore.ShapeOneShot})
	if err != nil {
		t.Fatal(err)
	}
	st := r.wait(t, ref)
	var adv []*eventstore.Observation
	for _, rec := range r.records(t, ref) {
		if o, ok := rec.(*eventstore.Observation); ok && o.Payload[execution.AdvertisedCommandsKey] != nil {
			adv = append(adv, o)
		}
	}
	if len(adv) != 1 || adv[0].Source != eventstore.ObservedProviderOutput {
		t.Fatalf("%d advertised-commands observations (%+v), want one from provider output", len(adv), adv)
	}
	// 44 advertised; __remote-workflow is no name a command can have.
	if len(st.AdvertisedMessages) != 43 || slices.ContainsFunc(st.AdvertisedMessages, func(d eventstore.MessageDescriptor) bool { return d.Type == "__remote-workflow" }) {
		t.Fatalf("state has %d advertised descriptors, want the 43 of 44 that are command names", len(st.AdvertisedMessages))
	}
	for _, d := range st.AdvertisedMessages {
		if d.Portability != eventstore.PortabilityAdapterScoped || d.AdapterID != "claude-code" || d.Label != "/"+d.Type {
			t.Fatalf("advertised descriptor %+v, want adapter-scoped of claude-code", d)
		}
	}
	v := commands.ViewOf(st)
	labels := map[string]commands.Completion{}
	for _, c := range commands.Complete(v, "/", commands.FocusPrompt) {
		labels[c.Label] = c
	}
	if c := labels["/context"]; c.Portability != eventstore.PortabilityAdapterScoped || c.AdapterID != "claude-code" {
		t.Errorf("/context completion %+v, want adapter-scoped of claude-code", c)
	}
	// /verify is advertised by Claude Code too, but the Mission-native one
	// comes first in resolution order.
	if c := labels["/verify"]; c.Portability != eventstore.PortabilityMissionNative {
		t.Errorf("/verify completion %+v, want the Mission-native one", c)
	}
	inv, err := commands.Resolve(v, "/security-review the diff", commands.FocusPrompt)
	if err != nil || inv.Category != commands.CategoryAgentMessage || inv.Portability != eventstore.PortabilityAdapterScoped || inv.MessageType != "security-review" {
		t.Errorf("/security-review resolved to %+v, %v; want an adapter-scoped message", inv, err)
	}
	// Sent to the ended run: accepted against the advertised descriptor,
	// its delivery failed.
	res, err := r.rt.Invoke(context.Background(), ref.AgentExecutionID, inv, "")
	if err != nil || res.Message == nil || res.Message.Delivery != eventstore.DeliveryFailed {
		t.Errorf("invoke /security-review: %+v, %v; want accepted, delivery failed", res, err)
	}
	if _, err := commands.Resolve(v, "/not-a-claude-command", commands.FocusPrompt); err == nil {
		t.Error("an unadvertised provider command resolved in the prompt box, want a parse error")
	}
}

// TestACPAdvertisedCommandsOfARealAdapter: Claude Code through its ACP
// adapter (claude-code-acp, as fixtures/realagent pins it), driven by the
// scripted model server, sends available_commands_update; the journal
// records the commands as adapter-scoped descriptors of claude-code-acp,
// which completions offer.
func TestACPAdvertisedCommandsOfARealAdapter(t *testing.T) {
	srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{{Text: "Done.", Usage: modelserver.Usage{InputTokens: 10, OutputTokens: 2}}}})
	r := newRig(t, 5*time.Second)
	ref := r.launchReal(t, "claude-code-acp", "claude-code-acp", realagent.ClaudeEnv(t, srv.URL()), t.TempDir(), "Say done")
	r.awaitReal(t, ref, srv, "advertised commands", func() bool { return len(r.replay(t, ref).AdvertisedMessages) > 0 })
	st := r.replay(t, ref)
	for _, d := range st.AdvertisedMessages {
		if d.Portability != eventstore.PortabilityAdapterScoped || d.AdapterID != "claude-code-acp" {
			t.Fatalf("advertised descriptor %+v, want adapter-scoped of claude-code-acp", d)
		}
	}
	offered := 0
	for _, c := range commands.Complete(commands.ViewOf(st), "/", commands.FocusPrompt) {
		if c.Portability == eventstore.PortabilityAdapterScoped && c.AdapterID == "claude-code-acp" {
			offered++
		}
	}
	if offered == 0 {
		t.Errorf("completions offer none of the %d advertised commands", len(st.AdvertisedMessages))
	}
	t.Logf("claude-code-acp advertised %d commands", len(st.AdvertisedMessages))
}
