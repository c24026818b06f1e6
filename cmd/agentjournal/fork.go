package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/workspace"
)

// ForkCommand launches a fork of an execution in the running daemon.
type ForkCommand struct{ env *Env }

var forkSpec = cmdSpec{
	Name: "fork",
	Args: "ID --at SEQ [--workspace keep|snapshot|discard] [--prompt TEXT] [--seed S] [--env NAME=VALUE]... [--command JSON --cwd DIR | --trust-imported-command] [--json]",
	Summary: `Launch, in the running daemon, a new execution that branches off the
agent execution ID after its journal sequence SEQ, and print its id. The fork's
header links to that record (forkedFrom, with its event id); its journal holds
only its own records, and replay shows the parent's up to SEQ before them. It
runs the parent's agent with the parent's command, shape and posture.

Its agent gets the conversation up to SEQ: Claude Code forks its own session at
the last message there (history native); every other agent gets it retold in
its first message, before --prompt, which it then needs (history
reconstructed). --workspace gives it the parent's directory (keep, the
default), a git worktree at the newest workspace snapshot at or before SEQ
(snapshot), or a new empty directory (discard). The parent's environment is not
journaled: give what the agent needs again with --env. See docs/fork.md.

` + importedHelp,
	Example: "agentjournal fork ae-0123456789abcdef01234567 --at 12 --prompt \"try the other approach\"\n" +
		"agentjournal fork ae-0123456789abcdef01234567 --at 12 --workspace snapshot --prompt \"again, from there\"",
}

// Run implements Command.
func (c *ForkCommand) Run(ctx context.Context, args []string) error {
	fs := forkSpec.newFlagSet()
	at := fs.Uint64("at", 0, "branch off after the parent's journal sequence `SEQ` (1 or more)")
	mode := fs.String("workspace", string(workspace.ModeKeep), "the fork's working directory `MODE`: keep (the parent's), snapshot (a worktree at the snapshot at or before SEQ) or discard (a new empty one)")
	prompt := fs.String("prompt", "", "the fork's first instruction `TEXT`")
	seed := fs.String("seed", "", "derive the fork's execution id from `S` (default: random)")
	var env envFlag
	fs.Var(&env, "env", "add `NAME=VALUE` to the agent's environment (repeatable)")
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON")
	imported := importedFlagsOf(fs)
	id, err := forkSpec.parseID(fs, args)
	if err != nil {
		return err
	}
	if *at == 0 {
		return forkSpec.usageErr(fs, "missing --at SEQ (want the parent's journal sequence the fork branches after, 1 or more; 'agentjournal journal cat %s' shows them)", id)
	}
	if _, err := workspace.ParseMode(*mode); err != nil {
		return forkSpec.usageErr(fs, "--workspace %q: want one of keep, snapshot, discard", *mode)
	}
	return c.env.withDaemon(ctx, func(cl *client.Client) error {
		var res client.Launched
		err := c.env.withImported(imported, id, func(confirm *client.ImportedCommand) (err error) {
			res, err = cl.Fork(ctx, id, client.ForkRequest{At: *at, Workspace: *mode, Prompt: *prompt, Seed: *seed, Env: envMap(env), ConfirmImported: confirm})
			return err
		})
		if err != nil {
			return fmt.Errorf("fork %s: %w", id, err)
		}
		return c.env.printLaunched(res, *asJSON, "forked "+id+" at "+fmt.Sprint(*at)+" as")
	})
}

// ResumeCommand launches a new run of an execution's session in the
// running daemon.
type ResumeCommand struct{ env *Env }

var resumeSpec = cmdSpec{
	Name: "resume",
	Args: "ID [--prompt TEXT] [--seed S] [--env NAME=VALUE]... [--command JSON --cwd DIR | --trust-imported-command] [--json]",
	Summary: `Launch, in the running daemon, a new run of the session of the agent
execution ID, which must have ended, and print the new execution's id. Its
header resumes ID and keeps its sessionId; it runs in ID's directory with ID's
agent and command, and ID's own journal and lifecycle are left as they are.
Claude Code, Codex and Copilot CLI resume their own session (history native);
other agents get the session's conversation retold in their first message,
before --prompt, which they then need (history reconstructed). The environment
is not journaled: give what the agent needs again with --env.

` + importedHelp,
	Example: "agentjournal resume ae-0123456789abcdef01234567 --prompt \"and now the tests\"",
}

