package transcript

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

// Entry is one entry of a transcript. Its JSON form is the API's, so the
// type is declared once, in api/wire.
type Entry = wire.TranscriptEntry

// Builder turns an execution's records, in journal order, into entries.
// It keeps what a later record needs from an earlier one: a tool call's
// start for its end, the tokens and start of the turn under way, the last
// plan and message. Its zero value is ready to use; it is not safe for
// concurrent use.
type Builder struct {
	// calls are the tool calls started and not yet ended, by id.
	calls map[string]callStart
	// order is the ids of calls in the order they started, so that
	// Close tells the open ones in that order.
	order []string
	// launched is the header's time; turnStart the current turn's.
	launched, turnStart time.Time
	// usage is the execution's tokens so far; turnUsage their value when
	// the current turn started.
	usage, turnUsage execution.Usage
	// plan is the last plan told, so that a plan sent again unchanged
	// is not told twice.
	plan string
	// lastMessage is the agent's last message: a completion claim that
	// repeats it (Claude Code, Codex and Copilot claim their final
	// message) says nothing new.
	lastMessage string
	ended       bool
}

type callStart struct {
	at     time.Time
	name   string
	target string
	seq    uint64
}

// turnReason matches the reason of the state change that ends a turn of a
// conversation, as the runtime writes it (runtime/output.go).
var turnReason = regexp.MustCompile(`^turn (\d+) (ended|failed)(?:: (.*?))?; waiting for the next message$`)

// turnStarted matches the reason of the state change that starts a turn.
var turnStarted = regexp.MustCompile(`^turn \d+ started\b`)

// Add returns the entries r adds to the transcript: none for a record that
// tells a reader nothing (a delivery, a decision, a heartbeat, a tool
// call's start, which is told with its end).
func (b *Builder) Add(r eventstore.Record) []Entry {
	base := r.RecordBase()
	entry := func(kind wire.TranscriptKind) Entry {
		return Entry{Kind: kind, Sequence: base.Sequence, OccurredAt: base.OccurredAt}
	}
	switch r := r.(type) {
	case *eventstore.Header:
		b.launched, b.turnStart = r.OccurredAt, r.OccurredAt
	case *eventstore.MessageAccepted:
		return b.message(r, entry)
	case *eventstore.Observation:
		return b.observation(r, entry)
	case *eventstore.ActivityUpdated:
		return b.activity(r, entry)
	case *eventstore.StateChanged:
		return b.state(r, entry)
	case *eventstore.Interruption:
		e := entry(wire.TranscriptNote)
		e.Text = eventstore.TimelineText(r)
		return []Entry{e}
	case *eventstore.MessageDelivery:
		// A delivery that went through is the expected; one that did not
		// explains why the agent never saw a prompt or an answer.
		if r.Status == eventstore.DeliveryFailed {
			e := entry(wire.TranscriptNote)
			e.Text = "message " + r.MessageID + " was not delivered"
			if r.Reason != "" {
				e.Text += ": " + r.Reason
			}
			return []Entry{e}
		}
	}
	return nil
}

func (b *Builder) message(m *eventstore.MessageAccepted, entry func(wire.TranscriptKind) Entry) []Entry {
	text, err := m.Text()
	if err != nil {
		// A message without words (an interrupt's {"hard": true}) is
		// told by its type and sender.
		e := entry(wire.TranscriptNote)
		e.Source, e.Text = m.Source, string(m.Source)+" sent "+m.MessageType
		return []Entry{e}
	}
	kind := wire.TranscriptPrompt
	if id, _ := m.RequestID(); id != "" || m.MessageType == "answer" {
		kind = wire.TranscriptAnswer
	}
	e := entry(kind)
	e.Source, e.Text = m.Source, text
	return []Entry{e}
}

func (b *Builder) observation(o *eventstore.Observation, entry func(wire.TranscriptKind) Entry) []Entry {
	if o.Signal == nil {
		return nil
	}
	switch p := o.Signal.Payload.(type) {
	case *eventstore.MessageSignal:
		b.lastMessage = strings.TrimSpace(p.Text)
		e := entry(wire.TranscriptMessage)
		e.Text, e.Markdown = p.Text, p.Format == "markdown"
		return []Entry{e}
	case *eventstore.PlanSignal:
		key := planKey(p.Items)
		if key == b.plan {
			return nil
		}
		b.plan = key
		e := entry(wire.TranscriptPlan)
		e.Plan = p.Items
		if e.Plan == nil {
			e.Plan = []eventstore.PlanItem{}
		}
		return []Entry{e}
	case *eventstore.NeedsInputSignal:
		e := entry(wire.TranscriptQuestion)
		q := &wire.TranscriptQuestionAsked{RequestID: p.RequestID, Question: p.Question, Choices: p.Choices,
			Permission: p.Kind == string(eventstore.InputPermission)}
		if p.Tool != nil {
			q.Tool = p.Tool.Name
		}
		e.Question = q
		return []Entry{e}
	case *eventstore.UsageSignal:
		b.usage = b.usage.Add(p)
		return nil
	case *eventstore.CompletedClaimSignal:
		if strings.TrimSpace(p.Summary) == b.lastMessage && len(p.Evidence) == 0 {
			return nil
		}
	case *eventstore.BlockedSignal, *eventstore.FailedClaimSignal, *eventstore.ReadyForVerificationSignal, *eventstore.StatusSignal:
	default:
		// Progress, diagnostics and checkpoints are the journal's
		// bookkeeping, not the conversation.
		return nil
	}
	e := entry(wire.TranscriptNote)
	e.Text = eventstore.TimelineText(o)
	return []Entry{e}
}

