package narrative

import (
	"fmt"
	"strings"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

// Story is a run told turn by turn, as a reader follows it: what was
// asked, what the agent did and said, where it waited and for whom, and
// how the run ended. The Markdown and HTML renderings tell it; the JSON
// keeps the line form, which the story is a reading of.
type Story struct {
	// Before holds what the journal tells before the first prompt (the
	// agent's start, a restore of its work tree).
	Before []string
	Turns  []Turn
	// Ending is how the run ended: claims, the decisions on them, the
	// final lifecycle and its reason, an interruption; empty when the
	// journal has no end.
	Ending []string
	// After holds what the journal tells after the end that still
	// matters: a claim, an interruption, an effect; not an attention or
	// activity change.
	After []string
	Todos []eventstore.PlanItem
	// Tokens is the run's usage, folded as the execution's state folds it.
	Tokens execution.Usage
}

// Turn is one turn: from a prompt, or an operator message that starts a
// turn, to the next one or the end.
type Turn struct {
	N int
	// Asked is the message that started the turn, and AskedBy its source.
	Asked   string
	AskedBy string
	Calls   []Call
	// Notes are what the agent reported doing besides its tool calls
	// (progress, status, a command run outside a tool call) and what
	// happened to the run meanwhile (a snapshot, a failed delivery).
	Notes []string
	// Said are the agent's messages, Markdown as it wrote them.
	Said  []string
	Waits []Wait
	// Ended says how the turn ended when the journal says so ("turn 1
	// ended", "turn 2 failed: …").
	Ended string
	// Tokens is the usage the turn added; nil counts were not reported.
	Tokens execution.Usage
	// First and Last are the records the turn spans: its provenance.
	First, Last Ref
}

// Group is what a tool call does, for telling calls of a kind together.
type Group string

const (
	Reads    Group = "read"
	Changes  Group = "changed"
	Commands Group = "ran"
	Searches Group = "searched"
	Fetches  Group = "fetched"
	Others   Group = "used"
)

// Groups lists the groups in the order a turn tells them.
var Groups = []Group{Reads, Changes, Commands, Searches, Fetches, Others}

// GroupTitles are the groups' headings.
var GroupTitles = map[Group]string{
	Reads: "Read", Changes: "Wrote or edited", Commands: "Ran", Searches: "Searched",
	Fetches: "Fetched", Others: "Other tools",
}

// Call is one tool call, its start and end joined.
type Call struct {
	Name   string
	Group  Group
	Target string
	Status eventstore.ToolCallStatus
	// Denied is a failed call the operator or the CLI's permissions
	// refused, told as a denial rather than a failure.
	Denied      bool
	Error       string
	ExitCode    *int64
	Output      string
	OutputBytes int64
}

// Wait is a period the agent waited: a question, a permission request or
// being blocked, with who answered and what.
type Wait struct {
	// Kind is question, permission or blocked.
	Kind string
	What string
	// AnsweredBy and Answer are the answer's source and text; empty when
	// unanswered.
	AnsweredBy string
	Answer     string
	// Open says the run ended, or the journal stops, with the wait open.
	Open string
}

// storyBuilder walks one journal for its story.
type storyBuilder struct {
	s        *Story
	turn     *Turn
	calls    map[string]int
	waits    map[string]int
	blocked  int
	usage    execution.Usage
	atStart  execution.Usage
	starters map[string]bool
	ended    bool
	ref      Ref
}

// buildStory tells records, the journal's in sequence order, as a story.
// refs are the records' refs, in the same order.
func buildStory(records []eventstore.Record, refs []Ref) *Story {
	b := &storyBuilder{s: &Story{}, calls: map[string]int{}, waits: map[string]int{}, blocked: -1, starters: turnStarters(records)}
	for i, r := range records {
		b.ref = refs[i]
		b.apply(r)
	}
	b.closeTurn()
	b.s.Tokens = b.usage
	return b.s
}

// turnStarters names the messages that started a turn after the first, by
// the runtime's "turn N started by message ID" changes. A journal without
// them (a one-shot run, a journal from before they were written) has each
// prompt start a turn.
func turnStarters(records []eventstore.Record) map[string]bool {
	var out map[string]bool
	for _, r := range records {
		sc, ok := r.(*eventstore.StateChanged)
		if !ok {
			continue
		}
		var n int
		var id string
		if _, err := fmt.Sscanf(sc.Reason, "turn %d started by message %s", &n, &id); err == nil {
			if out == nil {
				out = map[string]bool{}
			}
			out[id] = true
		}
	}
	return out
}

func (b *storyBuilder) note(text string) {
	switch {
	case b.ended:
		b.s.After = append(b.s.After, text)
	case b.turn == nil:
		b.s.Before = append(b.s.Before, text)
	default:
		b.turn.Notes = append(b.turn.Notes, text)
	}
}

func (b *storyBuilder) apply(r eventstore.Record) {
	// The record is the turn's last so far unless it started the next
	// turn or came after the end.
	defer func() {
		if b.turn != nil && !b.ended {
			b.turn.Last = b.ref
		}
	}()
	switch r := r.(type) {
	case *eventstore.Header:
		b.note(eventstore.TimelineText(r))
	case *eventstore.MessageAccepted:
		b.message(r)
	case *eventstore.MessageDelivery:
		if r.Status == eventstore.DeliveryFailed || r.Status == eventstore.DeliverySkipped {
			b.note(eventstore.TimelineText(r))
		}
	case *eventstore.Observation:
		b.observation(r)
	case *eventstore.Decision:
		// The policy's decisions on claims are told with the ending; the
		// rest restate what the observations already told.
	case *eventstore.StateChanged:
		b.state(r)
	case *eventstore.ActivityUpdated:
		if !b.ended {
			b.activity(r)
		}
	case *eventstore.OwnerEffect:
		// An effect follows from a claim or a decision: it is told with
		// the outcome, after the end as well.
		b.s.Ending = append(b.s.Ending, eventstore.TimelineText(r))
	case *eventstore.Interruption:
		text := eventstore.TimelineText(r)
		if b.turn != nil && !b.ended {
			b.turn.Notes = append(b.turn.Notes, text)
		}
		if b.ended {
			b.s.After = append(b.s.After, text)
		} else {
			b.s.Ending = append(b.s.Ending, text)
		}
	default:
		// Snapshots, restores, owner effects: told where they happened,
		// in their timeline text; a checkpoint restates the run and a
		// reserved kind is never written.
		if sections[r.Kind()] != "" {
			b.note(eventstore.TimelineText(r))
		}
	}
}

func (b *storyBuilder) message(r *eventstore.MessageAccepted) {
	text, _ := r.Text()
	if req, _ := r.RequestID(); req != "" {
		if i, ok := b.waits[req]; ok && b.turn != nil {
			w := &b.turn.Waits[i]
			w.AnsweredBy, w.Answer = string(r.Source), text
			delete(b.waits, req)
			return
		}
		b.note(fmt.Sprintf("%s answered %s: %s", r.Source, req, text))
		return
	}
	starts := b.turn == nil || b.starters == nil || b.starters[r.MessageID]
	if !starts || b.ended {
		b.note(fmt.Sprintf("%s sent a %s: %s", r.Source, r.MessageType, text))
		return
	}
	b.closeTurn()
	n := 1
	if len(b.s.Turns) > 0 {
		n = b.s.Turns[len(b.s.Turns)-1].N + 1
	}
	b.s.Turns = append(b.s.Turns, Turn{N: n, Asked: text, AskedBy: string(r.Source), First: b.ref, Last: b.ref})
	b.turn = &b.s.Turns[len(b.s.Turns)-1]
	b.atStart = b.usage
	b.calls, b.waits, b.blocked = map[string]int{}, map[string]int{}, -1
}

func (b *storyBuilder) closeTurn() {
	if b.turn == nil {
		return
	}
	b.turn.Tokens = usageSince(b.atStart, b.usage)
	for _, i := range b.waits {
		if w := &b.turn.Waits[i]; w.Open == "" {
			w.Open = "unanswered"
		}
	}
	if b.blocked >= 0 && b.turn.Waits[b.blocked].Open == "" {
		b.turn.Waits[b.blocked].Open = "still blocked"
	}
	b.turn = nil
}

// usageSince is what the usage added from from to to: the difference of
// two totals execution.Usage folded, so cumulative and incremental counts
// are read by the one rule.
func usageSince(from, to execution.Usage) execution.Usage {
	sub := func(a, b *int64) *int64 {
		switch {
		case b == nil:
			return nil
		case a == nil:
			return b
		}
		n := max(*b-*a, 0)
		return &n
	}
	return execution.Usage{InputTokens: sub(from.InputTokens, to.InputTokens),
		OutputTokens: sub(from.OutputTokens, to.OutputTokens), TotalTokens: sub(from.TotalTokens, to.TotalTokens)}
}

func (b *storyBuilder) observation(r *eventstore.Observation) {
	if r.Signal == nil {
		return
	}
	switch p := r.Signal.Payload.(type) {
	case *eventstore.UsageSignal:
		b.usage = b.usage.Add(p)
	case *eventstore.MessageSignal:
		if b.turn != nil && !b.ended {
			b.turn.Said = append(b.turn.Said, p.Text)
		} else {
			b.note("the agent said: " + p.Text)
		}
	case *eventstore.PlanSignal:
		b.s.Todos = p.Items
	case *eventstore.NeedsInputSignal:
		w := Wait{Kind: "question", What: p.Question}
		if p.Kind == "permission" {
			w.Kind = "permission"
			if p.Tool != nil {
				w.What = permissionText(p)
			}
		}
		if len(p.Choices) > 0 && w.Kind == "question" {
			w.What += " (" + strings.Join(p.Choices, ", ") + ")"
		}
		b.wait(p.RequestID, w)
	case *eventstore.BlockedSignal:
		what := p.Reason
		if p.Needs != "" {
			what += "; needs " + p.Needs
		}
		if b.blocked >= 0 && b.turn != nil {
			b.turn.Waits[b.blocked].What = what
			return
		}
		b.wait("", Wait{Kind: "blocked", What: what})
	case *eventstore.CompletedClaimSignal, *eventstore.FailedClaimSignal, *eventstore.ReadyForVerificationSignal:
		if b.ended {
			b.s.After = append(b.s.After, eventstore.TimelineText(r))
		} else {
			b.s.Ending = append(b.s.Ending, eventstore.TimelineText(r))
		}
	case *eventstore.ProgressSignal, *eventstore.StatusSignal:
		if !b.ended {
			b.note(eventstore.TimelineText(r))
		}
	default:
		if !b.ended {
			b.note(eventstore.TimelineText(r))
		}
	}
}

func permissionText(p *eventstore.NeedsInputSignal) string {
	s := "permission to use " + p.Tool.Name
	for _, k := range []string{"file_path", "path", "command", "url", "pattern"} {
		if v, ok := p.Tool.Input[k].(string); ok && v != "" {
			return s + " on " + v
		}
	}
	return s
}

// wait opens a wait in the current turn; one before any turn opens one
// as a turn of its own would read wrong, so it is a note.
func (b *storyBuilder) wait(req string, w Wait) {
	if b.turn == nil || b.ended {
		b.note(w.Kind + ": " + w.What)
		return
	}
	b.turn.Waits = append(b.turn.Waits, w)
	i := len(b.turn.Waits) - 1
	if w.Kind == "blocked" {
		b.blocked = i
	} else if req != "" {
		b.waits[req] = i
	}
}

func (b *storyBuilder) state(r *eventstore.StateChanged) {
	if b.ended {
		return
	}
	if r.Lifecycle.Final() {
		text := "ended " + string(r.Lifecycle)
		if r.Reason != "" {
			text += " (" + r.Reason + ")"
		}
		b.s.Ending = append(b.s.Ending, text)
		if b.turn != nil {
			b.turn.Last = b.ref
		}
		b.closeTurn()
		b.ended = true
		return
	}
	if b.turn == nil {
		return
	}
	if r.Attention == eventstore.AttentionBlocked && b.blocked < 0 {
		b.wait("", Wait{Kind: "blocked", What: r.Reason})
	} else if r.Attention != "" && r.Attention != eventstore.AttentionBlocked && b.blocked >= 0 {
		b.blocked = -1
	}
	var n int
	var rest string
	if _, err := fmt.Sscanf(r.Reason, "turn %d ended", &n); err == nil && n == b.turn.N {
		b.turn.Ended = fmt.Sprintf("turn %d ended", n)
	} else if _, err := fmt.Sscanf(r.Reason, "turn %d failed: %s", &n, &rest); err == nil && n == b.turn.N {
		b.turn.Ended = strings.TrimSuffix(r.Reason, "; waiting for the next message")
	}
}

func (b *storyBuilder) activity(r *eventstore.ActivityUpdated) {
	if b.turn == nil {
		return
	}
	t := r.CurrentTarget
	c := r.ToolCall
	if c == nil {
		if t != nil && t.Kind == eventstore.TargetCommand && (t.Path != "" || t.Label != "") {
			b.turn.Notes = append(b.turn.Notes, "ran "+targetText(t))
		}
		return
	}
	i, ok := b.calls[c.ID]
	if !ok || c.ID == "" {
		b.turn.Calls = append(b.turn.Calls, Call{Name: c.Name, Group: groupOf(r.Activity, t)})
		i = len(b.turn.Calls) - 1
		if c.ID != "" {
			b.calls[c.ID] = i
		}
	}
	call := &b.turn.Calls[i]
	if t != nil && call.Target == "" {
		call.Target = targetText(t)
		call.Group = groupOf(r.Activity, t)
	}
	call.Status = c.Status
	if c.Status == eventstore.ToolCallFailed {
		call.Error, call.ExitCode = c.Error, c.ExitCode
		call.Denied = denied(c.Error)
	}
	if c.Output != "" {
		call.Output, call.OutputBytes = c.Output, c.OutputBytes
	}
}

// denied tells a call refused from one that ran and failed: the CLIs word
// a refusal as a denial or a missing permission.
func denied(err string) bool {
	e := strings.ToLower(err)
	return strings.Contains(e, "denied") || strings.Contains(e, "permission") || strings.Contains(e, "not granted") ||
		strings.Contains(e, "haven't granted")
}

// groupOf reads a call's group from the activity and target the runtime
// gave it (runtime/agent's tool classes): a file target while reviewing is
// a read, while editing a change.
func groupOf(a eventstore.Activity, t *eventstore.Target) Group {
	if t == nil {
		return Others
	}
	switch t.Kind {
	case eventstore.TargetFile:
		if a == eventstore.ActivityEditing {
			return Changes
		}
		return Reads
	case eventstore.TargetCommand:
		return Commands
	case eventstore.TargetSearch:
		return Searches
	case eventstore.TargetURL:
		return Fetches
	}
	return Others
}

func targetText(t *eventstore.Target) string {
	switch {
	case t.Kind == eventstore.TargetSearch && t.Path != "":
		return t.Label + " in " + t.Path
	case t.Path != "":
		return t.Path
	}
	return t.Label
}
