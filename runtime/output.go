package runtime

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentjournal/agentjournal/internal/textclip"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
	"github.com/agentjournal/agentjournal/runtime/marker"
	"github.com/agentjournal/agentjournal/runtime/outputlog"
)

// pump reads one output stream line by line: stdout lines may be markers or
// provider events; everything is shown on Output. Memory is bounded by
// MaxLine whatever the agent prints.
func (rt *Runtime) pump(p *process, c *child, r io.Reader, isStdout bool) {
	br := bufio.NewReaderSize(r, 64*1024)
	line := make([]byte, 0, 4096)
	n := 0
	truncated := false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) <= rt.cfg.MaxLine {
			line = append(line, chunk...)
		} else {
			truncated = true
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(line) > 0 {
			n++
			if rt.cfg.Output != nil && (p.source != eventstore.ObservedPTY || rt.cfg.TerminalOutput == nil) {
				rt.cfg.Output.Write(line)
				if line[len(line)-1] != '\n' {
					rt.cfg.Output.Write([]byte{'\n'})
				}
			}
			switch {
			case isStdout:
				rt.handleLine(p, c, n, bytes.TrimRight(line, "\r\n"), truncated)
			case n > c.replayedErr:
				// A line a runtime before this one read is kept already.
				rt.keep(p, outputlog.Stderr, bytes.TrimRight(line, "\r\n"))
				c.noteStderr(n)
			}
		}
		line, truncated = line[:0], false
		if err != nil {
			return
		}
	}
}

// stdoutID is the observation id of a child's stdout line that is not
// provider output: "stdout-N" for the first process, "<prefix>-stdout-N"
// for later ones.
func stdoutID(c *child, n int) string {
	if c.prefix == "out" {
		return fmt.Sprintf("stdout-%d", n)
	}
	return fmt.Sprintf("%s-stdout-%d", c.prefix, n)
}

