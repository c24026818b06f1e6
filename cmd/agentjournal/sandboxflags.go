package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/runtime"
	"github.com/agentjournal/agentjournal/sandbox"
)

// sandboxModeFlag is serve's --sandbox: alone it sandboxes every launch
// that does not opt out, =required every launch, =false only those that
// ask.
type sandboxModeFlag struct{ mode runtime.SandboxMode }

func (f *sandboxModeFlag) IsBoolFlag() bool { return true }

func (f *sandboxModeFlag) String() string {
	if f == nil || f.mode == runtime.SandboxOnRequest {
		return "false"
	}
	return string(f.mode)
}

func (f *sandboxModeFlag) Set(s string) error {
	switch s {
	case "true", string(runtime.SandboxDefault):
		f.mode = runtime.SandboxDefault
	case string(runtime.SandboxRequired):
		f.mode = runtime.SandboxRequired
	case "false":
		f.mode = runtime.SandboxOnRequest
	default:
		return fmt.Errorf("%q: want --sandbox (every launch but those that opt out), --sandbox=required or --sandbox=false (only launches that ask)", s)
	}
	return nil
}

// optionalBool is a boolean flag that knows whether it was given.
type optionalBool struct{ v *bool }

func (f *optionalBool) IsBoolFlag() bool { return true }

func (f *optionalBool) String() string {
	if f == nil || f.v == nil {
		return ""
	}
	return strconv.FormatBool(*f.v)
}

func (f *optionalBool) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("%q: want true or false", s)
	}
	f.v = &b
	return nil
}

// pathsFlag collects a repeatable flag's absolute paths.
type pathsFlag []string

func (p *pathsFlag) String() string { return fmt.Sprint([]string(*p)) }

func (p *pathsFlag) Set(s string) error {
	abs, err := filepath.Abs(s)
	if err != nil {
		return fmt.Errorf("%q: %w", s, err)
	}
	*p = append(*p, abs)
	return nil
}

// sandboxNetworkHelp is the help of --sandbox-network, launch's and serve's.
var sandboxNetworkHelp = "the `NETWORK` of a sandboxed agent: host (the host's network, so the model's API, and loopback ports too) or none (loopback only, its own)"

// sandboxFlags are launch's sandbox flags.
type sandboxFlags struct {
	on      optionalBool
	network *string
	write   pathsFlag
}

func (s *sandboxFlags) register(fs *flag.FlagSet) {
	fs.Var(&s.on, "sandbox", "run the agent under bubblewrap: the file system read-only but for --dir and the CLI's state directories, the daemon's data directory and secrets absent; --sandbox=false opts out of serve --sandbox (default: the daemon's)")
	s.network = fs.String("sandbox-network", "", sandboxNetworkHelp+" (default: the daemon's, host)")
	fs.Var(&s.write, "sandbox-write", "let the sandboxed agent also change `PATH` (repeatable)")
}

// request is the launch's sandbox request; nil takes the daemon's default.
func (s *sandboxFlags) request() (*client.LaunchSandbox, error) {
	if s.on.v == nil && *s.network == "" && len(s.write) == 0 {
		return nil, nil
	}
	if *s.network != "" {
		if _, err := sandbox.ParseNetwork(*s.network); err != nil {
			return nil, fmt.Errorf("--sandbox-network: %w", err)
		}
	}
	// --sandbox-network and --sandbox-write ask for a sandbox.
	on := s.on.v == nil || *s.on.v
	if !on && (*s.network != "" || len(s.write) > 0) {
		return nil, fmt.Errorf("--sandbox=false with --sandbox-network or --sandbox-write: the flags of a sandbox go with one")
	}
	return &client.LaunchSandbox{Enabled: on, Network: *s.network, Write: s.write}, nil
}

// sandboxConfig is serve's sandbox configuration. Beside the data
// directory and the token file, which the daemon hides itself, the NATS
// secret file and the environment profiles may be kept elsewhere: they
// are hidden too. A daemon that sandboxes by default checks at once that
// it can.
func (c *ServeCommand) sandboxConfig(ctx context.Context, mode runtime.SandboxMode, network string, write, profiles []string) (runtime.SandboxConfig, error) {
	n, err := sandbox.ParseNetwork(network)
	if err != nil {
		return runtime.SandboxConfig{}, fmt.Errorf("--sandbox-network: %w", err)
	}
	cfg := runtime.SandboxConfig{Mode: mode, Network: n, Writable: write, Hidden: profiles}
	if f := c.env.NATSSecretFile; f != "" {
		if abs, err := filepath.Abs(f); err == nil {
			cfg.Hidden = append(cfg.Hidden, abs)
		}
	}
	if mode != runtime.SandboxOnRequest {
		if _, err := sandbox.Check(ctx); err != nil {
			return cfg, fmt.Errorf("--sandbox: %w", err)
		}
	}
	return cfg, nil
}
