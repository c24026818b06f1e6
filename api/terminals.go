package api

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime"
	"github.com/agentjournal/agentjournal/terminal"
)

// lane finds an execution's terminal lane: the runtime's while the process
// runs (live), else the newest lane the registry still holds for it.
func (s *Server) lane(id string) (terminalID string, live bool) {
	if s.cfg.Terminals == nil {
		return "", false
	}
	if tid, ok := s.cfg.Runtime.TerminalID(id); ok {
		return tid, true
	}
	snaps := s.cfg.Terminals.List()
	for i := len(snaps) - 1; i >= 0; i-- {
		if snaps[i].AgentExecutionID == id {
			return snaps[i].ID, false
		}
	}
	return "", false
}

// terminalOf reads an execution's lane; an execution without one has a
// view with no terminal id. An unknown execution is a 404.
func (s *Server) terminalOf(ctx context.Context, id string) (wire.Terminal, error) {
	v := wire.Terminal{AgentExecutionID: id}
	tid, _ := s.lane(id)
	if tid == "" {
		_, err := s.lookup(ctx, id)
		return v, err
	}
	snap, err := s.cfg.Terminals.Snapshot(tid)
	if err != nil {
		return v, err
	}
	return viewOf(id, snap), nil
}

// viewOf is the view of a lane's snapshot, its recent output as it may be
// shown: without marker lines (displayRecent).
func viewOf(id string, snap terminal.Snapshot) wire.Terminal {
	snap.Recent = displayRecent(snap.Recent)
	ws := wire.TerminalSnapshot(snap)
	return wire.Terminal{AgentExecutionID: id, TerminalID: snap.ID, Available: !snap.Dead, Snapshot: &ws}
}

// openTerminal: POST /v1/executions/{id}/terminal. Lanes are opened by the
// runtime when an interactive execution is launched, so this answers with
// that lane, and refuses an execution launched without one.
func (s *Server) openTerminal(w http.ResponseWriter, r *http.Request) error {
	if err := s.decodeRequest(w, r, &struct{}{}, true); err != nil {
		return err
	}
	id := r.PathValue("id")
	v, err := s.terminalOf(r.Context(), id)
	switch {
	case err != nil:
		return err
	case v.TerminalID == "":
		return conflict("execution %s has no terminal lane: a lane is opened at launch, for posture %s or %s, and this execution was launched without one",
			id, eventstore.PostureStructuredInteractive, eventstore.PostureNativeTerminal)
	case !v.Available:
		return conflict("the terminal lane %s of execution %s has exited; GET /v1/executions/%s/terminal reads its last snapshot", v.TerminalID, id, id)
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// attachTerminal: POST /v1/executions/{id}/terminal/attach. The terminal
// must be a lane of this execution.
func (s *Server) attachTerminal(w http.ResponseWriter, r *http.Request) error {
	var in wire.TerminalAttach
	if err := s.decodeRequest(w, r, &in, false); err != nil {
		return err
	}
	if in.TerminalID == "" {
		return invalidField("terminalId", nil, "required")
	}
	id := r.PathValue("id")
	var t *terminal.Terminal
	err := terminal.ErrNotFound
	if s.cfg.Terminals != nil {
		t, err = s.cfg.Terminals.Attach(in.TerminalID)
	}
	if errors.Is(err, terminal.ErrNotFound) {
		return &apiError{status: http.StatusNotFound, code: wire.CodeNotFound, field: "terminalId", message: fmt.Sprintf("no terminal %q in this daemon", clip(in.TerminalID, maxFieldLen))}
	}
	if err != nil {
		return err
	}
	snap := t.Snapshot()
	if snap.AgentExecutionID != id {
		return conflict("terminal %s is a lane of execution %q, not of %s", in.TerminalID, snap.AgentExecutionID, id)
	}
	writeJSON(w, http.StatusOK, viewOf(id, snap))
	return nil
}

// readTerminal: GET /v1/executions/{id}/terminal. An execution without a
// lane reads as unavailable.
func (s *Server) readTerminal(w http.ResponseWriter, r *http.Request) error {
	return readByID(w, r, s.terminalOf)
}

// terminalInput: POST /v1/executions/{id}/terminal/input. The bytes reach
// the lane and its recording, never the journal; subscribers get a
// terminal event with the refreshed snapshot.
func (s *Server) terminalInput(w http.ResponseWriter, r *http.Request) error {
	var in wire.TerminalInput
	if err := s.decodeRequest(w, r, &in, false); err != nil {
		return err
	}
	switch {
	case in.Data == "" && in.Cols == 0 && in.Rows == 0:
		return invalidField("data", nil, "nothing to do (want data, or cols and rows, or both)")
	case in.Cols == 0 && in.Rows != 0:
		return invalidField("cols", nil, "required with rows (want both, 1 or more)")
	case in.Rows == 0 && in.Cols != 0:
		return invalidField("rows", nil, "required with cols (want both, 1 or more)")
	}
	id := r.PathValue("id")
	tid, live := s.lane(id)
	if !live {
		if _, err := s.lookup(r.Context(), id); err != nil {
			return err
		}
		return conflict("execution %s has no running terminal lane", id)
	}
	if in.Data != "" {
		err := s.cfg.Runtime.TerminalInput(id, []byte(in.Data))
		if errors.Is(err, runtime.ErrNotRunning) || errors.Is(err, terminal.ErrExited) {
			return conflict("the terminal lane of execution %s has exited", id)
		}
		if err != nil {
			return err
		}
	}
	if in.Cols != 0 {
		err := s.cfg.Terminals.Resize(tid, in.Cols, in.Rows)
		if errors.Is(err, terminal.ErrExited) || errors.Is(err, terminal.ErrNotFound) {
			return conflict("the terminal lane of execution %s has exited", id)
		}
		if err != nil {
			return err
		}
	}
	snap, err := s.cfg.Terminals.Snapshot(tid)
	if err != nil {
		return err
	}
	v := viewOf(id, snap)
	s.broker.publishTerminal(v)
	writeJSON(w, http.StatusOK, v)
	return nil
}

// terminalRecording: GET /v1/executions/{id}/terminal/recording, the
// asciicast v2 recording of the execution's terminal lane: transport
// evidence, kept apart from the journal. It is served as it may be shown,
// its output without marker lines (writeDisplayRecording); the file in the
// data directory keeps every byte. While the lane runs the file still
// grows; a read returns what it holds then.
func (s *Server) terminalRecording(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	id := r.PathValue("id")
	if _, err := s.lookup(r.Context(), id); err != nil {
		return err
	}
	if s.cfg.RecordingDir == "" {
		return notFound("this daemon keeps no terminal recordings")
	}
	path, err := terminal.RecordingPath(s.cfg.RecordingDir, id)
	if err != nil {
		return notFound("no execution %q", id)
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return notFound("execution %s has no terminal recording: only a lane records one, opened at launch for posture %s or %s",
			id, eventstore.PostureStructuredInteractive, eventstore.PostureNativeTerminal)
	}
	if err != nil {
		return fmt.Errorf("open the recording of %s: %w", id, err)
	}
	defer f.Close()
	setContentType(w, "application/x-asciicast")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	// The status is sent: a failure now can only cut the answer short.
	writeDisplayRecording(w, f)
	return nil
}
