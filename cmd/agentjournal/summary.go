package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/textclip"
)

// maxQuoted bounds the free text (prompts, questions, summaries) quoted in a
// summary, in runes.
const maxQuoted = 72

// summarize describes a record in one line for the human output of journal
// cat, log and demo. It leaves out what the other columns show (sequence,
// offset, time, type) and names a record's own id in brackets and the id it
// answers or refers to in parentheses, so related lines can be matched up.
// What the record holds is made termSafe: the line never carries a control
// or bidi character.
func summarize(r eventstore.Record) string {
	return termSafe(summarizeRecord(r))
}

func summarizeRecord(r eventstore.Record) string {
	switch r := r.(type) {
	case *eventstore.Header:
		return summarizeHeader(r)
	case *eventstore.MessageAccepted:
		return summarizeMessage(r)
	case *eventstore.MessageDelivery:
		s := fmt.Sprintf("%s %s via %s", r.MessageID, r.Status, r.Transport)
		if r.Reason != "" {
			s += ": " + r.Reason
		}
		return s
	case *eventstore.Observation:
		return fmt.Sprintf("%s/%s %s [%s]", r.Source, r.Confidence, summarizeObserved(r), r.ObservationID)
	case *eventstore.Decision:
		return join(string(r.Action), refersTo(r.ObservationID, r.MessageID), r.Reason)
	case *eventstore.StateChanged:
		return summarizeState(r)
	case *eventstore.ActivityUpdated:
		return summarizeActivity(r)
	case *eventstore.OwnerEffect:
		return join(string(r.OwnerEntity), r.EffectType, refersTo(r.ObservationID, ""), "["+r.EffectID+"]")
	case *eventstore.ProjectionRecorded:
		return r.Projection
	}
	return ""
}

func summarizeHeader(h *eventstore.Header) string {
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

// summarizeMessage shows who sent what: the payload's "text" when it has
// one, the request it answers when it names a "requestId", else the payload.
func summarizeMessage(m *eventstore.MessageAccepted) string {
	answers := ""
	if id, _ := m.RequestID(); id != "" {
		answers = "answers " + id
	}
	text, err := m.Text()
	if err == nil {
		text = quote(text)
	} else {
		text = clip(string(m.Payload))
	}
	return join(string(m.Source), m.MessageType, answers, text, "["+m.MessageID+"]")
}

// summarizeObserved describes what an observation carries: its signal, else
// its raw text, else its payload.
func summarizeObserved(o *eventstore.Observation) string {
	if o.Signal != nil {
		return join(string(o.Signal.Type), summarizeSignal(o.Signal.Payload))
	}
	if o.RawText != "" {
		return "text " + quote(o.RawText)
	}
	b, _ := json.Marshal(o.Payload)
	return "payload " + clip(string(b))
}

func summarizeSignal(p eventstore.SignalPayload) string {
	switch p := p.(type) {
	case *eventstore.ProgressSignal:
		return join(quote(p.Summary), units(p.Units))
	case *eventstore.StatusSignal:
		if p.Phase != "" {
			return join(quote(p.Summary), "phase="+p.Phase)
		}
		return quote(p.Summary)
	case *eventstore.NeedsInputSignal:
		kind := ""
		if p.Kind == string(eventstore.InputPermission) {
			kind = "permission"
		}
		choices := ""
		if len(p.Choices) > 0 {
			choices = "choices=" + strings.Join(p.Choices, "|")
		}
		return join(p.RequestID, kind, quote(p.Question), choices)
	case *eventstore.PlanSignal:
		var items []string
		for _, it := range p.Items {
			items = append(items, "["+string(it.Status)+"] "+it.Text)
		}
		return quote(strings.Join(items, "; "))
	case *eventstore.BlockedSignal:
		if p.Needs != "" {
			return join(quote(p.Reason), "needs="+quote(p.Needs))
		}
		return quote(p.Reason)
	case *eventstore.ReadyForVerificationSignal:
		return quote(p.Summary)
	case *eventstore.CompletedClaimSignal:
		return quote(p.Summary)
	case *eventstore.FailedClaimSignal:
		return quote(p.Reason)
	case *eventstore.MessageSignal:
		return quote(p.Text)
	case *eventstore.UsageSignal:
		s := "tokens=" + tokens(p.InputTokens, p.OutputTokens, p.TotalTokens)
		if p.Cumulative {
			s += " (cumulative)"
		}
		return s
	case *eventstore.DiagnosticSignal:
		return join(p.Code, quote(p.Message))
	}
	return ""
}

func summarizeState(s *eventstore.StateChanged) string {
	var parts []string
	if s.Lifecycle != "" {
		parts = append(parts, "lifecycle="+string(s.Lifecycle))
	}
	if s.Attention != "" {
		parts = append(parts, "attention="+string(s.Attention))
	}
	if s.Activity != "" {
		parts = append(parts, "activity="+string(s.Activity))
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

func summarizeActivity(a *eventstore.ActivityUpdated) string {
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
		if tok := tokens(t.InputTokens, t.OutputTokens, t.TotalTokens); tok != "" {
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
		parts = append(parts, call)
	}
	if c := a.Capabilities; c != nil {
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
		if len(caps) > 0 {
			parts = append(parts, "caps="+strings.Join(caps, ","))
		}
	}
	return join(parts...)
}

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
func units(u *eventstore.Units) string {
	if u == nil || u.Completed == nil {
		return ""
	}
	s := strconv.FormatInt(*u.Completed, 10)
	if u.Total != nil {
		s += "/" + strconv.FormatInt(*u.Total, 10)
	}
	return join(s, u.Unit)
}

// tokens renders token counts as "in 100/out 20/total 120", leaving out
// the counts that are absent.
func tokens(in, out, total *int64) string {
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

// quote clips free text and quotes it, so a newline or a long prompt never
// breaks the one-line-per-record layout. strconv.Quote escapes every
// character termSafe does.
func quote(s string) string {
	return strconv.Quote(textclip.Runes(s, maxQuoted))
}

// clip shortens JSON or other text that is shown unquoted, and makes it
// termSafe.
func clip(s string) string {
	return termSafe(textclip.Runes(strings.Join(strings.Fields(s), " "), maxQuoted))
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
