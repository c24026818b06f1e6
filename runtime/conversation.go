package runtime

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
)

// conversant is a Driver that talks to its agent on its own, not only when
// a message is delivered: an ACP client runs a handshake at start and
// answers the agent's requests. The runtime hands it the process's input
// once the process runs, and hangs up when the process's output has ended
// or the operator stops it. Such an agent keeps its process on this
// runtime's pipes (never supervised): the conversation's state lives here.
type conversant interface {
	// Converse starts the conversation; it must not block.
	Converse(c agent.Conversation)
	// Hangup cancels a running turn (best effort) and ends the
	// conversation; what the agent writes after it is still journaled by
	// the parser but no longer answered. Safe to call more than once.
	Hangup()
}

func conversing(d Driver) bool {
	_, ok := d.(conversant)
	return ok
}

// converse starts the conversation of a conversant driver with the
// process c.
func (rt *Runtime) converse(p *process, c *child) {
	cv, ok := p.driver.(conversant)
	if !ok {
		return
	}
	var n atomic.Int64
	cv.Converse(agent.Conversation{
		Dir: p.dir,
		Write: func(b []byte) error {
			_, err := c.write(b)
			return err
		},
		Note: func(code, message string) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rt.record(ctx, p, &eventstore.Observation{ObservationID: fmt.Sprintf("%s-client-%d", c.prefix, n.Add(1)),
				Source: p.source, Confidence: eventstore.ConfidenceDiagnostic, Signal: eventstore.NewSignal(&eventstore.DiagnosticSignal{
					Code: code, Message: clipReason(message), Adapter: p.adapter.ID()})})
		},
		EndTurn: func(failed bool, reason string) {
			c.parseMu.Lock()
			defer c.parseMu.Unlock()
			rt.turnEnded(p, c, agent.TurnEnd{Failed: failed, Reason: reason})
		},
		Status: func(phase, summary string) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rt.record(ctx, p, &eventstore.Observation{ObservationID: fmt.Sprintf("%s-client-%d", c.prefix, n.Add(1)),
				Source: p.source, Confidence: eventstore.ConfidenceHigh, Signal: eventstore.NewSignal(&eventstore.StatusSignal{
					Phase: phase, Summary: clipReason(summary)})})
		},
	})
}

// hangup ends a conversant driver's conversation.
func hangup(p *process) {
	if cv, ok := p.driver.(conversant); ok {
		cv.Hangup()
	}
}