func (b *Builder) activity(a *eventstore.ActivityUpdated, entry func(wire.TranscriptKind) Entry) []Entry {
	c := a.ToolCall
	if c == nil {
		return nil
	}
	if c.Status == eventstore.ToolCallStarted {
		if b.calls == nil {
			b.calls = map[string]callStart{}
		}
		if _, ok := b.calls[c.ID]; !ok {
			b.order = append(b.order, c.ID)
		}
		b.calls[c.ID] = callStart{at: a.OccurredAt, name: c.Name, target: target(a.CurrentTarget), seq: a.Sequence}
		return nil
	}
	call := &wire.TranscriptToolCall{ID: c.ID, Name: c.Name, Status: c.Status, Error: c.Error, ExitCode: c.ExitCode,
		Output: c.Output, OutputBytes: c.OutputBytes, Target: target(a.CurrentTarget)}
	if start, ok := b.calls[c.ID]; ok {
		if call.Target == "" {
			call.Target = start.target
		}
		call.DurationMs = a.OccurredAt.Sub(start.at).Milliseconds()
		b.forget(c.ID)
	}
	e := entry(wire.TranscriptTool)
	e.Tool = call
	return []Entry{e}
}

func (b *Builder) forget(id string) {
	delete(b.calls, id)
	for i, o := range b.order {
		if o == id {
			b.order = append(b.order[:i], b.order[i+1:]...)
			break
		}
	}
}

func (b *Builder) state(s *eventstore.StateChanged, entry func(wire.TranscriptKind) Entry) []Entry {
	if turnStarted.MatchString(s.Reason) {
		b.turnStart, b.turnUsage = s.OccurredAt, b.usage
		return nil
	}
	if m := turnReason.FindStringSubmatch(s.Reason); m != nil {
		n, _ := strconv.Atoi(m[1])
		e := entry(wire.TranscriptTurn)
		e.Turn = &wire.TranscriptTurnEnded{Number: n, Failed: m[2] == "failed", Reason: m[3],
			Tokens: since(b.turnUsage, b.usage), DurationMs: elapsed(b.turnStart, s.OccurredAt)}
		b.turnStart, b.turnUsage = s.OccurredAt, b.usage
		return []Entry{e}
	}
	if !s.Lifecycle.Final() || b.ended {
		return nil
	}
	b.ended = true
	// The calls still open ended with the execution: told before its end.
	out := b.Close()
	e := entry(wire.TranscriptEnd)
	e.End = &wire.TranscriptExecutionEnd{Lifecycle: s.Lifecycle, Reason: s.Reason, Tokens: b.usage,
		DurationMs: elapsed(b.launched, s.OccurredAt)}
	return append(out, e)
}

// Close returns the tool calls that started and have not ended, each as
// an entry with status started, in the order they started: the
// transcript ends before they do (an execution stopped during a call, or a
// journal read while the call runs).
func (b *Builder) Close() []Entry {
	var out []Entry
	for _, id := range b.order {
		start := b.calls[id]
		out = append(out, Entry{Kind: wire.TranscriptTool, Sequence: start.seq, OccurredAt: start.at,
			Tool: &wire.TranscriptToolCall{ID: id, Name: start.name, Target: start.target, Status: eventstore.ToolCallStarted}})
	}
	b.calls, b.order = nil, nil
	return out
}

// Entries builds the whole transcript of records, the open tool calls
// last.
func Entries(records []eventstore.Record) []Entry {
	var b Builder
	out := []Entry{}
	for _, r := range records {
		out = append(out, b.Add(r)...)
	}
	return append(out, b.Close()...)
}

// target names what a tool call works on: a command, a file, a tool.
func target(t *eventstore.Target) string {
	if t == nil {
		return ""
	}
	if t.Path != "" {
		return t.Path
	}
	return t.Label
}

func planKey(items []eventstore.PlanItem) string {
	var b strings.Builder
	for _, it := range items {
		b.WriteString(string(it.Status) + "\x00" + it.Text + "\x00")
	}
	return b.String()
}

// since returns the tokens reported after before, which now includes.
func since(before, now execution.Usage) execution.Usage {
	sub := func(a, b *int64) *int64 {
		if b == nil {
			return nil
		}
		n := *b
		if a != nil {
			n -= *a
		}
		return &n
	}
	return execution.Usage{InputTokens: sub(before.InputTokens, now.InputTokens),
		OutputTokens: sub(before.OutputTokens, now.OutputTokens), TotalTokens: sub(before.TotalTokens, now.TotalTokens)}
}

func elapsed(from, to time.Time) int64 {
	if from.IsZero() || to.Before(from) {
		return 0
	}
	return to.Sub(from).Milliseconds()
}
