package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Command is one subcommand. Each parses its own flags from args.
type Command interface {
	Run(ctx context.Context, args []string) error
}

// commandNames lists the top-level commands, in the order help shows them.
var commandNames = []string{"serve", "launch", "fork", "resume", "send", "observe", "stop", "queue", "hosts", "tail", "logs", "token", "mcp", "acp", "demo", "run", "ls", "show", "timeline", "search", "journal", "log", "replay", "narrative", "todos", "approvals", "sessions", "session", "checkpoint", "cmd", "graph", "lineage", "snapshots", "rebuild", "help"}

// newCommand returns the command called name, or nil if there is none.
func newCommand(name string, env *Env) Command {
	switch name {
	case "demo":
		return &DemoCommand{env: env}
	case "serve":
		return &ServeCommand{env: env}
	case "launch":
		return &LaunchCommand{env: env}
	case "fork":
		return &ForkCommand{env: env}
	case "resume":
		return &ResumeCommand{env: env}
	case "send":
		return &SendCommand{env: env}
	case "observe":
		return &ObserveCommand{env: env}
	case "stop":
		return &StopCommand{env: env}
	case "queue":
		return &QueueCommand{env: env}
	case "hosts":
		return &HostsCommand{env: env}
	case "tail":
		return &TailCommand{env: env}
	case "logs":
		return &LogsCommand{env: env}
	case "token":
		return &TokenCommand{env: env}
	case "mcp":
		return &MCPCommand{env: env}
	case "acp":
		return &ACPCommand{env: env}
	case "run":
		return &RunCommand{env: env}
	case "journal":
		return &JournalCommand{env: env}
	case "log":
		return &LogCommand{env: env}
	case "replay":
		return &ReplayCommand{env: env}
	case "narrative":
		return &NarrativeCommand{env: env}
	case "todos":
		return &TodosCommand{env: env}
	case "approvals":
		return &ApprovalsCommand{env: env}
	case "sessions":
		return &SessionsCommand{env: env}
	case "session":
		return &SessionCommand{env: env}
	case "checkpoint":
		return &CheckpointCommand{env: env}
	case "cmd":
		return &CmdCommand{env: env}
	case "graph":
		return &GraphCommand{env: env}
	case "lineage":
		return &LineageCommand{env: env}
	case "ls":
		return &LsCommand{env: env}
	case "show":
		return &ShowCommand{env: env}
	case "timeline":
		return &TimelineCommand{env: env}
	case "snapshots":
		return &SnapshotsCommand{env: env}
	case "rebuild":
		return &RebuildCommand{env: env}
	case "search":
		return &SearchCommand{env: env}
	}
	return nil
}

// helpFor answers "agentjournal help [command [subcommand]]" with the help of
// the named command, found by running it with -h.
func helpFor(global *flag.FlagSet, args []string) error {
	if len(args) == 0 {
		return &helpRequest{text: mainUsage(global)}
	}
	cmd := newCommand(args[0], &Env{Stdout: io.Discard, Stderr: io.Discard})
	if cmd == nil {
		return &usageError{
			err:  fmt.Errorf("no help for unknown command %q (want one of: %s)", args[0], strings.Join(commandNames, ", ")),
			help: mainUsage(global),
		}
	}
	// With -h a command returns its help before it touches the data directory.
	return cmd.Run(context.Background(), slices.Concat(args[1:], []string{"-h"}))
}

func mainUsage(global *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString(`agentjournal keeps a durable journal for every AI agent execution: what the
agent was asked, what was observed, what was decided and how its state moved.
Journals live in an embedded NATS JetStream store in the data directory.

Usage:
  agentjournal [--data DIR] [--sync always|interval] [--nats-url URL] <command> [flags] [args]

Commands:
  serve                 run the daemon: log, read models, policy, runtime, HTTP API, SSE, MCP
  launch -- CMD ARGS... start an agent in the daemon and print its execution id
  send ID TEXT...       send a prompt, or an answer with --answer, to a daemon's agent
  observe ID JSON       record a signal for an execution and print the policy's decision
  stop ID               stop an agent of the daemon and print how it ended
  queue                 the daemon's queued and scheduled launches, next first
  hosts                 the fleet's hosts (daemons on one log): state, load, labels, what runs where
  tail [-f]             print the daemon's events; -f keeps following them
  logs ID [-f]          print what an agent printed that no record holds (stderr, plain stdout)
  mcp                   the signal tools as a stdio MCP server, for launched agents
  demo                  write a realistic example journal and print it
  run -- CMD ARGS...    run one agent in the foreground and journal it, without a daemon
  ls                    list executions (filter by owner, lifecycle, attention)
  show ID               one execution's state, telemetry and newest timeline items
  timeline ID           an execution's timeline, newest first, page by page
  search QUERY...       search every execution's texts, through the daemon
  journal ls            list the journals
  journal cat ID        print one journal, record by record
  journal export ID     write one journal as a JSONL file
  journal import FILE   load a journal from a JSONL file
  log                   print the global log: every journal, in log order
  replay ID             rebuild an execution's state from its journal, as of any sequence
  narrative ID          what an execution or session was asked, ran, waited on and why it ended
  todos ID              an execution's todos (runtime contract AgentTodo) with their status history
  approvals ID          an execution's questions and permission requests, who answered and when
  sessions              the sessions (runs linked by resume) with their status, newest first
  session ID            a session's runs, tasks, todos, approvals and checkpoints
  checkpoint ID         record a checkpoint of an execution as it is now
  cmd ID "/COMMAND"     resolve a slash command into a typed invocation and carry it out
  graph export [ID...]  write the agent DAG of the journals as JSON or Graphviz DOT
  lineage ID            an execution's forks and resumes, history, tool calls and snapshots
  snapshots ls|prune    list or delete the workspace snapshots of executions' git work trees
  rebuild               rebuild the read models from the log, with progress
  help [command]        show the help of a command

Global flags (before the command):
`)
	b.WriteString(flagHelp(global))
	b.WriteString(`
The data directory defaults to $AGENTJOURNAL_DATA, else $XDG_DATA_HOME/agentjournal,
else ~/.local/share/agentjournal, and is created (mode 0700) when missing. Only one
agentjournal at a time can use a data directory. While a daemon (serve) runs on it,
launch, send, observe, stop, queue, hosts, tail, sessions, session, checkpoint and cmd talk to the
daemon, and ls, show, timeline, journal, log, replay, narrative, todos,
approvals, demo and rebuild work through it, printing what they print without
one.

Example:
  agentjournal demo
  agentjournal journal ls

Run 'agentjournal <command> -h' for the flags of a command and an example.
`)
	return b.String()
}

