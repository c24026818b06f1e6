package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/journalfile"
	"github.com/agentjournal/agentjournal/policy"
)

// DemoCommand writes an example journal: one Claude Code execution that is
// asked to fix a failing test, asks the operator a question, gets the answer
// and claims completion.
type DemoCommand struct {
	env *Env
	// now is the clock; time.Now when nil.
	now func() time.Time
}

var demoSpec = cmdSpec{
	Name: "demo",
	Args: "[--owner ENTITY/ID] [--seed S] [--json]",
	Summary: `Write a realistic journal for one agent execution and print it: the header
with the launch contract, lifecycle changes, an operator prompt and its
delivery, agent signals (status, progress, usage, a message, a question for
the operator) with the policy's decision on each, the operator's answer,
activity and token telemetry, and a completion claim.

The execution id is derived from the owner and the seed. Each run without
--seed makes a new execution; running again with the same --seed writes
nothing new.`,
	Example: "agentjournal demo\nagentjournal demo --owner Mission/m-42 --seed first --json",
}

// Run implements Command.
func (c *DemoCommand) Run(ctx context.Context, args []string) error {
	fs := demoSpec.newFlagSet()
	owner := fs.String("owner", "Task/demo-task", "the owning `ENTITY/ID`; ENTITY is one of "+ownerEntityList())
	seed := fs.String("seed", "", "derive the execution id from `S` (default: the current time, a new execution each run)")
	asJSON := fs.Bool("json", false, "print the stored record JSON, one per line")
	if err := demoSpec.parseNone(fs, args, "demo takes only flags"); err != nil {
		return err
	}
	entity, ownerID, ok := strings.Cut(*owner, "/")
	ownerEntity, err := eventstore.ParseOwnerEntity(entity)
	if !ok || ownerID == "" || err != nil {
		return demoSpec.usageErr(fs, "--owner %q: want ENTITY/ID with ENTITY one of %s, e.g. Task/demo-task", *owner, ownerEntityList())
	}
	now := time.Now
	if c.now != nil {
		now = c.now
	}
	if *seed == "" {
		*seed = now().UTC().Format(time.RFC3339Nano)
	}
	execID, err := eventstore.NewAgentExecutionID(ownerEntity, ownerID, *seed)
	if err != nil {
		return demoSpec.usageErr(fs, "--owner %q: %v", *owner, err)
	}
	ref, err := eventstore.NewReference(ownerEntity, ownerID, execID)
	if err != nil {
		return demoSpec.usageErr(fs, "--owner %q: %v", *owner, err)
	}

	return c.env.withJournals(ctx, func(s eventstore.Store) error {
		written, err := writeDemo(ctx, s, ref, demoRecords(ref, now().UTC()))
		if err != nil {
			return err
		}
		if err := printJournal(c.env.Stdout, s.ReadJournal(ctx, ref, 1), *asJSON); err != nil {
			return err
		}
		hint := c.env.Stdout
		if *asJSON {
			hint = c.env.Stderr // keep stdout pure JSON lines
		}
		what := fmt.Sprintf("Wrote %d records", written)
		if written == 0 {
			what = "Nothing new to write"
		}
		_, err = fmt.Fprintf(hint, "%s for agent execution %s; view its journal again with: %s journal cat %s\n",
			what, execID, c.env.hintPrefix(), execID)
		return err
	})
}

func ownerEntityList() string {
	names := make([]string, len(eventstore.OwnerEntities))
	for i, o := range eventstore.OwnerEntities {
		names[i] = string(o)
	}
	return strings.Join(names, ", ")
}

// writeDemo ensures the journal with the header (records[0]) and appends the
// records not stored yet, so a rerun with the same seed writes nothing, even
// after the log's duplicate window has passed. It returns how many records
// it wrote. Through a daemon the demo journal, whole and with the policy's
// decisions in it, is imported: the daemon takes no single appends, and
// its import writes what is not stored yet just as well.
func writeDemo(ctx context.Context, s eventstore.Store, ref eventstore.Reference, records []eventstore.Record) (int, error) {
	// No launch on this log made it: marked as an import marks a journal
	// (journalfile.MarkImported), whichever way it is written.
	records = journalfile.MarkImported(records)
	if im, ok := s.(journalImporter); ok {
		res, err := im.ImportJournal(ctx, records)
		return res.Written, err
	}
	stored := map[string]bool{}
	for e, err := range s.ReadJournal(ctx, ref, 1) {
		if errors.Is(err, eventstore.ErrJournalNotFound) {
			break
		}
		if err != nil {
			return 0, err
		}
		stored[e.Record.RecordBase().RecordID] = true
	}
	written := 0
	for _, r := range records {
		if stored[r.RecordBase().RecordID] {
			continue
		}
		var err error
		if h, ok := r.(*eventstore.Header); ok {
			_, err = s.EnsureJournal(ctx, ref, h)
		} else {
			_, err = s.Append(ctx, ref, r)
		}
		if err != nil {
			return written, err
		}
		written++
	}
	return written, nil
}

