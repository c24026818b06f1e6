package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
	"github.com/agentjournal/agentjournal/sandbox"
)

// SandboxMode says which launches of a runtime run sandboxed.
type SandboxMode string

const (
	// SandboxOnRequest sandboxes the launches that ask (the zero value).
	SandboxOnRequest SandboxMode = ""
	// SandboxDefault sandboxes every launch but those that opt out.
	SandboxDefault SandboxMode = "default"
	// SandboxRequired sandboxes every launch and refuses one that opts out.
	SandboxRequired SandboxMode = "required"
)

// SandboxModes lists the accepted modes.
var SandboxModes = []SandboxMode{SandboxOnRequest, SandboxDefault, SandboxRequired}

// SandboxConfig is how a runtime sandboxes its agents (package sandbox).
type SandboxConfig struct {
	Mode SandboxMode
	// Network is the network of a sandboxed launch that names none; ""
	// is the host's.
	Network sandbox.Network
	// Hidden are the paths no sandboxed agent may read: the data
	// directory and every secret file of the daemon (its API token, the
	// NATS secret, the environment profiles), wherever they are.
	Hidden []string
	// Writable are paths every sandboxed agent may change, besides its
	// working directory and its CLI's state.
	Writable []string
}

// SandboxRequest is what a launch asks of the sandbox.
type SandboxRequest struct {
	// Enabled runs the agent sandboxed; false opts out of a runtime's
	// SandboxDefault, and is refused under SandboxRequired.
	Enabled bool `json:"enabled"`
	// Network is host or none; "" takes the runtime's.
	Network string `json:"network,omitempty"`
	// Write are more paths the agent may change (absolute).
	Write []string `json:"write,omitempty"`
}

// sandboxPolicy works out the sandbox of a launch, nil when it runs
// unconfined. env is the agent's environment as far as the launch knows
// it: the CLI's state directories are found from its HOME. A launch that
// asks for a sandbox this host cannot make is refused here, before
// anything is journaled.
func (rt *Runtime) sandboxPolicy(ctx context.Context, a Adapter, req LaunchRequest, env []string) (*sandbox.Policy, error) {
	cfg := rt.cfg.Sandbox
	on := cfg.Mode != SandboxOnRequest
	if r := req.Sandbox; r != nil {
		if !r.Enabled && cfg.Mode == SandboxRequired {
			return nil, fmt.Errorf("%w: this host runs every agent sandboxed (serve --sandbox=required), so a launch cannot opt out", ErrBadLaunch)
		}
		on = r.Enabled
	}
	if !on {
		return nil, nil
	}
	network := cfg.Network
	if r := req.Sandbox; r != nil && r.Network != "" {
		network = sandbox.Network(r.Network)
	}
	p := &sandbox.Policy{Dir: req.Dir, Network: network, Hidden: slices.Clone(cfg.Hidden)}
	if p.Network == "" {
		p.Network = sandbox.NetworkHost
	}
	p.Writable = append(p.Writable, cfg.Writable...)
	if r := req.Sandbox; r != nil {
		p.Writable = append(p.Writable, r.Write...)
	}
	state, err := stateDirs(a, env)
	if err != nil {
		return nil, err
	}
	p.Writable = append(p.Writable, state...)
	if tmp := agent.LookupEnv(env, "TMPDIR"); filepath.IsAbs(tmp) && filepath.Clean(tmp) != "/tmp" {
		// Its temporary files go to a private directory, as /tmp's do.
		p.Private = append(p.Private, tmp)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadLaunch, err)
	}
	if _, err := sandbox.Check(ctx); err != nil {
		return nil, fmt.Errorf("%w: the launch asks for a sandbox, and none can be made here, so nothing was run: %w", ErrBadLaunch, err)
	}
	return p, nil
}

// launchSandbox is sandboxPolicy for a launch being planned: its
// environment is this process's, the profile's and the launch's own, as
// start will make it.
func (rt *Runtime) launchSandbox(a Adapter, req LaunchRequest) (*sandbox.Policy, error) {
	if !filepath.IsAbs(req.Dir) {
		dir, err := filepath.Abs(req.Dir)
		if err != nil {
			return nil, fmt.Errorf("launch: the working directory %q: %w", req.Dir, err)
		}
		req.Dir = dir
	}
	env := slices.Concat(os.Environ(), rt.cfg.EnvProfiles[req.EnvProfile], req.Env)
	return rt.sandboxPolicy(context.Background(), a, req, env)
}

// stateDirs are the paths where an agent's CLI keeps its own state
// (agent.Capabilities.StatePaths under HOME, or where StateEnv points),
// which it writes on every run. A directory that does not exist yet is
// made, so that the CLI finds it writable.
func stateDirs(a Adapter, env []string) ([]string, error) {
	c := a.Capabilities()
	var out []string
	for _, name := range c.StateEnv {
		if v := agent.LookupEnv(env, name); filepath.IsAbs(v) {
			out = append(out, v)
		}
	}
	home := agent.LookupEnv(env, "HOME")
	if !filepath.IsAbs(home) {
		return out, nil
	}
	for _, rel := range c.StatePaths {
		path := filepath.Join(home, rel)
		if strings.HasSuffix(rel, "/") {
			if err := os.MkdirAll(path, 0o700); err != nil {
				return nil, fmt.Errorf("make %s's state directory %s for its sandbox: %w", a.ID(), path, err)
			}
		}
		out = append(out, path)
	}
	return out, nil
}

// sandboxFacts is the header's account of a policy.
func sandboxFacts(p *sandbox.Policy) *eventstore.SandboxPolicy {
	if p == nil {
		return nil
	}
	return &eventstore.SandboxPolicy{Network: string(p.Network), Writable: append([]string{p.Dir}, p.Writable...), Hidden: p.Hidden}
}

// command is the command line that runs program with args as the
// execution's process: under bwrap when it is sandboxed. A host that
// cannot make the sandbox any more fails the start: the agent never runs
// unconfined.
func (p *process) command(program string, args []string) (string, []string, error) {
	if p.sandbox == nil {
		return program, args, nil
	}
	return sandbox.Wrap(context.Background(), *p.sandbox, program, args)
}
