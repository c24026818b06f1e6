package main

import (
	"context"
	"errors"
	"fmt"
	"html"
	"strings"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/search"
)

// SearchCommand runs a full-text query through the daemon.
type SearchCommand struct{ env *Env }

var searchSpec = cmdSpec{
	Name: "search",
	Args: "QUERY... [--owner ENTITY[/ID]] [--agent NAME] [--lifecycle L] [--since T] [--until T] [--limit N] [--json]",
	Summary: `Search the texts of every execution: prompts and messages, questions and
their choices, blocked reasons, plan items, and tool targets (files,
commands, URLs). QUERY is words, "a phrase", +required, -excluded or
prefix*; the best hits come first, each with its execution, the record's
sequence and kind, when it was written, and the text around the matches in
[brackets]. --lifecycle is the execution's current one; --since and --until
take an RFC 3339 time or a duration before now (24h). The daemon keeps the
index and answers: start one with serve.`,
	Example: "agentjournal search flaky test\nagentjournal search '\"connection refused\"' --owner Task/t-42 --since 24h\nagentjournal search 'migrat*' --lifecycle failed --json",
}

// Run implements Command.
func (c *SearchCommand) Run(ctx context.Context, args []string) error {
	fs := searchSpec.newFlagSet()
	owner := fs.String("owner", "", "only executions of `ENTITY[/ID]` (e.g. Task or Task/t-42)")
	agent := fs.String("agent", "", "only executions of agent `NAME`")
	lifecycle := fs.String("lifecycle", "", "only executions now in lifecycle `L`")
	since := fs.String("since", "", "only records written at or after `T` (RFC 3339 or a duration before now)")
	until := fs.String("until", "", "only records written before `T` (RFC 3339 or a duration before now)")
	limit := fs.Int("limit", 0, fmt.Sprintf("at most `N` hits (1 to %d; default %d)", search.MaxLimit, search.DefaultLimit))
	asJSON := fs.Bool("json", false, "print one hit JSON object per line")
	pos, err := searchSpec.parse(fs, args)
	if err != nil {
		return err
	}
	q := strings.TrimSpace(strings.Join(pos, " "))
	if q == "" {
		return searchSpec.usageErr(fs, "missing QUERY (words to search for)")
	}
	return c.env.withDaemon(ctx, func(cl *client.Client) error {
		res, err := cl.Search(ctx, client.SearchRequest{Query: q, Owner: *owner, Agent: *agent, Lifecycle: *lifecycle,
			Since: *since, Until: *until, Limit: *limit})
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == 400 {
			return searchSpec.usageErr(fs, "%s", ae.Message)
		}
		if err != nil {
			return err
		}
		w := c.env.Stdout
		if *asJSON {
			for _, h := range res.Hits {
				if err := writeJSONSafe(w, h); err != nil {
					return err
				}
			}
			return nil
		}
		if len(res.Hits) == 0 {
			fmt.Fprintln(w, "No records match.")
			return nil
		}
		for _, h := range res.Hits {
			writeLine(w, "%s  #%d  %s  %s", h.Execution, h.Sequence, h.Kind, h.Time.Local().Format("2006-01-02 15:04:05"))
			writeLine(w, "    %s", plainSnippet(h.Snippet))
		}
		if res.Total > uint64(len(res.Hits)) {
			fmt.Fprintf(w, "%d of %d matches; --limit shows more.\n", len(res.Hits), res.Total)
		}
		return nil
	})
}

// plainSnippet turns the API's HTML snippet into one line of text, the
// matches in brackets.
func plainSnippet(s string) string {
	s = strings.NewReplacer("<mark>", "[", "</mark>", "]", "\n", " ").Replace(s)
	return html.UnescapeString(s)
}

// rebuildSearch rebuilds the search index from the log, for a rebuild
// without a daemon; the daemon's rebuild route does it for one.
func rebuildSearch(ctx context.Context, env *Env, src search.Source) error {
	x, err := search.Open(env.layout().SearchIndex())
	if err != nil {
		return err
	}
	bar := newProgress(env.Stderr, "rebuild search")
	err = x.Rebuild(ctx, src, bar.update)
	bar.finish()
	if err != nil {
		_ = x.Close()
		return fmt.Errorf("rebuild the search index: %w", err)
	}
	return x.Close()
}
