package eventstore

import (
	"fmt"

	"github.com/agentjournal/agentjournal/internal/oneof"
)

// ProtocolDescriptor is the interaction contract frozen in a journal header:
// how the execution is driven, which messages it accepts and which signals
// it may send back through which transports.
type ProtocolDescriptor struct {
	Posture          Posture             `json:"posture"`
	Messages         []MessageDescriptor `json:"messages"`
	Signals          []SignalType        `json:"signals"`
	SignalTransports []SignalTransport   `json:"signalTransports"`
	// SessionShape is set for agent CLIs with a provider session: whether
	// the execution ends with the first result or converses.
	SessionShape SessionShape `json:"sessionShape,omitempty"`
	// Approvals says how the agent's permission requests are answered.
	Approvals *ApprovalPolicy `json:"approvals,omitempty"`
}

// ApprovalPolicy is how an execution's permission requests are answered.
type ApprovalPolicy struct {
	Mode ApprovalMode `json:"mode"`
	// Flags are the CLI flags that set the policy the agent runs under.
	Flags []string `json:"flags,omitempty"`
}

// MessageDescriptor describes one message type an execution accepts.
type MessageDescriptor struct {
	Type           string       `json:"type"`
	Label          string       `json:"label"`
	Description    string       `json:"description,omitempty"`
	InputSchemaKey string       `json:"inputSchemaKey,omitempty"`
	Delivery       DeliveryMode `json:"delivery"`
	MutatesContext bool         `json:"mutatesContext"`
	Portability    Portability  `json:"portability"`
	AdapterID      string       `json:"adapterId,omitempty"`
}

// Message returns the descriptor for a message type, if declared.
func (d ProtocolDescriptor) Message(messageType string) (MessageDescriptor, bool) {
	for _, m := range d.Messages {
		if m.Type == messageType {
			return m, true
		}
	}
	return MessageDescriptor{}, false
}

// TransportState is the structured transport available at launch.
type TransportState struct {
	StructuredLane   StructuredLane `json:"structuredLane"`
	TerminalAttached bool           `json:"terminalAttached"`
	MCPAvailable     bool           `json:"mcpAvailable"`
}

func (d *ProtocolDescriptor) validate(p *problems, field string) {
	enum(p, field+".posture", d.Posture, Postures)
	seen := map[string]bool{}
	for i, m := range d.Messages {
		f := fmt.Sprintf("%s.messages[%d]", field, i)
		p.id(f+".type", m.Type)
		if seen[m.Type] {
			p.add(f+".type", fmt.Sprintf("%q is declared twice", m.Type))
		}
		seen[m.Type] = true
		p.required(f+".label", m.Label != "")
		enum(p, f+".delivery", m.Delivery, deliveryModes)
		enum(p, f+".portability", m.Portability, portabilities)
		if m.Portability == PortabilityAdapterScoped && m.AdapterID == "" {
			p.add(f+".adapterId", "required when portability is adapter-scoped")
		}
	}
	for i, s := range d.Signals {
		spec, ok := signalRegistry[s]
		switch {
		case !ok:
			p.add(fmt.Sprintf("%s.signals[%d]", field, i), fmt.Sprintf("unknown signal type %q", string(s)), oneof.Strings(SignalTypes())...)
		case !spec.Surfaced:
			p.add(fmt.Sprintf("%s.signals[%d]", field, i), fmt.Sprintf("signal type %q is not surfaced to agents", string(s)), oneof.Strings(SurfacedSignalTypes())...)
		}
	}
	for i, t := range d.SignalTransports {
		enum(p, fmt.Sprintf("%s.signalTransports[%d]", field, i), t, signalTransports)
	}
	optEnum(p, field+".sessionShape", d.SessionShape, SessionShapes)
	if d.Approvals != nil {
		enum(p, field+".approvals.mode", d.Approvals.Mode, approvalModes)
	}
}

func (t *TransportState) validate(p *problems, field string) {
	enum(p, field+".structuredLane", t.StructuredLane, structuredLanes)
}