// cmdSpec describes a command for its help text.
type cmdSpec struct {
	// Name is the command as typed, e.g. "journal cat".
	Name string
	// Args is what follows the name in the synopsis, e.g. "ID [--json]".
	Args string
	// Summary is the one-paragraph description.
	Summary string
	// Example is one or more command lines, one per line.
	Example string
}

// newFlagSet returns an empty flag set for the command that reports errors
// instead of printing them.
func (s cmdSpec) newFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet(s.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// help renders the command's help: synopsis, description, flags and example.
func (s cmdSpec) help(fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage:\n  agentjournal [global flags] %s %s\n\n%s\n", s.Name, s.Args, strings.TrimSpace(s.Summary))
	if f := flagHelp(fs); f != "" {
		fmt.Fprintf(&b, "\nFlags:\n%s", f)
	}
	b.WriteString("\nExample:\n")
	for line := range strings.Lines(strings.TrimSpace(s.Example)) {
		fmt.Fprintf(&b, "  %s", line)
	}
	b.WriteString("\n")
	return b.String()
}

// parse parses args, flags and positional arguments in any order, and
// returns the positional ones. -h and --help return a *helpRequest; a bad
// flag returns a *usageError.
func (s cmdSpec) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, &helpRequest{text: s.help(fs)}
			}
			return nil, s.usageErr(fs, "%v", flagError(fs, err))
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			// "--" ends the flags: what follows is positional.
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseNone parses args for a command that takes only flags; a positional
// argument is a *usageError saying why, as hint tells.
func (s cmdSpec) parseNone(fs *flag.FlagSet, args []string, hint string) error {
	pos, err := s.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return s.usageErr(fs, "unexpected argument %q (%s)", pos[0], hint)
	}
	return nil
}

// parseCommand parses args for a command that runs an agent's command line:
// everything after the first -- is that command line, flags included, and
// before it only flags are accepted.
func (s cmdSpec) parseCommand(fs *flag.FlagSet, args []string) (command []string, err error) {
	flagArgs := args
	if i := slices.Index(args, "--"); i >= 0 {
		flagArgs, command = args[:i], args[i+1:]
	}
	pos, err := s.parse(fs, flagArgs)
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		return nil, s.usageErr(fs, "unexpected argument %q: the agent's command goes after --, e.g. agentjournal %s -- %s",
			pos[0], s.Name, strings.Join(pos, " "))
	}
	return command, nil
}

// flagError rewrites an error of the flag package in the spelling the help
// uses (--name) and lists the accepted flags when the flag is unknown.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var known []string
		fs.VisitAll(func(f *flag.Flag) { known = append(known, "--"+f.Name) })
		if len(known) == 0 {
			return fmt.Errorf("unknown flag --%s (this command takes no flags)", name)
		}
		return fmt.Errorf("unknown flag --%s (want one of: %s)", name, strings.Join(known, ", "))
	}
	for _, p := range []string{"for flag -", "needs an argument: -"} {
		msg = strings.Replace(msg, p, p+"-", 1)
	}
	return errors.New(msg)
}

// usageErr is a *usageError with the command's help.
func (s cmdSpec) usageErr(fs *flag.FlagSet, format string, args ...any) error {
	return &usageError{err: fmt.Errorf(s.Name+": "+format, args...), help: s.help(fs)}
}

// flagHelp lists the flags of fs, one per entry, spelled with two dashes.
func flagHelp(fs *flag.FlagSet) string {
	var b strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		synopsis := "--" + f.Name
		if name != "" {
			synopsis += " " + name
		}
		fmt.Fprintf(&b, "  %-22s %s", synopsis, usage)
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" {
			fmt.Fprintf(&b, " (default %s)", f.DefValue)
		}
		b.WriteString("\n")
	})
	return b.String()
}

// helpRequest is returned by a command asked for -h; Main prints the text to
// stdout and exits 0.
type helpRequest struct {
	text string
}

func (h *helpRequest) Error() string { return "help requested" }

// usageError is a command line that cannot be run; Main prints the error and
// the help to stderr and exits 2.
type usageError struct {
	err  error
	help string
}

func (u *usageError) Error() string { return u.err.Error() }
func (u *usageError) Unwrap() error { return u.err }