// demoRecords builds the demo journal. Every record id is fixed by the
// journal and the record's key, so the same execution always gets the same
// records; the times are spread over the minutes before now.
func demoRecords(ref eventstore.Reference, now time.Time) []eventstore.Record {
	b := demoBuilder{ref: ref, at: now.Add(-4 * time.Minute).Truncate(time.Millisecond)}
	cwd, err := os.Getwd()
	if err != nil {
		cwd = "/home/operator/src/shop-api"
	}

	b.add(0, &eventstore.Header{
		// Filled in as the store fills it: the journal is whole, ready to
		// be imported as well as appended.
		JournalKind: "agent-execution-interaction-journal",
		AgentID:     "claude-code",
		ProtocolDescriptor: eventstore.ProtocolDescriptor{
			Posture: eventstore.PostureStructuredInteractive,
			Messages: []eventstore.MessageDescriptor{
				{Type: "prompt", Label: "Prompt", Description: "Send the agent a prompt; it becomes part of the conversation.",
					Delivery: eventstore.DeliveryRequired, MutatesContext: true, Portability: eventstore.PortabilityCrossAgent},
				{Type: "interrupt", Label: "Interrupt", Description: "Stop the current turn.",
					Delivery: eventstore.DeliveryBestEffort, Portability: eventstore.PortabilityCrossAgent},
				{Type: "continue", Label: "Continue", Description: "Resume after an interruption.",
					Delivery: eventstore.DeliveryRequired, Portability: eventstore.PortabilityCrossAgent},
				{Type: "compact", Label: "Compact", Description: "Summarize the conversation to free context (/compact).",
					Delivery: eventstore.DeliveryRequired, MutatesContext: true, Portability: eventstore.PortabilityAdapterScoped, AdapterID: "claude-code"},
			},
			Signals:          eventstore.SurfacedSignalTypes(),
			SignalTransports: []eventstore.SignalTransport{eventstore.SignalViaMCP, eventstore.SignalViaStdoutMarker},
		},
		TransportState:   &eventstore.TransportState{StructuredLane: eventstore.LaneStdio, MCPAvailable: true},
		WorkingDirectory: cwd,
	})
	b.state(200*time.Millisecond, &eventstore.StateChanged{Lifecycle: eventstore.LifecycleStarting, Reason: "launch accepted"})
	b.state(1500*time.Millisecond, &eventstore.StateChanged{Lifecycle: eventstore.LifecycleRunning,
		Attention: eventstore.AttentionAutonomous, Activity: eventstore.ActivityIdle, Reason: "process started"})

	b.message(2*time.Second, "msg-1", map[string]any{
		"text": "The login test in auth/login_test.go fails on main. Find out why and fix it.",
	})

	b.observe(6*time.Second, "obs-1", eventstore.ObservedMCP, &eventstore.StatusSignal{
		Summary: "Investigating the failing login test", Phase: "planning"})
	b.decide(100 * time.Millisecond)

	b.observe(14*time.Second, "obs-2", eventstore.ObservedMCP, &eventstore.ProgressSignal{
		Summary: "Read auth/login.go and auth/login_test.go", Units: count(2, 5, "files")})
	b.decide(100 * time.Millisecond)

	b.observe(3*time.Second, "obs-3", eventstore.ObservedProviderOutput, &eventstore.UsageSignal{
		InputTokens: ptr(int64(18452)), OutputTokens: ptr(int64(1204)), Cumulative: true})
	b.decide(100 * time.Millisecond)

	b.observe(9*time.Second, "obs-4", eventstore.ObservedMCP, &eventstore.MessageSignal{
		Text: "The test expects 401 for an expired session, but the handler returns 403 since commit 9f2c1e4."})
	b.decide(100 * time.Millisecond)

	b.observe(2*time.Second, "obs-5", eventstore.ObservedMCP, &eventstore.NeedsInputSignal{
		RequestID: "req-1", Question: "Should an expired session get 401 (as the test says) or 403 (as the handler does)?",
		Choices: []string{"401: fix the handler", "403: update the test"}})
	b.decide(100 * time.Millisecond)

	b.message(47*time.Second, "msg-2", map[string]any{
		"requestId": "req-1",
		"text":      "401: the test is right. Fix the handler and keep the 403 for locked accounts.",
	})
	b.decide(300 * time.Millisecond)

	b.activity(11*time.Second, &eventstore.ActivityUpdated{Activity: eventstore.ActivityEditing,
		CurrentTarget: &eventstore.Target{Kind: eventstore.TargetFile, Path: "auth/login.go"},
		Telemetry: &eventstore.Telemetry{InputTokens: ptr(int64(24310)), OutputTokens: ptr(int64(2877)),
			TotalTokens: ptr(int64(27187)), ActiveToolName: "Edit"},
		Capabilities: &eventstore.Capabilities{ToolCallActive: ptr(true), FilesystemMutating: ptr(true)}})
	b.activity(19*time.Second, &eventstore.ActivityUpdated{Activity: eventstore.ActivityTesting,
		CurrentTarget: &eventstore.Target{Kind: eventstore.TargetCommand, Label: "go test ./auth/..."},
		Progress:      &eventstore.Progress{Summary: "Running the auth tests"},
		Telemetry:     &eventstore.Telemetry{InputTokens: ptr(int64(26018)), OutputTokens: ptr(int64(3140)), ActiveToolName: "Bash"}})

	b.observe(21*time.Second, "obs-6", eventstore.ObservedMCP, &eventstore.CompletedClaimSignal{
		Summary:  "Expired sessions get 401 again; locked accounts keep 403. go test ./auth/... passes.",
		Evidence: []string{"auth/login.go", "go test ./auth/... (ok, 14 tests)"}})
	b.decide(100 * time.Millisecond)
	// The agent exits after its claim, as the runtime records it.
	b.state(2*time.Second, &eventstore.StateChanged{Lifecycle: eventstore.LifecycleCompleted,
		Attention: eventstore.AttentionNone, Activity: eventstore.ActivityIdle, Reason: "exit status 0"})
	return b.records
}

