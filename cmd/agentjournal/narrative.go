package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/narrative"
)

// NarrativeCommand renders an execution's or a session's journals as a
// narrative.
type NarrativeCommand struct {
	env *Env
}

var narrativeSpec = cmdSpec{
	Name: "narrative",
	Args: "ID [--session] [--audit] [--format md|html|json] [--out FILE]",
	Summary: `Tell what happened in the agent execution ID from its journal alone, as a
story, turn by turn: what was asked, what the agent did (files read apart
from files written or edited, commands, searches; failures and denials with
their error and output), what it said (its messages as Markdown), where it
waited and who answered what, the tokens of each turn and in all, and how the
run ended. Each turn names the records it spans in a footnote. With --audit,
list instead every line on the record it stands on (execution, sequence,
event id), lines restating one record marked observed, lines derived from
several (a blocked period, a turn's tool calls) inferred. A journal missing
records still renders, saying what is missing. With --session, tell every
run of ID's session (ID is the session or any of its executions) in order,
with what came between them. The formats are Markdown (md, the default), one
self-contained HTML page (html) and JSON (json, always the line form); see
docs/narrative.md.`,
	Example: "agentjournal narrative ae-0123456789abcdef01234567\n" +
		"agentjournal narrative ae-0123456789abcdef01234567 --session --format html --out run.html\n" +
		"agentjournal narrative ae-0123456789abcdef01234567 --audit",
}

// Run implements Command.
func (c *NarrativeCommand) Run(ctx context.Context, args []string) error {
	fs := narrativeSpec.newFlagSet()
	session := fs.Bool("session", false, "tell every run of the execution's session")
	audit := fs.Bool("audit", false, "list every line on its record instead of telling the story")
	format := fs.String("format", "md", "render as `FORMAT`: md, html or json")
	out := fs.String("out", "", "write to `FILE` instead of standard output")
	id, err := narrativeSpec.parseID(fs, args)
	if err != nil {
		return err
	}
	if _, ok := narrative.Formats[*format]; !ok {
		return narrativeSpec.usageErr(fs, "unknown --format %q (want md, html or json)", *format)
	}
	var doc bytes.Buffer
	err = c.env.withJournals(ctx, func(s eventstore.Store) error {
		var n *narrative.Narrative
		var err error
		if *session {
			n, err = narrative.Session(ctx, s, id)
		} else {
			n, err = narrative.Execution(ctx, s, id)
		}
		if errors.Is(err, eventstore.ErrJournalNotFound) {
			return fmt.Errorf("no journal for agent execution or session %q in %s (list them with: %s journal ls)", id, c.env.DataDir, c.env.hintPrefix())
		}
		if err != nil {
			return err
		}
		return narrative.Render(&doc, n, *format, *audit)
	})
	if err != nil {
		return err
	}
	if *out == "" {
		_, err = c.env.Stdout.Write(doc.Bytes())
		return err
	}
	// The document is built whole first, so a failed read leaves no
	// half-written file.
	return os.WriteFile(*out, doc.Bytes(), 0o644)
}
