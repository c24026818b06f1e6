package codex

import (
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
)

// Agent is `codex exec --json`: each turn is a process with the prompt on
// its command line and stdin closed; the next turn resumes the thread
// (`codex exec resume <thread_id>`). Codex cannot ask for approval in exec
// mode: it runs under the sandbox and approval policy its flags set,
// recorded in the header. Like every exec CLI (agent.TurnAgent), codex exec
// resumes a thread whole; it does not fork one (codex fork is the
// interactive TUI's) nor cut it at a turn.
type Agent struct{ agent.TurnAgent }

// Capabilities are an exec CLI's, with Codex's state directory.
func (a Agent) Capabilities() agent.Capabilities {
	c := a.TurnAgent.Capabilities()
	c.StatePaths, c.StateEnv = []string{".codex/"}, []string{"CODEX_HOME"}
	return c
}

var _ agent.Agent = Agent{}

// policy is the sandbox and approval policy of every Codex launch, as
// config overrides, which `exec` and `exec resume` both accept.
var policy = []string{"-c", `sandbox_mode="workspace-write"`, "-c", `approval_policy="never"`}

func (Agent) ID() string       { return agent.Codex }
func (Agent) Provider() string { return agent.Codex }

func (Agent) Approvals() *eventstore.ApprovalPolicy { return agent.AgentPolicy(policy) }

func (Agent) LineTypes() []string { return agent.Sorted(lineTypes) }

func (Agent) NewDriver(command []string, _ eventstore.SessionShape) agent.Driver {
	return &Driver{Turns: agent.Turns{Command: command, Program: "codex", Args: func(prompt, session string) []string {
		args := []string{"exec"}
		if session != "" {
			args = append(args, "resume")
		}
		args = append(append(args, "--json", "--skip-git-repo-check"), policy...)
		return args
	}, Tail: func(prompt, session string) []string {
		// After --, a prompt that starts with a dash is not read as a flag.
		if session != "" {
			return []string{"--", session, prompt}
		}
		return []string{"--", prompt}
	}}}
}

// Driver runs one launch of Codex, a process per turn, and reads each
// process's stdout.
type Driver struct {
	agent.Turns
	// session is what is known of the thread's usage, from one turn's
	// process to the next.
	session session
	// output is the reading of the running turn's stdout, under the
	// runtime's one-reader-at-a-time rule (agent.Reader).
	output
}

var (
	_ agent.Reader         = (*Driver)(nil)
	_ agent.Flusher        = (*Driver)(nil)
	_ agent.VersionReader  = (*Driver)(nil)
	_ agent.SessionCounter = (*Driver)(nil)
	_ agent.Versioned      = Agent{}
)

// VersionCommand asks Codex its version: `codex --version` prints
// "codex-cli 0.169.0". Its output never says it.
func (Agent) VersionCommand(command []string) (string, []string) {
	return agent.VersionFlag(command, "codex")
}

// Output begins the reading of a turn's process.
func (d *Driver) Output(idPrefix string) error {
	s, err := agent.NewStream(agent.Codex, idPrefix)
	if err != nil {
		return err
	}
	s.KnowVersion(d.session.version)
	d.output = output{Stream: s}
	return nil
}
