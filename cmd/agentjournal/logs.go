package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/runtime"
	"github.com/agentjournal/agentjournal/runtime/outputlog"
)

// LogsCommand prints an agent's plain output.
type LogsCommand struct{ env *Env }

var logsSpec = cmdSpec{
	Name: "logs",
	Args: "ID [-f] [--stream stdout|stderr] [-n N] [--json]",
	Summary: `Print what the agent of execution ID printed that is in no journal record:
its stderr, and the stdout lines that are neither markers nor provider events.
Each line shows when it was read and its stream. The daemon keeps the newest
1 to 2 MiB of it per execution; an agent on a terminal lane has its output in
its terminal recording instead. With -n N, only the last N lines; with -f,
then each new line as it is printed, until the execution ends. Control
characters are shown as escapes, so the agent cannot rewrite the terminal.
When no daemon runs, the data directory's files are read (and -f is refused).

When there is no line to print, logs says why on stderr: an agent whose
output a parser reads (claude-code's stream-json, codex's and copilot's
JSON events, an ACP agent's messages) has all of it turned into journal
records, and no separate copy is kept; its transcript tells it (show
--transcript, tail). An agent on a terminal lane has its output in its
recording.`,
	Example: "agentjournal logs ae-0123456789abcdef01234567 --stream stderr -n 20",
}

// Run implements Command.
func (c *LogsCommand) Run(ctx context.Context, args []string) (err error) {
	fs := logsSpec.newFlagSet()
	follow := fs.Bool("f", false, "follow: print new lines as they come, until the execution ends")
	stream := fs.String("stream", "", "only the lines of `STREAM`: stdout or stderr")
	last := fs.Int("n", 0, "only the last `N` lines (at most 10000)")
	asJSON := fs.Bool("json", false, "print each line as the API's JSON object")
	id, err := logsSpec.parseID(fs, args)
	if err != nil {
		return err
	}
	if *stream != "" && *stream != outputlog.Stdout && *stream != outputlog.Stderr {
		return logsSpec.usageErr(fs, "--stream %q is not accepted (want stdout or stderr)", *stream)
	}
	if *last < 0 || *last > 10000 {
		return logsSpec.usageErr(fs, "-n %d is not accepted (want 1 to 10000)", *last)
	}
	var w io.Writer = c.env.Stdout
	if *follow {
		// Each line is shown as it comes, not when the command ends.
		w = &flushWriter{w: w}
	}
	printed := false
	print := func(e outputlog.Entry) error {
		printed = true
		if *asJSON {
			return writeJSONLine(w, e)
		}
		return writeOutputLine(w, e)
	}
	cl, err := c.env.daemon(ctx)
	if errors.Is(err, errNoDaemon) {
		if *follow {
			return fmt.Errorf("-f needs the daemon, which writes the output: %w", err)
		}
		if err := c.printLocal(id, *stream, *last, print); err != nil || printed || *asJSON {
			return err
		}
		return c.env.withViews(ctx, func(views viewReader) error {
			st, err := views.Execution(ctx, id)
			if err != nil {
				return err
			}
			return c.sayWhyNone(st, *stream)
		})
	}
	if err != nil {
		return err
	}
	defer cl.Close()
	// Said after the lines, once it is known that there were none.
	defer func() {
		if err != nil || printed || *asJSON || ctx.Err() != nil {
			return
		}
		var e client.Execution
		if e, err = cl.Execution(ctx, id); err == nil {
			err = c.sayWhyNone(&e.State, *stream)
		}
	}()
	q := url.Values{}
	if *stream != "" {
		q.Set("stream", *stream)
	}
	if *last > 0 {
		q.Set("tail", strconv.Itoa(*last))
	}
	if *follow {
		q.Set("follow", "1")
		return readOutput(ctx, cl, id, q, print)
	}
	if *last > 0 {
		p, err := daemonOutput(ctx, cl, id, q)
		if err != nil {
			return err
		}
		return printAll(p.Lines, print)
	}
	for from := uint64(1); ; {
		q.Set("from", strconv.FormatUint(from, 10))
		p, err := daemonOutput(ctx, cl, id, q)
		if err != nil {
			return err
		}
		if err := printAll(p.Lines, print); err != nil {
			return err
		}
		if len(p.Lines) == 0 || p.Next <= from {
			return nil
		}
		from = p.Next
	}
}

