package copilot

import (
	"crypto/rand"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
)

// Agent is `copilot -p --output-format json`: each turn is a process, the
// next one resuming the session by the id the first one was given. Copilot
// CLI cannot ask for permission in prompt mode: it runs its tools under
// --allow-all-tools, recorded in the header. Like every exec CLI
// (agent.TurnAgent), copilot -p resumes a session whole; it neither forks
// one nor cuts it at a turn.
type Agent struct{ agent.TurnAgent }

// Capabilities are an exec CLI's, with Copilot CLI's state directory.
func (a Agent) Capabilities() agent.Capabilities {
	c := a.TurnAgent.Capabilities()
	c.StatePaths, c.StateEnv = []string{".copilot/"}, []string{"COPILOT_HOME"}
	return c
}

var _ agent.Agent = Agent{}

var policy = []string{"--allow-all-tools"}

// maxSQLCalls bounds the sql tool calls whose todos statements wait for
// the call to end.
const maxSQLCalls = 64

func (Agent) ID() string       { return agent.Copilot }
func (Agent) Provider() string { return agent.Copilot }

func (Agent) Approvals() *eventstore.ApprovalPolicy { return agent.AgentPolicy(policy) }

func (Agent) LineTypes() []string { return agent.Sorted(lineTypes) }

func (Agent) NewDriver(command []string, _ eventstore.SessionShape) agent.Driver {
	d := &Driver{}
	d.Turns = agent.Turns{Command: command, Program: "copilot", Args: func(prompt, session string) []string {
		args := append([]string{"--output-format", "json"}, policy...)
		d.mu.Lock()
		defer d.mu.Unlock()
		if session == "" {
			// A new session gets an id chosen here, so that its session
			// log can be found while the first turn runs.
			d.session = newUUID()
			return append(args, "--session-id", d.session)
		}
		d.session = session
		return append(args, "--resume", session)
	}, Tail: func(prompt, session string) []string { return []string{"-p", prompt} }}
	return d
}

// Driver runs one launch of Copilot CLI, a process per turn, and reads
// each process's stdout and its session log. It knows its session's id,
// and so where Copilot CLI writes the session log that holds its token
// usage.
type Driver struct {
	agent.Turns
	mu      sync.Mutex
	session string

	// output is the reading of the running turn's stdout and session log,
	// under the runtime's one-reader-at-a-time rule (agent.Reader).
	output
}

var (
	_ agent.Reader  = (*Driver)(nil)
	_ agent.Flusher = (*Driver)(nil)
)

// Output begins the reading of a turn's process.
func (d *Driver) Output(idPrefix string) error {
	s, err := agent.NewStream(agent.Copilot, idPrefix)
	if err != nil {
		return err
	}
	d.output = output{Stream: s, sqlCalls: agent.NewRecent[string](maxSQLCalls)}
	return nil
}

// Session is the id of the session the driver started or resumed.
func (d *Driver) Session() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.session
}

// SideLog is $COPILOT_HOME/session-state/<session>/events.jsonl, with
// COPILOT_HOME defaulting to $HOME/.copilot as Copilot CLI's does.
func (d *Driver) SideLog(env []string) string {
	session := d.Session()
	home := agent.LookupEnv(env, "COPILOT_HOME")
	if home == "" {
		if h := agent.LookupEnv(env, "HOME"); h != "" {
			home = filepath.Join(h, ".copilot")
		}
	}
	if home == "" || session == "" || strings.ContainsAny(session, "/\\") || session == ".." {
		return ""
	}
	return filepath.Join(home, "session-state", session, "events.jsonl")
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
