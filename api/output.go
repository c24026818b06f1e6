package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/runtime/outputlog"
)

const (
	// outputPage is the lines a page of output holds when limit is not
	// given; maxOutputPage the most it may ask for.
	outputPage    = 1000
	maxOutputPage = 10000
	// outputPoll is how often a follower looks for new output: the file
	// is the runtime's, written with no one to tell. A look is one stat
	// while nothing changes.
	outputPoll = 200 * time.Millisecond
)

// output: GET /v1/executions/{id}/output?from=&limit=&tail=&stream=&follow=,
// the lines the agent printed that are in no record (outputlog): a page
// {lines, first, next} from line from (1 when absent), or the last tail
// lines; with follow=1, application/x-ndjson, one line object per line,
// from there on as they are written, until the execution has ended and
// every line is sent.
func (s *Server) output(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r, "from", "limit", "tail", "stream", "follow"); err != nil {
		return err
	}
	q := r.URL.Query()
	from, err := uintParam(r, "from", 1, 1, 1<<62)
	if err != nil {
		return err
	}
	limit, err := uintParam(r, "limit", outputPage, 1, maxOutputPage)
	if err != nil {
		return err
	}
	tail, err := uintParam(r, "tail", 0, 1, maxOutputPage)
	if err != nil {
		return err
	}
	if q.Has("tail") && q.Has("from") {
		return invalidField("tail", nil, "tail and from cannot both be given (want the last tail lines, or the lines from from)")
	}
	stream := q.Get("stream")
	if q.Has("stream") && stream != outputlog.Stdout && stream != outputlog.Stderr {
		return invalidField("stream", []string{outputlog.Stdout, outputlog.Stderr}, "%q is not a stream", stream)
	}
	follow := false
	switch v := q.Get("follow"); v {
	case "", "0", "false":
	case "1", "true":
		follow = true
	default:
		return invalidField("follow", []string{"1", "0"}, "%q is not accepted", v)
	}
	id := r.PathValue("id")
	if _, err := s.lookup(r.Context(), id); err != nil {
		return err
	}
	if s.cfg.OutputDir == "" {
		return notFound("this daemon keeps no agent output")
	}
	var page outputlog.Page
	if tail > 0 {
		page, err = outputlog.Tail(s.cfg.OutputDir, id, int(tail), stream)
	} else {
		page, err = outputlog.Read(s.cfg.OutputDir, id, from, int(limit), stream)
	}
	if err != nil {
		return fmt.Errorf("read the output of %s: %w", id, err)
	}
	if !follow {
		writeJSON(w, http.StatusOK, wire.Output{Lines: orEmpty(page.Entries), First: page.First, Next: page.Next})
		return nil
	}
	return s.followOutput(w, r, id, stream, page)
}

// followOutput writes the page, then the lines written after it, until the
// execution has ended and its last line is sent, the client goes or the
// server closes.
func (s *Server) followOutput(w http.ResponseWriter, r *http.Request, id, stream string, page outputlog.Page) error {
	end, err := s.beginStream()
	if err != nil {
		return err
	}
	defer end()
	out := newStreamWriter(w, s.cfg.StreamWriteTimeout)
	defer out.done()
	startStream(w, "application/x-ndjson")
	enc := json.NewEncoder(out)
	send := func(p outputlog.Page) error {
		for _, e := range p.Entries {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return out.Flush()
	}
	if send(page) != nil {
		return nil
	}
	next := page.Next
	path, _, _ := outputlog.Paths(s.cfg.OutputDir, id)
	var seen os.FileInfo
	tick := time.NewTicker(outputPoll)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-r.Context().Done():
			return nil
		case <-s.closing:
			return nil
		}
		// The end is read before the file: a line kept before the end was
		// recorded is then in the read that follows.
		ended := s.ended(id)
		info, err := os.Stat(path)
		if err == nil && seen != nil && info.Size() == seen.Size() && info.ModTime().Equal(seen.ModTime()) {
			if ended {
				return nil
			}
			continue
		}
		seen = info
		for {
			p, err := outputlog.Read(s.cfg.OutputDir, id, next, maxOutputPage, stream)
			if err != nil {
				s.log.Warn("output stream: read", logKeyExecution, id, logKeyErr, err)
				return nil
			}
			if send(p) != nil {
				return nil
			}
			if p.Next == next || len(p.Entries) < maxOutputPage {
				next = p.Next
				break
			}
			next = p.Next
		}
		if ended && errors.Is(err, os.ErrNotExist) {
			return nil
		}
	}
}

// ended reports whether the read model holds the execution's final
// lifecycle.
func (s *Server) ended(id string) bool {
	st, err := s.cfg.Views.Execution(id)
	return err == nil && st.Lifecycle.Final()
}
