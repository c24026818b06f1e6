package eventstore

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// How a record reads for a person. Each kind is registered (registry.go)
// with two texts, so that journal listings, the narrative, the ACP server
// and the console ask the registry instead of keeping switches of their
// own that a new kind could be missing from:
//
//   - Summary: one short line for listings (journal cat, log). It leaves
//     out what a listing shows in its own columns (sequence, offset,
//     time, kind), names the record's own id in brackets and the id it
//     answers or refers to in parentheses, so that related lines can be
//     matched up, and quotes and clips free text, so that a newline or a
//     long prompt never breaks the one line per record.
//   - TimelineText: a sentence that tells the record read on its own,
//     free text whole, as a timeline or the narrative shows it. For an
//     observation it is its signal's, from the signal registry.
//
// Neither makes text safe for a terminal or a page: that is the caller's
// escaping.

// describer is a kind's summary and timeline text, each a function of the
// decoded record.
type describer struct {
	typ      reflect.Type
	summary  func(Record) string
	timeline func(Record) string
}

// describe pairs the summary and the timeline text of the record type R.
func describe[R Record](summary, timeline func(R) string) describer {
	d := describer{typ: reflect.TypeFor[R]()}
	if summary != nil {
		d.summary = func(r Record) string { return summary(r.(R)) }
	}
	if timeline != nil {
		d.timeline = func(r Record) string { return timeline(r.(R)) }
	}
	return d
}

// Summary returns the one line a journal listing shows for r (journal
// cat, log, a console's list of records).
func Summary(r Record) string { return kindRegistry[r.Kind()].text.summary(r) }

// TimelineText returns the sentence a timeline or a narrative shows for r
// read on its own.
func TimelineText(r Record) string { return kindRegistry[r.Kind()].text.timeline(r) }

// maxQuoted bounds the free text (prompts, questions, summaries) quoted in
// a summary, in runes.
const maxQuoted = 72

func headerSummary(h *Header) string {
	d := h.ProtocolDescriptor
	msgs := make([]string, len(d.Messages))
	for i, m := range d.Messages {
		msgs[i] = m.Type
	}
	transports := make([]string, len(d.SignalTransports))
	for i, t := range d.SignalTransports {
		transports[i] = string(t)
	}
	parts := []string{h.AgentID, string(d.Posture)}
	if len(msgs) > 0 {
		parts = append(parts, "messages="+strings.Join(msgs, ","))
	}
	parts = append(parts, fmt.Sprintf("signals=%d", len(d.Signals)))
	if len(transports) > 0 {
		parts = append(parts, "via="+strings.Join(transports, ","))
	}
	if d.SessionShape != "" {
		parts = append(parts, "shape="+string(d.SessionShape))
	}
	if a := d.Approvals; a != nil {
		approvals := "approvals=" + string(a.Mode)
		if len(a.Flags) > 0 {
			approvals += "(" + strings.Join(a.Flags, " ") + ")"
		}
		parts = append(parts, approvals)
	}
	if h.WorkingDirectory != "" {
		parts = append(parts, "cwd="+h.WorkingDirectory)
	}
	return join(parts...)
}

func headerTimeline(h *Header) string {
	text := "launched " + h.AgentID
	if len(h.Command) > 0 {
		text += ": " + strings.Join(h.Command, " ")
	}
	if h.WorkingDirectory != "" {
		text += " in " + h.WorkingDirectory
	}
	if h.Resumes != nil {
		text += " (resumes " + h.Resumes.AgentExecutionID + ")"
	}
	if h.ForkedFrom != nil {
		text += fmt.Sprintf(" (forked from %s after sequence %d)", h.ForkedFrom.AgentExecutionID, h.ForkedFrom.Sequence)
	}
	return text
}

// messageSummary shows who sent what: the payload's "text" when it has
// one, the request it answers when it names a "requestId", else the
// payload.
func messageSummary(m *MessageAccepted) string {
	var fields map[string]any
	_ = json.Unmarshal(m.Payload, &fields)
	answers := ""
	if id, ok := fields["requestId"].(string); ok && id != "" {
		answers = "answers " + id
	}
	text, ok := fields["text"].(string)
	if ok {
		text = quote(text)
	} else {
		text = clip(string(m.Payload))
	}
	return join(string(m.Source), m.MessageType, answers, text, "["+m.MessageID+"]")
}