func (rt *Runtime) handleLine(p *process, c *child, n int, line []byte, truncated bool) {
	if n <= c.replayed {
		rt.replayLine(p, c, line, truncated)
		return
	}
	defer rt.handled(p, c, n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if truncated {
		rt.record(ctx, p, &eventstore.Observation{ObservationID: stdoutID(c, n), Source: p.source,
			Confidence: eventstore.ConfidenceDiagnostic, Signal: eventstore.NewSignal(&eventstore.DiagnosticSignal{
				Code: "line-too-long", Message: fmt.Sprintf("output line %d is longer than %d bytes and was cut", n, rt.cfg.MaxLine)})})
		// The journal has only the diagnostic: the line's start is kept.
		rt.keep(p, outputlog.Stdout, line)
		return
	}
	if bytes.HasPrefix(line, []byte(marker.Prefix)) {
		parsed := marker.Parse(line, p.nonce)
		if parsed.Result != marker.NotMarker {
			o := marker.Observation(parsed, line, stdoutID(c, n), p.source)
			rt.record(ctx, p, o)
			rt.notifyInputRequest(p, o)
			return
		}
	}
	if c.parser == nil {
		rt.keep(p, outputlog.Stdout, line)
		return
	}
	c.parseMu.Lock()
	defer c.parseMu.Unlock()
	events := c.parser.Parse(line)
	if notJSON(events) {
		rt.keep(p, outputlog.Stdout, line)
	}
	rt.handleEvents(ctx, p, c, events)
}

// notJSON reports whether the provider parser found a line is no JSON, so
// no provider event: a CLI's own plain text (a warning, a crash's trace).
// Its diagnostic holds only the line's start.
func notJSON(events []agent.Event) bool {
	for _, ev := range events {
		if ev.Observation == nil {
			continue
		}
		if d, ok := signalPayload(ev.Observation).(*eventstore.DiagnosticSignal); ok && d.Code == agent.CodeMalformedLine {
			return true
		}
	}
	return false
}

// keep writes a plain output line of a process on pipes to the
// execution's output file. A terminal lane's output is in its recording.
// A failure to keep output is logged once and ends the keeping: the agent
// and its journal go on.
func (rt *Runtime) keep(p *process, stream string, line []byte) {
	if rt.cfg.OutputDir == "" || p.source == eventstore.ObservedPTY {
		return
	}
	p.outputMu.Lock()
	defer p.outputMu.Unlock()
	if p.outputOff {
		return
	}
	var err error
	if p.output == nil {
		p.output, err = outputlog.Open(rt.cfg.OutputDir, p.ref.AgentExecutionID, outputlog.Options{Limit: rt.cfg.OutputLimit, Now: rt.cfg.Now})
	}
	if err == nil {
		err = p.output.Write(stream, line)
	}
	if err != nil {
		rt.cfg.Logger.Error("keep the agent's output", "execution", p.ref.AgentExecutionID, "err", err)
		p.closeOutput()
	}
}

// closeOutput closes the execution's output file; nothing more is kept.
// The caller holds outputMu.
func (p *process) closeOutput() {
	p.outputOff = true
	if p.output != nil {
		p.output.Close()
		p.output = nil
	}
}

// replayLine feeds a line whose records a runtime before this one
// journaled to the driver and the parser, so that they know what they knew
// then; of what the parser finds, only what this process keeps in memory
// (the provider session, the turns ended) is taken.
func (rt *Runtime) replayLine(p *process, c *child, line []byte, truncated bool) {
	if truncated || c.parser == nil || (bytes.HasPrefix(line, []byte(marker.Prefix)) && marker.Parse(line, p.nonce).Result != marker.NotMarker) {
		return
	}
	c.parseMu.Lock()
	defer c.parseMu.Unlock()
	for _, ev := range c.parser.Parse(line) {
		switch {
		case ev.Session != nil && ev.Session.ID != "":
			p.mu.Lock()
			p.sessionID = ev.Session.ID
			p.mu.Unlock()
		case ev.TurnEnd != nil:
			te := *ev.TurnEnd
			p.mu.Lock()
			c.turnEnd = &te
			p.turns++
			p.awaiting = p.shape == eventstore.ShapeConversation
			p.mu.Unlock()
		}
	}
}

// handleEvents records what the parser found; the caller holds parseMu.
func (rt *Runtime) handleEvents(ctx context.Context, p *process, c *child, events []agent.Event) {
	for _, ev := range events {
		switch {
		case ev.Observation != nil:
			if n := ev.Observation.Native; n == nil || n.SessionID == "" {
				// The CLI names its session later in its output than
				// this line (Copilot CLI, in its last line); the id the
				// driver gave it, or learned, is the same.
				if id := rt.sessionOf(p); id != "" {
					if n == nil {
						n = &eventstore.NativeIDs{}
					}
					n.SessionID = id
					ev.Observation.Native = n
				}
			}
			rt.record(ctx, p, ev.Observation)
			rt.notifyInputRequest(p, ev.Observation)
		case ev.Activity != nil:
			// Record ids are message ids across the whole log: tie the
			// parser's id to this journal.
			ev.Activity.RecordID = eventstore.RecordID(p.ref.JournalID, eventstore.KindActivity, ev.Activity.RecordID)
			rt.record(ctx, p, ev.Activity)
		case ev.Session != nil:
			// The version only matters to the parser's diagnostics.
			if ev.Session.ID != "" {
				p.mu.Lock()
				p.sessionID = ev.Session.ID
				p.mu.Unlock()
			}
		case ev.TurnEnd != nil:
			rt.turnEnded(p, c, *ev.TurnEnd)
		case ev.Commands != nil:
			rt.recordAdvertised(ctx, p, ev.Commands.List)
		}
	}
}

// notifyInputRequest hands a recorded question or permission request to
// OnInputRequest, on a goroutine of its own, once it is in the journal:
// an answer must not land before the question it answers, which may be
// held for the log (hold.go).
func (rt *Runtime) notifyInputRequest(p *process, o *eventstore.Observation) {
	ni, ok := signalPayload(o).(*eventstore.NeedsInputSignal)
	if !ok || rt.cfg.OnInputRequest == nil {
		return
	}
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		if rt.settled(p, nil) {
			rt.cfg.OnInputRequest(p.ref, ni)
		}
	}()
}

// sessionOf is the provider session id of an execution: the one its output
// said, else the one its driver chose.
func (rt *Runtime) sessionOf(p *process) string {
	p.mu.Lock()
	id := p.sessionID
	p.mu.Unlock()
	if id != "" {
		return id
	}
	if s, ok := p.driver.(interface{ Session() string }); ok {
		return s.Session()
	}
	return ""
}

// flush records what the parser held back once its output has ended.
func (rt *Runtime) flush(p *process, c *child) {
	f, ok := c.parser.(agent.Flusher)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.parseMu.Lock()
	defer c.parseMu.Unlock()
	rt.handleEvents(ctx, p, c, f.Flush())
}

// sideLogger is a driver whose CLI writes part of its provider output to a
// file instead of stdout (Copilot CLI's token usage is only in its session
// log). SideLog returns the file's path for the process's environment, ""
// when it cannot tell.
type sideLogger interface {
	SideLog(env []string) string
}

// sideLogPoll is how often a side log is read while its process runs.
const sideLogPoll = 100 * time.Millisecond

