package runtime

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/acp"
	"github.com/agentjournal/agentjournal/runtime/agent"
	"github.com/agentjournal/agentjournal/runtime/claude"
	"github.com/agentjournal/agentjournal/runtime/codex"
	"github.com/agentjournal/agentjournal/runtime/codexapp"
	"github.com/agentjournal/agentjournal/runtime/copilot"
	"github.com/agentjournal/agentjournal/runtime/generic"
)

// registry lists every agent the runtime drives, each once. An agent CLI's
// knowledge (its driver and parser, its capabilities, its captures) lives
// in its own folder under runtime/; adding one is that folder and a line
// here. Adapters, NewAdapter, Native and Agents read this list, and
// docs/agents.md's list of agents is checked against it.
var registry = slices.Concat([]agent.Agent{
	generic.Agent{},
	claude.Agent{},
	codex.Agent{},
	copilot.Agent{},
	codexapp.Agent{}, // Codex through app-server, opt-in beside exec
}, acp.Agents()) // acp and its presets, one line each in runtime/acp

// Adapter is an agent as the runtime drives it.
type Adapter = agent.Agent

// Driver runs one launch of an adapter.
type Driver = agent.Driver

// lookup is the registered agent with the given id.
func lookup(id string) (agent.Agent, bool) {
	for _, a := range registry {
		if a.ID() == id {
			return a, true
		}
	}
	return nil, false
}

// Adapters lists the adapter ids, in the registry's order.
func Adapters() []string {
	out := make([]string, len(registry))
	for i, a := range registry {
		out[i] = a.ID()
	}
	return out
}

// NewAdapter returns the adapter with the given id; "" is the generic one.
func NewAdapter(id string) (Adapter, error) {
	if id == "" {
		id = generic.ID
	}
	if a, ok := lookup(id); ok {
		return a, nil
	}
	return nil, fmt.Errorf("unknown agent %q (want one of: %s)", id, strings.Join(Adapters(), ", "))
}

// Native reports what an agent's CLI does itself: fork its session at a
// message, resume its session. Everything else is reconstructed from the
// journal. An unknown agent does neither.
func Native(id string) (fork, resume bool) {
	a, ok := lookup(id)
	if !ok {
		return false, false
	}
	c := a.Capabilities()
	return c.NativeFork, c.NativeResume
}

// AgentInfo is what the catalog of agents says of one.
type AgentInfo struct {
	ID string `json:"id"`
	// Provider names the parser of the agent's output; "" for stdout
	// markers only.
	Provider string `json:"provider"`
	// Protocol is how the runtime speaks to it: stdin, stream-json, exec
	// or acp.
	Protocol     agent.Protocol `json:"protocol"`
	NativeResume bool           `json:"nativeResume"`
	NativeFork   bool           `json:"nativeFork"`
	// TurnsOnStdin: one process reads every turn on its stdin; otherwise
	// each turn is a process of its own.
	TurnsOnStdin bool                       `json:"turnsOnStdin"`
	Approvals    *eventstore.ApprovalPolicy `json:"approvals,omitempty"`
	// Shapes are the session shapes it takes, its default first.
	Shapes []eventstore.SessionShape `json:"shapes"`
}

// Agents is the catalog of the registered agents, in the registry's order.
func Agents() []AgentInfo {
	out := make([]AgentInfo, len(registry))
	for i, a := range registry {
		shapes := a.Shapes()
		var shape eventstore.SessionShape
		if len(shapes) > 0 {
			shape = shapes[0]
		}
		c := a.Capabilities()
		out[i] = AgentInfo{ID: a.ID(), Provider: a.Provider(), Protocol: c.Protocol, NativeResume: c.NativeResume,
			NativeFork: c.NativeFork, TurnsOnStdin: a.NewDriver(nil, shape).TurnsOnStdin(), Approvals: a.Approvals(), Shapes: shapes}
	}
	return out
}

// typist is a Driver that types its messages differently into a terminal
// lane than it writes them to a pipe.
type typist interface {
	// Type turns an accepted message into the keys typed into the
	// agent's terminal; ok=false when it cannot be delivered there.
	Type(m *eventstore.MessageAccepted) (data []byte, ok bool, err error)
}

// encode turns an accepted message into the bytes for the agent's lane:
// typed keys on a terminal lane when the driver types, else what the
// driver writes to its structured input.
func encode(d Driver, m *eventstore.MessageAccepted, terminal bool) ([]byte, bool, error) {
	if t, ok := d.(typist); ok && terminal {
		return t.Type(m)
	}
	return d.Encode(m)
}