// messageTimeline says who answered which request and when, or who sent
// which message. The text is the payload's "text", else the payload; the
// request is the payload's "requestId", read apart from the text so that
// a text that is not a string does not hide it.
func messageTimeline(m *MessageAccepted) string {
	var text struct {
		Text string `json:"text"`
	}
	what := string(m.Payload)
	if json.Unmarshal(m.Payload, &text) == nil && text.Text != "" {
		what = text.Text
	}
	var answer struct {
		RequestID string `json:"requestId"`
	}
	if json.Unmarshal(m.Payload, &answer) == nil && answer.RequestID != "" {
		return fmt.Sprintf("%s answered %s at %s: %s", m.Source, answer.RequestID, m.OccurredAt.UTC().Format(time.RFC3339), what)
	}
	return fmt.Sprintf("%s %s: %s", m.Source, m.MessageType, what)
}

func deliverySummary(d *MessageDelivery) string {
	s := fmt.Sprintf("%s %s via %s", d.MessageID, d.Status, d.Transport)
	if d.Reason != "" {
		s += ": " + d.Reason
	}
	return s
}

func deliveryTimeline(d *MessageDelivery) string {
	return join("message", d.MessageID, string(d.Status), d.Reason)
}

// observationSummary tells what an observation carries: its signal, else
// its raw text, else its payload.
func observationSummary(o *Observation) string {
	var what string
	switch {
	case o.Signal != nil:
		what = join(string(o.Signal.Type), o.Signal.Payload.summary())
	case o.RawText != "":
		what = "text " + quote(o.RawText)
	default:
		b, _ := json.Marshal(o.Payload)
		what = "payload " + clip(string(b))
	}
	return fmt.Sprintf("%s/%s %s [%s]", o.Source, o.Confidence, what, o.ObservationID)
}