// demoBuilder accumulates demo records with ids and times.
type demoBuilder struct {
	ref     eventstore.Reference
	at      time.Time
	n       int // counter for the keys of records without a natural one
	records []eventstore.Record
	// st is the journal's state after records, which the policy decides on.
	st execution.State
}

// add stamps r with the time after elapsed and its record id, and appends
// it. The id comes from the record's natural key, as the store would derive
// it, or from "demo-<n>" for the kinds that have none; either way it is the
// same whenever the same journal is built again.
func (b *demoBuilder) add(elapsed time.Duration, r eventstore.Record) {
	b.at = b.at.Add(elapsed)
	base := r.RecordBase()
	base.OccurredAt = b.at
	base.Sequence = uint64(len(b.records) + 1)
	base.JournalID, base.AgentExecutionID, base.OwnerID, base.Scope = b.ref.JournalID, b.ref.AgentExecutionID, b.ref.OwnerID, b.ref.OwnerEntity
	if base.RecordID == "" {
		key := eventstore.NaturalKey(r)
		if key == "" {
			b.n++
			key = "demo-" + strconv.Itoa(b.n)
		}
		base.RecordID = eventstore.RecordID(b.ref.JournalID, r.Kind(), key)
	}
	b.records = append(b.records, r)
	if _, err := b.st.Apply(r); err != nil {
		panic(fmt.Sprintf("demo record %d (%s) does not fold: %v", base.Sequence, r.Kind(), err))
	}
}

func (b *demoBuilder) state(elapsed time.Duration, r *eventstore.StateChanged) { b.add(elapsed, r) }

func (b *demoBuilder) activity(elapsed time.Duration, r *eventstore.ActivityUpdated) {
	b.add(elapsed, r)
}

// message adds an operator prompt and its delivery.
func (b *demoBuilder) message(elapsed time.Duration, id string, payload map[string]any) {
	data, _ := json.Marshal(payload)
	b.add(elapsed, &eventstore.MessageAccepted{MessageID: id, Source: eventstore.SourceOperator,
		MessageType: "prompt", Payload: data, MutatesContext: true})
	b.add(400*time.Millisecond, &eventstore.MessageDelivery{MessageID: id,
		Status: eventstore.DeliveryDelivered, Transport: eventstore.TransportAgentMessage})
}

func (b *demoBuilder) observe(elapsed time.Duration, id string, source eventstore.ObservationSource, p eventstore.SignalPayload) {
	confidence := eventstore.ConfidenceAuthoritative
	if source == eventstore.ObservedProviderOutput {
		confidence = eventstore.ConfidenceHigh
	}
	b.add(elapsed, &eventstore.Observation{ObservationID: id, Source: source, Confidence: confidence,
		Signal: eventstore.NewSignal(p)})
}

// decide adds what the policy decides on the last observation or answer, and the records that carry the decision out, exactly as the
// daemon's policy would append them: a daemon started on the demo's log
// finds every decision complete and adds nothing.
func (b *demoBuilder) decide(elapsed time.Duration) {
	var out policy.Outcome
	for i := len(b.records) - 1; out.Decision == nil; i-- {
		switch r := b.records[i].(type) {
		case *eventstore.Observation:
			out = policy.Decide(&b.st, r)
		case *eventstore.MessageAccepted:
			out, _ = policy.DecideMessage(&b.st, r)
		}
	}
	b.add(elapsed, out.Decision)
	for _, r := range out.Records {
		b.add(50*time.Millisecond, r)
	}
}

func count(done, total int64, unit string) *eventstore.Units {
	return &eventstore.Units{Completed: &done, Total: &total, Unit: unit}
}

func ptr[T any](v T) *T { return &v }
