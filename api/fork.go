package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime"
	"github.com/agentjournal/agentjournal/workspace"
)

var workspaceModes = []string{string(workspace.ModeKeep), string(workspace.ModeSnapshot), string(workspace.ModeDiscard)}

// checkEnv refuses a variable that cannot be one, naming it, and returns
// the variables as NAME=value, sorted.
func checkEnv(env map[string]string) ([]string, error) {
	out := make([]string, 0, len(env))
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, invalidField("env."+k, nil, "not an environment variable (want a name without = and a value without NUL)")
		}
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}

// fork: POST /v1/executions/{id}/fork, a new execution that branches off
// this one after its record at; answered as a launch is.
func (s *Server) fork(w http.ResponseWriter, r *http.Request) error {
	var in wire.ForkRequest
	if err := s.decodeRequest(w, r, &in, false); err != nil {
		return err
	}
	switch {
	case in.At == 0:
		return invalidField("at", nil, "required: the parent's journal sequence the fork branches after (1 or more)")
	case in.Workspace != "" && !slices.Contains(workspaceModes, in.Workspace):
		return invalidField("workspace", workspaceModes, "%q is not accepted", in.Workspace)
	}
	return s.continueRun(w, r, in.Seed, in.Env, in.ConfirmImported, "at", func(ctx context.Context, parent string, env []string) (eventstore.Reference, error) {
		return s.cfg.Runtime.Fork(ctx, runtime.ForkRequest{Parent: parent, At: in.At,
			Workspace: workspace.Mode(in.Workspace), Prompt: in.Prompt, Seed: in.Seed, Env: env})
	})
}

// resume: POST /v1/executions/{id}/resume, a new run of this execution's
// session; answered as a launch is.
func (s *Server) resume(w http.ResponseWriter, r *http.Request) error {
	var in wire.ResumeRequest
	if err := s.decodeRequest(w, r, &in, true); err != nil {
		return err
	}
	return s.continueRun(w, r, in.Seed, in.Env, in.ConfirmImported, "prompt", func(ctx context.Context, resumed string, env []string) (eventstore.Reference, error) {
		return s.cfg.Runtime.Resume(ctx, runtime.ResumeRequest{Execution: resumed, Prompt: in.Prompt, Seed: in.Seed, Env: env})
	})
}

// continueRun checks the seed, environment and restated command a fork
// and a resume both take, then has start begin the new run from the
// execution named in the path, and answers as a launch is. field is the
// one a refused start is answered as (continueError).
func (s *Server) continueRun(w http.ResponseWriter, r *http.Request, seed string, envIn map[string]string, confirm *wire.ImportedCommand, field string,
	start func(ctx context.Context, from string, env []string) (eventstore.Reference, error)) error {
	if len(seed) > eventstore.MaxIDLength {
		return invalidField("seed", nil, "%d bytes (want at most %d)", len(seed), eventstore.MaxIDLength)
	}
	env, err := checkEnv(envIn)
	if err != nil {
		return err
	}
	from, err := s.lookup(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := s.checkImported(r.Context(), from, confirm); err != nil {
		return err
	}
	// Once begun, a fork or resume completes even if the client goes away.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), mutationTimeout)
	defer cancel()
	ref, err := start(ctx, from.AgentExecutionID, env)
	if err != nil {
		return s.continueError(ctx, ref, err, field)
	}
	return s.launched(r.Context(), w, r, ref)
}

// checkImported refuses to fork or resume an execution whose journal was
// imported from a file (Header.Imported) unless the request restates the
// command and directory that would run: the file gave them, and whoever
// wrote it chose what this host would execute. The refusal carries them,
// for the operator to see before restating them.
func (s *Server) checkImported(ctx context.Context, ref eventstore.Reference, confirm *wire.ImportedCommand) error {
	var h *eventstore.Header
	for e, err := range s.cfg.Store.ReadJournal(ctx, ref, 1) {
		if err != nil {
			return err
		}
		h, _ = e.Record.(*eventstore.Header)
		break
	}
	if h == nil || !h.Imported {
		return nil
	}
	if confirm != nil && slices.Equal(confirm.Command, h.Command) && confirm.WorkingDirectory == h.WorkingDirectory {
		return nil
	}
	imported := &wire.ImportedCommand{AgentID: h.AgentID, Command: orEmpty(h.Command), WorkingDirectory: h.WorkingDirectory}
	command, _ := json.Marshal(imported.Command)
	said := "does not restate them"
	if confirm != nil {
		said = "restates others"
	}
	return &apiError{status: http.StatusConflict, code: wire.CodeConflict, field: "confirmImported", imported: imported,
		message: fmt.Sprintf("the journal of execution %s was imported from a file, so the command %s (agent %s) and the directory %q that would run come from that file, and the request %s; "+
			"check them, and restate both in confirmImported {command, workingDirectory} to run them",
			ref.AgentExecutionID, command, h.AgentID, h.WorkingDirectory, said)}
}

// continueError words a fork or resume that failed: refused input is a 400
// (a running execution a 409) with nothing written; a launch that failed
// after its header is answered as a failed launch.
func (s *Server) continueError(ctx context.Context, ref eventstore.Reference, err error, field string) error {
	var fe *runtime.ForkError
	switch {
	case errors.Is(err, eventstore.ErrJournalNotFound):
		return notFound("%v", err)
	case errors.As(err, &fe) && fe.Conflict:
		return conflict("%v", err)
	case errors.As(err, &fe) && fe.Field == "workspace":
		return invalidField("workspace", workspaceModes, "%v", err)
	case errors.As(err, &fe) && fe.Field != "":
		return invalidField(fe.Field, nil, "%v", err)
	case errors.Is(err, runtime.ErrBadFork), errors.Is(err, runtime.ErrBadLaunch):
		return invalidField(field, nil, "%v", err)
	case ref.JournalID == "":
		return fmt.Errorf("%w; nothing was recorded", err)
	}
	return s.failedLaunch(ctx, ref, err)
}

// launched answers a launch, a fork or a resume with the new execution,
// its state replayed under ctx.
func (s *Server) launched(ctx context.Context, w http.ResponseWriter, r *http.Request, ref eventstore.Reference) error {
	st, err := s.replayState(ctx, ref)
	if err != nil {
		return err
	}
	s.settle(r.Context())
	w.Header().Set("Location", "/v1/executions/"+url.PathEscape(ref.AgentExecutionID))
	writeJSON(w, http.StatusCreated, wire.Launched{Reference: st.Journal, State: wire.Execution{State: *st, Live: s.live(ref.AgentExecutionID)}})
	return nil
}