// observationTimeline tells a signal by its own timeline text, named by
// its type; the questions, blockers and claims a reader looks for are
// told with what they carry besides. Without a signal it tells the raw
// text, else the payload's keys.
func observationTimeline(o *Observation) string {
	if o.Signal == nil {
		if o.RawText != "" {
			return fmt.Sprintf("observed (%s): %s", o.Source, o.RawText)
		}
		keys := make([]string, 0, len(o.Payload))
		for k := range o.Payload {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return fmt.Sprintf("observed (%s): payload with %s", o.Source, strings.Join(keys, ", "))
	}
	switch p := o.Signal.Payload.(type) {
	case *NeedsInputSignal:
		what := "question"
		if p.Kind == string(InputPermission) {
			what = "permission request"
			if p.Tool != nil {
				what += " for " + p.Tool.Name
			}
		}
		text := fmt.Sprintf("%s %s asked: %s", what, p.RequestID, p.Question)
		if len(p.Choices) > 0 {
			text += " (choices: " + strings.Join(p.Choices, ", ") + ")"
		}
		return text
	case *BlockedSignal:
		text := "agent blocked: " + p.Reason
		if p.Needs != "" {
			text += " (needs " + p.Needs + ")"
		}
		return text
	case *CompletedClaimSignal:
		return join("agent claims completion:", p.Summary, evidence(p.Evidence))
	case *FailedClaimSignal:
		return join("agent claims failure:", p.Reason, p.Detail)
	case *ReadyForVerificationSignal:
		return join("agent says ready for verification:", p.Summary, evidence(p.Evidence))
	}
	text := o.Signal.Payload.TimelineText()
	if prefix := string(o.Signal.Type) + ": "; !strings.HasPrefix(text, prefix) {
		// A plan's or a checkpoint's text names it already.
		text = prefix + text
	}
	return text
}

func evidence(e []string) string {
	if len(e) == 0 {
		return ""
	}
	return "(evidence: " + strings.Join(e, ", ") + ")"
}

func decisionSummary(d *Decision) string {
	return join(string(d.Action), refersTo(d.ObservationID, d.MessageID), d.Reason)
}

func decisionTimeline(d *Decision) string {
	text := "decided " + string(d.Action)
	if on := d.ObservationID + d.MessageID; on != "" {
		text += " on " + on
	}
	if d.Reason != "" {
		text += ": " + d.Reason
	}
	return text
}

// sets lists the lifecycle, attention and activity a state change sets,
// each as its field's name and value, in that order.
func (s *StateChanged) sets() [][2]string {
	var out [][2]string
	for _, f := range [][2]string{{"lifecycle", string(s.Lifecycle)}, {"attention", string(s.Attention)}, {"activity", string(s.Activity)}} {
		if f[1] != "" {
			out = append(out, f)
		}
	}
	return out
}

func stateSummary(s *StateChanged) string {
	var parts []string
	for _, f := range s.sets() {
		parts = append(parts, f[0]+"="+f[1])
	}
	switch r := s.CurrentInputRequestID; {
	case r.Set && r.ID != "":
		parts = append(parts, "input="+r.ID)
	case r.Set:
		parts = append(parts, "input=cleared")
	}
	out := join(parts...)
	if s.Reason != "" {
		out += "; " + s.Reason
	}
	return out
}

func stateTimeline(s *StateChanged) string {
	var parts []string
	for _, f := range s.sets() {
		parts = append(parts, f[0]+" "+f[1])
	}
	if req := s.CurrentInputRequestID; req.Set {
		if req.ID != "" {
			parts = append(parts, "input request "+req.ID+" open")
		} else {
			parts = append(parts, "input request cleared")
		}
	}
	text := strings.Join(parts, ", ")
	if s.Reason != "" {
		text += " (" + s.Reason + ")"
	}
	return text
}

func activitySummary(a *ActivityUpdated) string {
	parts := []string{string(a.Activity)}
	if t := a.CurrentTarget; t != nil {
		what := t.Path
		if what == "" {
			what = t.Label
		}
		if what == "" {
			parts = append(parts, "target="+string(t.Kind))
		} else {
			parts = append(parts, "target="+string(t.Kind)+":"+what)
		}
	}
	if p := a.Progress; p != nil {
		if p.Summary != "" {
			parts = append(parts, quote(p.Summary))
		}
		parts = append(parts, units(p.Units))
	}
	if t := a.Telemetry; t != nil {
		if tok := TokenCounts(t.InputTokens, t.OutputTokens, t.TotalTokens); tok != "" {
			parts = append(parts, "tokens="+tok)
		}
		if t.ActiveToolName != "" {
			parts = append(parts, "tool="+t.ActiveToolName)
		}
	}
	if c := a.ToolCall; c != nil {
		call := "call " + c.Name + " " + string(c.Status)
		if c.ExitCode != nil {
			call += fmt.Sprintf(" exit %d", *c.ExitCode)
		}
		if c.Error != "" {
			call += " " + quote(c.Error)
		}
		if c.Output != "" {
			call += " output " + quote(c.Output)
		}
		parts = append(parts, call)
	}
	if caps := a.Capabilities.on(); len(caps) > 0 {
		parts = append(parts, "caps="+strings.Join(caps, ","))
	}
	return join(parts...)
}

// activityTimeline tells the most telling part of an update: its tool
// call, else the command it runs, else what it is doing, its progress and
// its tokens.
func activityTimeline(a *ActivityUpdated) string {
	target := ""
	if t := a.CurrentTarget; t != nil {
		target = t.Path
		if target == "" {
			target = t.Label
		}
		if target != "" {
			target = string(t.Kind) + " " + target
		}
	}
	if c := a.ToolCall; c != nil {
		text := join("tool call", c.Name, string(c.Status))
		if target != "" {
			text += " on " + target
		}
		if c.ExitCode != nil {
			text += fmt.Sprintf(", exit %d", *c.ExitCode)
		}
		if c.Error != "" {
			text += ": " + c.Error
		}
		return text
	}
	if t := a.CurrentTarget; t != nil && t.Kind == TargetCommand && target != "" {
		return "running " + target
	}
	var parts []string
	if what := join(string(a.Activity), target); what != "" {
		parts = append(parts, what)
	}
	if p := a.Progress; p != nil {
		if what := join(p.Summary, units(p.Units)); what != "" {
			parts = append(parts, "progress: "+what)
		}
	}
	if t := a.Telemetry; t != nil {
		if tok := TokenCounts(t.InputTokens, t.OutputTokens, t.TotalTokens); tok != "" {
			parts = append(parts, "tokens "+tok)
		}
		if t.ActiveToolName != "" {
			parts = append(parts, "tool "+t.ActiveToolName)
		}
	}
	if caps := a.Capabilities.on(); len(caps) > 0 {
		parts = append(parts, "now "+strings.Join(caps, ", "))
	}
	if len(parts) == 0 {
		// Only capabilities turned off, or a target without a name.
		return "activity updated"
	}
	return strings.Join(parts, "; ")
}

// on names the capabilities that are on.
func (c *Capabilities) on() []string {
	if c == nil {
		return nil
	}
	var caps []string
	for _, f := range []struct {
		name string
		on   *bool
	}{
		{"terminal", c.TerminalAttached},
		{"streaming", c.Streaming},
		{"tool-call", c.ToolCallActive},
		{"writes-files", c.FilesystemMutating},
	} {
		if f.on != nil && *f.on {
			caps = append(caps, f.name)
		}
	}
	return caps
}

func effectSummary(e *OwnerEffect) string {
	return join(string(e.OwnerEntity), e.EffectType, refersTo(e.ObservationID, ""), "["+e.EffectID+"]")
}

func effectTimeline(e *OwnerEffect) string {
	return join("effect", e.EffectType, "routed to", string(e.OwnerEntity), e.EffectID)
}

func projectionSummary(p *ProjectionRecorded) string { return p.Projection }

func projectionTimeline(p *ProjectionRecorded) string {
	return "projection item recorded: " + p.Projection
}

func interruptionSummary(r *Interruption) string {
	turn, input := "", ""
	if r.Turn > 0 {
		turn = fmt.Sprintf("turn=%d", r.Turn)
	}
	if r.InputRequestID != "" {
		input = "input=" + r.InputRequestID
	}
	detail := ""
	if r.Detail != "" {
		detail = quote(r.Detail)
	}
	return join(string(r.Reason), turn, input, detail, refersTo("", r.MessageID))
}

func interruptionTimeline(r *Interruption) string {
	text := "interrupted: " + string(r.Reason)
	if r.Detail != "" {
		text += " (" + r.Detail + ")"
	}
	if r.Turn > 0 {
		text += fmt.Sprintf(" during turn %d", r.Turn)
	}
	if r.InputRequestID != "" {
		text += " while input request " + r.InputRequestID + " was open"
	}
	return text
}

func snapshotSummary(s *SnapshotCreated) string {
	return join(fmt.Sprintf("at=%d", s.AtSequence), "commit="+shortCommit(s.Commit),
		fmt.Sprintf("files=%d added=%d modified=%d deleted=%d", s.Files, s.Added, s.Modified, s.Deleted),
		"cwd="+s.Resource, "["+s.Ref+"]")
}

func snapshotTimeline(s *SnapshotCreated) string {
	return fmt.Sprintf("snapshot %s of %s at sequence %d: commit %s, %d files", s.Ref, s.Resource, s.AtSequence, s.Commit, s.Files)
}

func restoreSummary(r *RestoreAttempted) string {
	from, to, detail := "", "", ""
	if r.SnapshotRef != "" {
		from = "from=" + r.SnapshotRef
	}
	if r.RestoredTo != "" {
		to = "to=" + r.RestoredTo
	}
	if r.Detail != "" {
		detail = quote(r.Detail)
	}
	return join(string(r.Mode), string(r.Outcome), from, to, "cwd="+r.Resource, detail)
}

func restoreTimeline(r *RestoreAttempted) string {
	return join("restore", string(r.Mode), r.SnapshotRef, string(r.Outcome), r.RestoredTo, r.Detail)
}

func checkpointSummary(c *CheckpointCreated) string {
	parts := []string{string(c.Source), string(c.Trigger), fmt.Sprintf("at=%d", c.AtSequence),
		"status=" + string(c.StatusAtCapture), quote(c.StateSummary.Title)}
	for _, l := range []struct {
		name string
		refs []string
	}{{"todos", c.TodoIDs}, {"artifacts", c.ArtifactRefs}, {"memories", c.MemoryRefs}, {"approvals", c.ApprovalRefs}} {
		if len(l.refs) > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", l.name, len(l.refs)))
		}
	}
	return join(append(parts, "["+c.CheckpointID+"]")...)
}