// sayWhyNone says on stderr why an execution has no plain output to
// print: where what its agent printed went instead.
func (c *LogsCommand) sayWhyNone(st *execution.State, stream string) error {
	id := st.ID
	see := fmt.Sprintf("see its transcript: %s show %s --transcript", c.env.hintPrefix(), id)
	var why string
	provider, protocol := "", ""
	for _, a := range runtime.Agents() {
		if a.ID == st.AgentID {
			provider, protocol = a.Provider, string(a.Protocol)
		}
	}
	switch {
	case st.TerminalAttached:
		why = fmt.Sprintf("%s ran on a terminal lane: its output is in its terminal recording, not here", id)
	case stream != "":
		why = fmt.Sprintf("%s printed no %s line outside its journal", id, stream)
	case provider != "":
		why = fmt.Sprintf("%s printed nothing outside its journal: all of %s's output (%s) is parsed into journal records, and no separate copy of it is kept; %s",
			id, st.AgentID, protocol, see)
	default:
		why = fmt.Sprintf("%s printed no plain output: its markers, if any, are journal records; %s", id, see)
	}
	_, err := fmt.Fprintln(c.env.Stderr, "agentjournal: "+why)
	return err
}

// printLocal prints the output files of the data directory.
func (c *LogsCommand) printLocal(id, stream string, last int, print func(outputlog.Entry) error) error {
	var p outputlog.Page
	var err error
	if last > 0 {
		p, err = outputlog.Tail(c.env.layout().Output(), id, last, stream)
	} else {
		p, err = outputlog.Read(c.env.layout().Output(), id, 1, 1<<62, stream)
	}
	if err != nil {
		return err
	}
	return printAll(p.Entries, print)
}

func printAll(lines []outputlog.Entry, print func(outputlog.Entry) error) error {
	for _, e := range lines {
		if err := print(e); err != nil {
			return err
		}
	}
	return nil
}

// writeOutputLine prints one kept line for a person: its time, its stream
// and the line, made terminal-safe.
func writeOutputLine(w io.Writer, e outputlog.Entry) error {
	clipped := ""
	if e.Clipped {
		clipped = " [cut]"
	}
	return writeLine(w, "%s %-6s %s%s", e.Time.Local().Format(timeLayout), e.Stream, e.Line, clipped)
}

func daemonOutput(ctx context.Context, cl *client.Client, id string, q url.Values) (client.Output, error) {
	var p client.Output
	resp, err := cl.Request(ctx, http.MethodGet, "/v1/executions/"+url.PathEscape(id)+"/output", q, nil, nil)
	if err != nil {
		return p, outputError(id, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		return p, fmt.Errorf("read the output of %s: %w", id, err)
	}
	return p, nil
}

// readOutput prints the lines of a follow=1 answer until it ends.
func readOutput(ctx context.Context, cl *client.Client, id string, q url.Values, print func(outputlog.Entry) error) error {
	resp, err := cl.Request(ctx, http.MethodGet, "/v1/executions/"+url.PathEscape(id)+"/output", q, nil, nil)
	if err != nil {
		return outputError(id, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e outputlog.Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("read the output of %s: %w", id, err)
		}
		if err := print(e); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("read the output of %s: %w", id, err)
	}
	return ctx.Err()
}

func outputError(id string, err error) error {
	if errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("no agent execution %q: %w", id, err)
	}
	return err
}

// lastOutput returns the newest n kept lines of an execution, from the
// daemon views reads through or from the data directory's files.
func (e *Env) lastOutput(ctx context.Context, views viewReader, id string, n int) ([]outputlog.Entry, error) {
	if d, ok := views.(daemonViews); ok {
		p, err := daemonOutput(ctx, d.c, id, url.Values{"tail": {strconv.Itoa(n)}})
		return p.Lines, err
	}
	p, err := outputlog.Tail(e.layout().Output(), id, n, "")
	return p.Entries, err
}
