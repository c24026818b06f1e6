package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/workspace"
)

// SnapshotsCommand dispatches "agentjournal snapshots <subcommand>".
type SnapshotsCommand struct {
	env *Env
}

var snapshotsSpec = cmdSpec{
	Name: "snapshots",
	Args: "<ls|prune> [flags] [args]",
	Summary: `Work with the workspace snapshots the runtime takes of an execution's git
work tree, before its first turn and at each turn boundary, as commits under
refs/agentjournal/<execution>/<sequence> of the user's repository.

  snapshots ls [ID]     list the snapshot refs of a repository, or of one execution
  snapshots prune       delete snapshot refs (--execution ID, --before, or --all)

Run 'agentjournal snapshots <subcommand> -h' for its flags.`,
	Example: "agentjournal snapshots ls ae-0123456789abcdef01234567\nagentjournal snapshots prune --before 168h",
}

var snapshotsSubcommands = []string{"ls", "prune"}

// Run implements Command.
func (c *SnapshotsCommand) Run(ctx context.Context, args []string) error {
	fs := snapshotsSpec.newFlagSet()
	if len(args) == 0 {
		return snapshotsSpec.usageErr(fs, "missing subcommand (want one of: %s)", strings.Join(snapshotsSubcommands, ", "))
	}
	switch args[0] {
	case "ls":
		return (&SnapshotsLsCommand{env: c.env}).Run(ctx, args[1:])
	case "prune":
		return (&SnapshotsPruneCommand{env: c.env}).Run(ctx, args[1:])
	}
	if _, err := snapshotsSpec.parse(fs, args); err != nil {
		return err // -h, or an unknown flag
	}
	return snapshotsSpec.usageErr(fs, "unknown subcommand %q (want one of: %s)", args[0], strings.Join(snapshotsSubcommands, ", "))
}

// SnapshotsLsCommand lists snapshot refs.
type SnapshotsLsCommand struct {
	env *Env
}

var snapshotsLsSpec = cmdSpec{
	Name: "snapshots ls",
	Args: "[ID] [--dir DIR]",
	Summary: `List the snapshot refs of the repository DIR is in, one line each: the
execution, the journal sequence the snapshot was taken after, its commit and
when it was taken. With ID, only that execution's, in the working directory
its journal names unless --dir says otherwise; snapshots its journal records
whose ref was pruned are listed as pruned.`,
	Example: "agentjournal snapshots ls ae-0123456789abcdef01234567\nagentjournal snapshots ls --dir ~/src/project",
}

// Run implements Command.
func (c *SnapshotsLsCommand) Run(ctx context.Context, args []string) error {
	fs := snapshotsLsSpec.newFlagSet()
	dir := fs.String("dir", "", "the repository `DIR` (default: the execution's working directory, else the current directory)")
	pos, err := snapshotsLsSpec.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return snapshotsLsSpec.usageErr(fs, "too many arguments %q (want at most one ID)", pos)
	}
	var id string
	var recorded []*eventstore.SnapshotCreated
	if len(pos) == 1 {
		id = pos[0]
		if err := workspace.CheckExecutionID(id); err != nil {
			return snapshotsLsSpec.usageErr(fs, "%v", err)
		}
		workDir, snaps, err := c.env.executionSnapshots(ctx, id)
		if err != nil {
			return err
		}
		recorded = snaps
		if *dir == "" {
			*dir = workDir
		}
	}
	if *dir, err = repoDir(*dir); err != nil {
		return err
	}
	var refs []workspace.Ref
	if id != "" {
		refs, err = workspace.List(ctx, *dir, id)
	} else {
		refs, err = workspace.List(ctx, *dir)
	}
	if err != nil {
		return snapshotsErr(err, *dir)
	}
	w := tabwriter.NewWriter(c.env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "EXECUTION\tSEQ\tCOMMIT\tCREATED\tSTATE")
	have := map[string]bool{}
	for _, r := range refs {
		have[r.Name] = true
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\tkept\n", r.ExecutionID, r.Sequence, r.Commit, r.Created.Local().Format(time.RFC3339))
	}
	for _, s := range recorded {
		if !have[s.Ref] {
			fmt.Fprintf(w, "%s\t%d\t%s\t%s\tpruned\n", id, s.AtSequence, s.Commit, s.OccurredAt.Local().Format(time.RFC3339))
		}
	}
	return w.Flush()
}

// SnapshotsPruneCommand deletes snapshot refs.
type SnapshotsPruneCommand struct {
	env *Env
}

var snapshotsPruneSpec = cmdSpec{
	Name: "snapshots prune",
	Args: "(--execution ID | --before DURATION|TIME | --all) [--dir DIR]",
	Summary: `Delete snapshot refs of the repository DIR is in and print them: those of
one execution (--execution; DIR defaults to its journal's working directory),
those taken before a time (--before 168h, or an RFC 3339 time; may go with
--execution), or every one (--all, alone). Only refs under refs/agentjournal/
are deleted; the commits go at the next git gc. A fork can no longer restore
a pruned snapshot; the journal's snapshot.created records stay.`,
	Example: "agentjournal snapshots prune --execution ae-0123456789abcdef01234567\nagentjournal snapshots prune --before 2026-01-01T00:00:00Z --dir ~/src/project",
}