func checkpointTimeline(c *CheckpointCreated) string {
	return fmt.Sprintf("checkpoint %s at sequence %d (%s by %s, %s): %s",
		c.CheckpointID, c.AtSequence, c.Trigger, c.Source, c.StatusAtCapture, c.StateSummary.Title)
}

// Signal summaries: what an observation's summary shows of its signal,
// after the signal's type.

func (s *ProgressSignal) summary() string { return join(quote(s.Summary), units(s.Units)) }

func (s *StatusSignal) summary() string {
	if s.Phase != "" {
		return join(quote(s.Summary), "phase="+s.Phase)
	}
	return quote(s.Summary)
}

func (s *NeedsInputSignal) summary() string {
	kind := ""
	if s.Kind == string(InputPermission) {
		kind = "permission"
	}
	choices := ""
	if len(s.Choices) > 0 {
		choices = "choices=" + strings.Join(s.Choices, "|")
	}
	return join(s.RequestID, kind, quote(s.Question), choices)
}

func (s *PlanSignal) summary() string {
	var items []string
	for _, it := range s.Items {
		items = append(items, "["+string(it.Status)+"] "+it.Text)
	}
	return quote(strings.Join(items, "; "))
}

func (s *BlockedSignal) summary() string {
	if s.Needs != "" {
		return join(quote(s.Reason), "needs="+quote(s.Needs))
	}
	return quote(s.Reason)
}