// Run implements Command.
func (c *ResumeCommand) Run(ctx context.Context, args []string) error {
	fs := resumeSpec.newFlagSet()
	prompt := fs.String("prompt", "", "the run's first instruction `TEXT`")
	seed := fs.String("seed", "", "derive the new execution id from `S` (default: random)")
	var env envFlag
	fs.Var(&env, "env", "add `NAME=VALUE` to the agent's environment (repeatable)")
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON")
	imported := importedFlagsOf(fs)
	id, err := resumeSpec.parseID(fs, args)
	if err != nil {
		return err
	}
	return c.env.withDaemon(ctx, func(cl *client.Client) error {
		var res client.Launched
		err := c.env.withImported(imported, id, func(confirm *client.ImportedCommand) (err error) {
			res, err = cl.Resume(ctx, id, client.ResumeRequest{Prompt: *prompt, Seed: *seed, Env: envMap(env), ConfirmImported: confirm})
			return err
		})
		if err != nil {
			return fmt.Errorf("resume %s: %w", id, err)
		}
		return c.env.printLaunched(res, *asJSON, "resumed "+id+" as")
	})
}

// importedHelp is what fork's and resume's help say of imported journals.
const importedHelp = `An execution whose journal was imported ('journal import', POST /v1/journals)
runs the command and directory its file gave, which whoever wrote the file
chose: the daemon refuses to run them unless they are restated. The refusal
prints them; check them, then restate them with --command (the command as a
JSON array, as printed) and --cwd, or pass --trust-imported-command to run
what was printed.`

// importedFlags restate the command and directory of an execution whose
// journal was imported, for fork and resume.
type importedFlags struct {
	command, cwd *string
	trust        *bool
}

func importedFlagsOf(fs *flag.FlagSet) importedFlags {
	return importedFlags{
		command: fs.String("command", "", "for an imported journal: restate the command it would run, as a JSON `ARRAY` (as the refusal prints it)"),
		cwd:     fs.String("cwd", "", "for an imported journal: restate the working `DIR` it would run in"),
		trust:   fs.Bool("trust-imported-command", false, "for an imported journal: run the command and directory it gave, printed first, without restating them"),
	}
}

// confirm is what the flags restate; nil when they restate nothing.
func (f importedFlags) confirm() (*client.ImportedCommand, error) {
	if *f.command == "" && *f.cwd == "" {
		return nil, nil
	}
	var command []string
	if *f.command != "" {
		if err := json.Unmarshal([]byte(*f.command), &command); err != nil {
			return nil, fmt.Errorf("--command %q is not a JSON array of strings (%v); give it as the refusal prints it, e.g. [\"claude\",\"--model\",\"opus\"]", *f.command, err)
		}
	}
	return &client.ImportedCommand{Command: command, WorkingDirectory: *f.cwd}, nil
}

// withImported calls call with what the flags restate. When the daemon
// refuses because the execution's journal was imported, it prints the
// command and directory that would run; with --trust-imported-command (and
// nothing restated) it calls again restating them, otherwise it says how to.
func (e *Env) withImported(f importedFlags, id string, call func(confirm *client.ImportedCommand) error) error {
	confirm, err := f.confirm()
	if err != nil {
		return err
	}
	err = call(confirm)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Imported == nil {
		return err
	}
	im := ce.Imported
	command, _ := json.Marshal(im.Command)
	shown := string(command)
	if len(im.Command) == 0 {
		shown += " (the agent's default program)"
	}
	fmt.Fprintf(e.Stderr, "agentjournal: the journal of %s was imported from a file, which gave what would run (agent %s):\n  command:   %s\n  directory: %s\n",
		id, im.AgentID, shown, im.WorkingDirectory)
	if !*f.trust || confirm != nil {
		return fmt.Errorf("refusing to run what an imported journal gave unless it is restated: check it, then pass --command '%s' --cwd %q, or --trust-imported-command", command, im.WorkingDirectory)
	}
	fmt.Fprintf(e.Stderr, "agentjournal: running it, as --trust-imported-command asks\n")
	return call(im)
}

// envMap turns --env flags into the API's map.
func envMap(env envFlag) map[string]string {
	var out map[string]string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

// printLaunched prints a new execution's id, or the daemon's answer.
func (e *Env) printLaunched(res client.Launched, asJSON bool, what string) error {
	if asJSON {
		return writeJSONLine(e.Stdout, res)
	}
	id := res.Reference.AgentExecutionID
	fmt.Fprintln(e.Stdout, id)
	fmt.Fprintf(e.Stderr, "agentjournal: %s %s (%s, %s); follow it with: %s tail -f --execution %s\n",
		what, id, res.State.AgentID, res.State.Lifecycle, e.hintPrefix(), id)
	return nil
}
