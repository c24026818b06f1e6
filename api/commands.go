package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/commands"
	"github.com/agentjournal/agentjournal/eventstore"
)

// commandView is the execution as command resolution sees it, from the
// read model once it holds every record written so far, and the focus a
// request names, parsed (one that is not a focus is refused as the field
// focus, before the execution is read).
func (s *Server) commandView(ctx context.Context, id, focus string) (commands.View, commands.Focus, error) {
	f, err := commands.ParseFocus(focus)
	if err != nil {
		return commands.View{}, "", invalidField("focus", []string{string(commands.FocusPrompt), string(commands.FocusTerminal)}, "%v", err)
	}
	if _, err := s.lookup(ctx, id); err != nil {
		return commands.View{}, "", err
	}
	var v commands.View
	err = s.projected(ctx, id, func() error {
		if err := s.catchUp(ctx); err != nil {
			return err
		}
		st, err := s.cfg.Views.Execution(id)
		if err != nil {
			return err
		}
		v = commands.ViewOf(st)
		return nil
	})
	return v, f, err
}

// listCommands: GET /v1/executions/{id}/commands?prefix=/ch&focus=prompt
func (s *Server) listCommands(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r, "prefix", "focus"); err != nil {
		return err
	}
	id := r.PathValue("id")
	v, focus, err := s.commandView(r.Context(), id, r.URL.Query().Get("focus"))
	if err != nil {
		return err
	}
	cs := commands.Complete(v, r.URL.Query().Get("prefix"), focus)
	writeJSON(w, http.StatusOK, wire.Completions{ExecutionID: id, Completions: orEmpty(cs)})
	return nil
}

// runCommand: POST /v1/executions/{id}/commands[?dryRun=true]. A dry run
// resolves and answers the typed invocation (a preview); otherwise the
// invocation is carried out and recorded the way its target is. A parse
// failure the operator sent (not a preview) is recorded as a diagnostic.
func (s *Server) runCommand(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r, "dryRun"); err != nil {
		return err
	}
	dry := false
	switch v := r.URL.Query().Get("dryRun"); v {
	case "", "false":
	case "true":
		dry = true
	default:
		return invalidField("dryRun", []string{"true", "false"}, "%q is not accepted", v)
	}
	var in wire.CommandRequest
	if err := s.decodeBody(w, r, &in, false); err != nil {
		return err
	}
	id := r.PathValue("id")
	v, focus, err := s.commandView(r.Context(), id, string(in.Focus))
	if err != nil {
		return err
	}
	inv, err := commands.Resolve(v, in.Text, focus)
	var pe *commands.ParseError
	if errors.As(err, &pe) {
		msg := pe.Error()
		if !dry && inv == nil {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), mutationTimeout)
			defer cancel()
			if res, rerr := s.cfg.Runtime.RecordCommandFailure(ctx, id, pe); rerr == nil {
				msg += "; recorded as diagnostic observation " + res.ID
				s.settle(r.Context())
			}
		}
		return invalidField("text", nil, "%s", msg)
	}
	if err != nil {
		return err
	}
	if dry {
		writeJSON(w, http.StatusOK, wire.CommandResult{Invocation: inv, DryRun: true})
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), mutationTimeout)
	defer cancel()
	res, err := s.cfg.Runtime.Invoke(ctx, id, inv, in.ID)
	var ce *runtime.CheckpointError
	switch {
	case errors.Is(err, eventstore.ErrJournalNotFound):
		return notFound("no execution %q", id)
	case errors.Is(err, runtime.ErrBadCommand), errors.Is(err, runtime.ErrUnknownMessageType), errors.Is(err, runtime.ErrBadMessage):
		return invalidField("text", nil, "%v", err)
	case errors.As(err, &ce):
		return invalidField("text", nil, "%v", err)
	case errors.Is(err, runtime.ErrNotRunning):
		return conflict("execution %s has no running terminal lane in this daemon: %v", id, err)
	case err != nil:
		return err
	}
	if inv.Category != commands.CategoryTerminalInput {
		s.settle(r.Context())
	}
	writeJSON(w, http.StatusOK, wire.CommandResult{Invocation: inv, Result: invokeResult(res)})
	return nil
}

// invokeResult is the wire form of what the runtime recorded for an
// invocation.
func invokeResult(res runtime.InvokeResult) *wire.InvokeResult {
	out := &wire.InvokeResult{Sequence: res.Sequence, RecordType: res.RecordType, ID: res.ID, Summary: res.Summary}
	if res.Message != nil {
		ack := wire.MessageAck(*res.Message)
		out.Message = &ack
	}
	return out
}