func (s *ReadyForVerificationSignal) summary() string { return quote(s.Summary) }
func (s *CompletedClaimSignal) summary() string       { return quote(s.Summary) }
func (s *FailedClaimSignal) summary() string          { return quote(s.Reason) }
func (s *MessageSignal) summary() string              { return quote(s.Text) }
func (s *CheckpointSignal) summary() string           { return quote(s.Title) }

func (s *UsageSignal) summary() string {
	text := "tokens=" + TokenCounts(s.InputTokens, s.OutputTokens, s.TotalTokens)
	if s.Cumulative {
		text += " (cumulative)"
	}
	return text
}

func (s *DiagnosticSignal) summary() string { return join(s.Code, quote(s.Message)) }

// refersTo names the observation, else the message, a record refers to.
func refersTo(observationID, messageID string) string {
	switch {
	case observationID != "":
		return "(" + observationID + ")"
	case messageID != "":
		return "(" + messageID + ")"
	}
	return ""
}

// units renders counted progress as "2/5 files".
func units(u *Units) string {
	if u == nil || u.Completed == nil {
		return ""
	}
	s := strconv.FormatInt(*u.Completed, 10)
	if u.Total != nil {
		s += "/" + strconv.FormatInt(*u.Total, 10)
	}
	return join(s, u.Unit)
}

// TokenCounts renders token counts as summaries show them, "in 100/out
// 20/total 120", leaving out the counts that are absent.
func TokenCounts(in, out, total *int64) string {
	var parts []string
	for _, c := range []struct {
		name string
		n    *int64
	}{{"in", in}, {"out", out}, {"total", total}} {
		if c.n != nil {
			parts = append(parts, c.name+" "+strconv.FormatInt(*c.n, 10))
		}
	}
	return strings.Join(parts, "/")
}

// shortCommit is the first 12 hex digits of a commit, enough to name it
// in a line.
func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// quote clips free text and quotes it: strconv.Quote escapes newlines
// and every other control character.
func quote(s string) string {
	return strconv.Quote(clipRunes(s, maxQuoted))
}

// clip shortens JSON or other text shown unquoted, its white space,
// newlines included, folded to single spaces.
func clip(s string) string {
	return clipRunes(strings.Join(strings.Fields(s), " "), maxQuoted)
}

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// join joins the non-empty parts with spaces.
func join(parts ...string) string {
	out := parts[:0:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}
