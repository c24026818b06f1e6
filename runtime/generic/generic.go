package generic

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
)

// ID names the generic agent.
const ID = "generic"

// Agent runs any program: messages are written to stdin as text lines;
// signals come from stdout markers.
type Agent struct{}

var _ agent.Agent = Agent{}

func (Agent) ID() string       { return ID }
func (Agent) Provider() string { return "" }

// Capabilities: the program has no session the runtime knows of, so
// nothing is native.
func (Agent) Capabilities() agent.Capabilities {
	return agent.Capabilities{Protocol: agent.ProtocolStdin}
}

func (Agent) Shapes() []eventstore.SessionShape     { return nil }
func (Agent) Approvals() *eventstore.ApprovalPolicy { return nil }
func (Agent) LineTypes() []string                   { return nil }

func (Agent) Messages(eventstore.SessionShape) []eventstore.MessageDescriptor {
	return []eventstore.MessageDescriptor{agent.PromptMessage, agent.AnswerMessage, agent.InterruptMessage}
}

func (Agent) NewDriver(command []string, _ eventstore.SessionShape) agent.Driver {
	return &Driver{command: command}
}

// Driver runs one launch of a program given after --.
type Driver struct{ command []string }

// Start returns the program's command line.
func (d *Driver) Start(string, string) (string, []string, error) {
	if len(d.command) == 0 {
		return "", nil, fmt.Errorf("the generic agent needs a command (after --)")
	}
	return d.command[0], slices.Clone(d.command[1:]), nil
}

// TurnsOnStdin is true: the program reads its messages on its stdin.
func (*Driver) TurnsOnStdin() bool { return true }

// Encode writes a message as one line on the agent's stdin. An answer
// starts with the id of the request it answers and ": ", since a prompt
// may arrive while a question is open and a program reading its stdin must
// tell the two apart.
func (*Driver) Encode(m *eventstore.MessageAccepted) ([]byte, bool, error) {
	p, err := m.DecodePayload()
	if err != nil {
		return nil, false, err
	}
	line := p.Text
	if p.RequestID != "" {
		line = p.RequestID + ": " + p.Text
	}
	return []byte(oneLine(line) + "\n"), true, nil
}

// Type types a message into the agent's terminal as a person would: the
// text, answers included, then Enter (a carriage return, which a terminal
// in its usual mode hands the program as a line feed). The agent on a
// terminal asked its question on that terminal, so the answer is just what
// a person would type.
func (*Driver) Type(m *eventstore.MessageAccepted) ([]byte, bool, error) {
	p, err := m.DecodePayload()
	if err != nil {
		return nil, false, err
	}
	return []byte(oneLine(p.Text) + "\r"), true, nil
}

// oneLine turns the line breaks inside a message into spaces, so that one
// message is one line.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}