// Run implements Command.
func (c *SnapshotsPruneCommand) Run(ctx context.Context, args []string) error {
	fs := snapshotsPruneSpec.newFlagSet()
	execID := fs.String("execution", "", "delete the snapshots of the execution `ID`")
	before := fs.String("before", "", "delete the snapshots taken before `WHEN`: a duration ago (168h) or an RFC 3339 time")
	all := fs.Bool("all", false, "delete every snapshot of the repository")
	dir := fs.String("dir", "", "the repository `DIR` (default: the execution's working directory, else the current directory)")
	pos, err := snapshotsPruneSpec.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return snapshotsPruneSpec.usageErr(fs, "unexpected arguments %q (name the execution with --execution ID)", pos)
	}
	var filter workspace.Filter
	switch {
	case *execID == "" && *before == "" && !*all:
		return snapshotsPruneSpec.usageErr(fs, "missing filter (want one of: --execution ID, --before DURATION|TIME, --all)")
	case *all && (*execID != "" || *before != ""):
		return snapshotsPruneSpec.usageErr(fs, "--all goes alone (it deletes every snapshot); drop --execution and --before")
	}
	filter.All = *all
	if *before != "" {
		if filter.Before, err = parseBefore(*before, time.Now()); err != nil {
			return snapshotsPruneSpec.usageErr(fs, "%v", err)
		}
	}
	if *execID != "" {
		if err := workspace.CheckExecutionID(*execID); err != nil {
			return snapshotsPruneSpec.usageErr(fs, "%v", err)
		}
		filter.ExecutionID = *execID
		if *dir == "" {
			workDir, _, err := c.env.executionSnapshots(ctx, *execID)
			if err != nil {
				return fmt.Errorf("%w (or name the repository with --dir)", err)
			}
			*dir = workDir
		}
	}
	if *dir, err = repoDir(*dir); err != nil {
		return err
	}
	gone, err := workspace.Prune(ctx, *dir, filter)
	if err != nil {
		return snapshotsErr(err, *dir)
	}
	for _, r := range gone {
		fmt.Fprintf(c.env.Stdout, "pruned %s %s\n", r.Name, r.Commit)
	}
	fmt.Fprintf(c.env.Stdout, "%d snapshots pruned in %s\n", len(gone), *dir)
	return nil
}

// parseBefore reads --before: a duration before now, or an RFC 3339 time.
func parseBefore(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("--before %s: want a positive duration (e.g. 168h) or an RFC 3339 time", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--before %q is neither a duration (e.g. 168h) nor an RFC 3339 time (e.g. 2026-01-02T15:04:05Z)", s)
	}
	return t, nil
}

// executionSnapshots reads an execution's working directory and its
// snapshot.created records from its journal.
func (e *Env) executionSnapshots(ctx context.Context, id string) (string, []*eventstore.SnapshotCreated, error) {
	var dir string
	var snaps []*eventstore.SnapshotCreated
	err := e.withJournals(ctx, func(s eventstore.Store) error {
		ref, err := lookup(ctx, s, id, e)
		if err != nil {
			return err
		}
		for en, err := range s.ReadJournal(ctx, ref, 1) {
			if err != nil {
				return err
			}
			switch r := en.Record.(type) {
			case *eventstore.Header:
				dir = r.WorkingDirectory
			case *eventstore.SnapshotCreated:
				snaps = append(snaps, r)
			}
		}
		return nil
	})
	return dir, snaps, err
}

// repoDir is the directory given, or the current one.
func repoDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("the current directory: %w (name one with --dir)", err)
	}
	return wd, nil
}

// snapshotsErr says what to do about a directory outside a git work tree.
func snapshotsErr(err error, dir string) error {
	if errors.Is(err, workspace.ErrNotGit) {
		return fmt.Errorf("%s has no snapshots: %w (want a directory inside a git work tree; name it with --dir)", dir, err)
	}
	return err
}

var _ Command = (*SnapshotsCommand)(nil)

// onOff is a flag spelled on or off, such as --snapshots.
type onOff bool

func (o *onOff) String() string {
	if o != nil && bool(*o) {
		return "on"
	}
	return "off"
}

func (o *onOff) Set(s string) error {
	switch s {
	case "on":
		*o = true
	case "off":
		*o = false
	default:
		return fmt.Errorf("%q is not accepted (want on or off)", s)
	}
	return nil
}

// defaultSnapshots is --snapshots when not given.
var defaultSnapshots = true

// snapshotsFlag adds --snapshots, on unless the user says off.
func snapshotsFlag(fs *flag.FlagSet) *onOff {
	on := onOff(defaultSnapshots)
	fs.Var(&on, "snapshots", "snapshot the agent's git work tree before its first turn and at each turn boundary, as refs/agentjournal/<execution>/<sequence> commits (`on` or off; see snapshots ls)")
	return &on
}