// tail feeds a process's side log to its parser, as the file grows, until
// its stdout has ended; then it reads what is left. The file may appear
// only after the process starts. Lines longer than MaxLine are skipped.
func (rt *Runtime) tail(p *process, c *child, path string, from int64, stdoutDone <-chan struct{}) {
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	var partial []byte
	skipping := false
	buf := make([]byte, 64*1024)
	read := func() {
		if f == nil {
			var err error
			if f, err = os.Open(path); err != nil {
				return
			}
			if _, err := f.Seek(from, io.SeekStart); err != nil {
				f.Close()
				f = nil
				return
			}
		}
		for {
			n, err := f.Read(buf)
			data := buf[:n]
			for len(data) > 0 {
				i := bytes.IndexByte(data, '\n')
				if i < 0 {
					if len(partial)+len(data) > rt.cfg.MaxLine {
						partial, skipping = partial[:0], true
					} else if !skipping {
						partial = append(partial, data...)
					}
					break
				}
				if !skipping && len(partial)+i <= rt.cfg.MaxLine {
					rt.handleSide(p, c, append(partial, data[:i]...))
				}
				partial, skipping = partial[:0], false
				data = data[i+1:]
			}
			if n == 0 || err != nil {
				return
			}
		}
	}
	t := time.NewTicker(sideLogPoll)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			read()
		case <-stdoutDone:
			read()
			return
		}
	}
}

// handleSide parses one line of a side log: provider output that was not
// on stdout, so it is neither shown nor read for markers.
func (rt *Runtime) handleSide(p *process, c *child, line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.parseMu.Lock()
	defer c.parseMu.Unlock()
	rt.handleEvents(ctx, p, c, c.parser.Parse(line))
}

// turnEnded follows the end of a turn: a one-shot execution that reads its
// turns on stdin is told there are no more, and a conversation waits for
// the operator's next message. The runtime records that wait itself, in
// the order it happens, so that a turn started right after it is never
// overtaken by it.
func (rt *Runtime) turnEnded(p *process, c *child, te agent.TurnEnd) {
	p.turnMu.Lock()
	defer p.turnMu.Unlock()
	p.mu.Lock()
	pending := p.nextTurn
	p.mu.Unlock()
	if pending != "" {
		// The turn ended before the delivery that started it recorded the
		// start: record it first, so the journal says start, then end.
		rt.recordTurnStart(p, pending)
	}
	p.mu.Lock()
	c.turnEnd = &te
	p.turns++
	n := p.turns
	conversation := p.shape == eventstore.ShapeConversation
	if conversation {
		p.awaiting = true
	}
	p.mu.Unlock()
	switch {
	case p.shape == eventstore.ShapeOneShot && p.driver.TurnsOnStdin():
		c.closeInput()
	case conversation:
		reason := fmt.Sprintf("turn %d ended; waiting for the next message", n)
		if te.Failed {
			reason = fmt.Sprintf("turn %d failed: %s; waiting for the next message", n, clipReason(te.Reason))
		}
		if err := rt.journalState(p, fmt.Sprintf("turn:%d:end", n), &eventstore.StateChanged{
			Attention: eventstore.AttentionAwaitingOperator, Activity: eventstore.ActivityIdle, Reason: reason}); err != nil && !errors.Is(err, errHeld) {
			rt.cfg.Logger.Error("record turn end", "execution", p.ref.AgentExecutionID, "err", err)
		}
	}
	rt.snapshotLater(p, fmt.Sprintf("turn-%d", n))
	rt.checkpointTurn(p, n)
}

func signalPayload(o *eventstore.Observation) eventstore.SignalPayload {
	if o.Signal == nil {
		return nil
	}
	return o.Signal.Payload
}

func clipReason(s string) string {
	return textclip.Bytes(s, 200)
}

// record journals an observation or activity update of p's output, in
// order behind whatever of p is held for the log (hold.go). A refusal is
// logged: the agent and the rest of its journal go on.
func (rt *Runtime) record(ctx context.Context, p *process, r eventstore.Record) {
	err := rt.journal(ctx, p, r)
	if err == nil || errors.Is(err, errHeld) {
		return
	}
	id := r.RecordBase().RecordID
	if o, ok := r.(*eventstore.Observation); ok {
		id = o.ObservationID
	}
	rt.cfg.Logger.Error("record "+string(r.Kind()), "execution", p.ref.AgentExecutionID, "id", id, "err", err)
}

// handled counts stdout line n of c handled once its records are in the
// journal. A supervised agent's reader waits here while they are held for
// the log, since the supervisor's spool keeps what the agent prints
// meanwhile; when this runtime leaves its agents, or gives up at its
// close, the line stays uncounted for the next runtime to handle again.
func (rt *Runtime) handled(p *process, c *child, n int) {
	if c.handle() != nil && !rt.settled(p, rt.detach.Done()) {
		return
	}
	c.noteHandled(n)
}
