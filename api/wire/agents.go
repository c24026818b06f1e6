package wire

import "github.com/agentjournal/agentjournal/eventstore"

// The protocols an agent's CLI is spoken to in (Agent.Protocol).
const (
	// ProtocolStdin: any program; messages are text lines on its stdin,
	// signals stdout markers (generic).
	ProtocolStdin = "stdin"
	// ProtocolStreamJSON: one process for the session, its turns and
	// answers as JSON lines on stdin, its output a JSON stream (Claude
	// Code).
	ProtocolStreamJSON = "stream-json"
	// ProtocolExec: one process per turn, the prompt on its command line
	// and its stdin closed (Codex, Copilot).
	ProtocolExec = "exec"
	// ProtocolACP: the Agent Client Protocol, JSON-RPC on the process's
	// stdin and stdout (the ACP presets).
	ProtocolACP = "acp"
	// ProtocolAppServer: Codex's app-server protocol, JSON-RPC on the
	// stdin and stdout of one process for the conversation (codex-app).
	ProtocolAppServer = "app-server"
)

// Agent is one agent the daemon launches, as GET /v1/agents lists it.
type Agent struct {
	// ID is what a launch names in LaunchRequest.Agent.
	ID string `json:"id"`
	// Provider names the parser of the agent's output; empty for an agent
	// that signals by stdout markers only.
	Provider string `json:"provider"`
	// Protocol is one of ProtocolStdin, ProtocolStreamJSON, ProtocolExec,
	// ProtocolACP and ProtocolAppServer.
	Protocol string `json:"protocol"`
	// NativeResume and NativeFork report what the agent's CLI does
	// itself: resume its session, fork it at a message. Otherwise a
	// resume or a fork retells the journal to the new run, and a prompt
	// must follow.
	NativeResume bool `json:"nativeResume"`
	NativeFork   bool `json:"nativeFork"`
	// TurnsOnStdin is true when one process takes every turn on a stdin
	// kept open; false when each turn is a process of its own.
	TurnsOnStdin bool `json:"turnsOnStdin"`
	// Approvals is true when the agent runs under an approval policy the
	// daemon sets: its permission requests journaled for an answer, or
	// decided by the flags it is launched with (an execution's protocol
	// descriptor says which). False for an agent with none (generic).
	Approvals bool `json:"approvals"`
	// Shapes are the session shapes LaunchRequest.Shape accepts for the
	// agent, its default first; empty for an agent whose process is the
	// execution.
	Shapes []eventstore.SessionShape `json:"shapes"`
}

// AgentCatalog is the answer of GET /v1/agents.
type AgentCatalog struct {
	Agents []Agent `json:"agents"`
}
