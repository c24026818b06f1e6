package execution

import (
	"fmt"
	"strings"

	"github.com/agentjournal/agentjournal/eventstore"
)

// ItemInterruption is the timeline item of an interruption record.
const ItemInterruption ItemKind = "interruption"

// Interrupted is how a run was cut short, as its interruption record says.
type Interrupted struct {
	Reason         eventstore.InterruptionReason `json:"reason"`
	Detail         string                        `json:"detail,omitempty"`
	Turn           uint64                        `json:"turn,omitempty"`
	MessageID      string                        `json:"messageId,omitempty"`
	InputRequestID string                        `json:"inputRequestId,omitempty"`
	Sequence       uint64                        `json:"sequence"`
}

func (s *State) applyInterruption(r *eventstore.Interruption) []TimelineItem {
	s.Interrupted = &Interrupted{Reason: r.Reason, Detail: r.Detail, Turn: r.Turn, MessageID: r.MessageID,
		InputRequestID: r.InputRequestID, Sequence: r.Sequence}
	it := item(r, ItemInterruption, interruptionText(r))
	it.Reason = string(r.Reason)
	it.MessageID = r.MessageID
	it.RequestID = r.InputRequestID
	return []TimelineItem{it}
}

func interruptionText(r *eventstore.Interruption) string {
	var what []string
	if r.Turn > 0 {
		what = append(what, fmt.Sprintf("turn %d", r.Turn))
	}
	if r.MessageID != "" {
		what = append(what, "message "+r.MessageID)
	}
	if r.InputRequestID != "" {
		what = append(what, "input request "+r.InputRequestID)
	}
	text := "interrupted (" + string(r.Reason) + ")"
	if len(what) > 0 {
		text += ": " + strings.Join(what, ", ")
	}
	if r.Detail != "" {
		text += "; " + r.Detail
	}
	return text
}
