package acpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
)

// session is one execution opened on the connection. Records reach it in
// journal order from one goroutine at a time (the replay, then follow),
// which sends their updates in that order.
type session struct {
	id     string
	srv    *Server
	ctx    context.Context
	cancel context.CancelFunc

	// lastSeq is the last journal sequence applied; a record at or below
	// it (an event replayed on reconnection) is skipped.
	lastSeq uint64

	mu sync.Mutex
	// live is set once the session shows records as they happen: only
	// then does an input request go to the editor.
	live bool
	turn *turn
	// inputs are the needs_input signals seen, by request id.
	inputs map[string]*eventstore.NeedsInputSignal
	// question is the open question without choices, which the next
	// prompt answers; "" when none is open.
	question string
	// asking cancels the permission request open at the editor for a
	// request id, once the journal says it was answered.
	asking map[string]context.CancelFunc
}

// turn is one session/prompt waiting for its end in the journal.
type turn struct {
	messageID string
	// started is set once the prompt's message.accepted is applied: the
	// records after it are the turn's.
	started   bool
	cancelled bool
	failed    string
	usage     usageSum
	end       chan sdk.StopReason
	err       error
	done      bool
}

type usageSum struct {
	seen           bool
	in, out, total int64
}

func (u *usageSum) add(p *eventstore.UsageSignal) {
	u.seen = true
	if p.Cumulative {
		u.in, u.out, u.total = deref(p.InputTokens), deref(p.OutputTokens), deref(p.TotalTokens)
		return
	}
	u.in += deref(p.InputTokens)
	u.out += deref(p.OutputTokens)
	u.total += deref(p.TotalTokens)
	if p.TotalTokens == nil {
		u.total = u.in + u.out
	}
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// startTurn makes t the running turn. It returns the open question
// without choices that the turn's prompt answers, "" when none is open.
func (ss *session) startTurn(t *turn) (string, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.turn != nil {
		return "", invalidParams(fmt.Sprintf("session %s has a turn running: wait for its response, or send session/cancel", ss.id))
	}
	ss.turn = t
	return ss.question, nil
}

// endTurn answers t's prompt with reason (when t still runs).
func (ss *session) endTurn(t *turn, reason sdk.StopReason) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.endTurnLocked(t, reason, nil)
}

func (ss *session) endTurnLocked(t *turn, reason sdk.StopReason, err error) {
	if t == nil || t.done {
		return
	}
	t.done, t.err = true, err
	if ss.turn == t {
		ss.turn = nil
	}
	t.end <- reason
}

// cancelTurn marks the running turn cancelled; false when none runs.
func (ss *session) cancelTurn() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.turn == nil {
		return false
	}
	ss.turn.cancelled = true
	return true
}

// replay applies the journal from sequence from. It returns the log
// offset of the last record read, and whether one ended the execution.
func (ss *session) replay(ctx context.Context, from uint64) (last uint64, ended bool, err error) {
	for e, err := range ss.srv.client.Entries(ctx, ss.id, from) {
		var oe *eventstore.OffsetError
		if errors.As(err, &oe) {
			// A record this build cannot decode holds its place and is
			// skipped, as every reader of the journal does.
			ss.srv.log.Warn("a journal record does not decode", "execution", ss.id, "offset", oe.Offset, "err", oe.Err)
			continue
		}
		if err != nil {
			return 0, false, err
		}
		ended = ss.apply(e.Record) || ended
		last = e.Offset
	}
	return last, ended, nil
}

// follow applies the execution's records as its events announce them,
// from the log offset after, until the execution ends or the session
// closes. An event names its record's sequence; the records themselves
// are read from the journal, so none is skipped or applied twice.
func (ss *session) follow(after uint64) {
	defer ss.srv.wg.Done()
	failures := 0
	fail := func(err error) {
		failures++
		ss.srv.log.Warn("follow the execution", "execution", ss.id, "err", err)
		var apiErr *client.Error
		if failures >= daemonRetries || errors.As(err, &apiErr) {
			ss.mu.Lock()
			ss.endTurnLocked(ss.turn, "", daemonErr(fmt.Errorf("lost the daemon while following %s: %w", ss.id, err)))
			ss.mu.Unlock()
		}
	}
	for ev, err := range ss.srv.client.Follow(ss.ctx, client.EventsOptions{Execution: ss.id, After: after, Resume: true}) {
		if err != nil {
			fail(err)
			continue
		}
		var data struct {
			Sequence uint64 `json:"sequence"`
		}
		if json.Unmarshal(ev.Data, &data) != nil || data.Sequence <= ss.lastSeq {
			continue
		}
		_, ended, err := ss.replay(ss.ctx, ss.lastSeq+1)
		if err != nil {
			if ss.ctx.Err() != nil {
				return
			}
			fail(err)
			continue
		}
		failures = 0
		if ended {
			return
		}
	}
}

// apply shows one record and follows the turn and the input requests it
// changes. It reports the execution's end.
func (ss *session) apply(rec eventstore.Record) (ended bool) {
	seq := rec.RecordBase().Sequence
	if seq <= ss.lastSeq {
		return false
	}
	ss.lastSeq = seq
	for _, u := range Updates(rec) {
		if err := ss.srv.conn.SessionUpdate(ss.ctx, sdk.SessionNotification{SessionId: sdk.SessionId(ss.id), Update: u}); err != nil {
			ss.srv.log.Warn("session/update", "execution", ss.id, "err", err)
		}
	}
	if _, header := rec.(*eventstore.Header); header || advertises(rec) {
		ss.advertiseCommands(ss.ctx)
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	t := ss.turn
	switch r := rec.(type) {
	case *eventstore.MessageAccepted:
		if t != nil && r.MessageID == t.messageID {
			t.started = true
		}
	case *eventstore.Observation:
		if r.Signal == nil {
			break
		}
		switch p := r.Signal.Payload.(type) {
		case *eventstore.NeedsInputSignal:
			ss.inputs[p.RequestID] = p
			if !askable(p) {
				ss.question = p.RequestID
			}
		case *eventstore.UsageSignal:
			if t != nil && t.started {
				t.usage.add(p)
			}
		case *eventstore.FailedClaimSignal:
			if t != nil && t.started {
				t.failed = p.Reason
			}
		}
	case *eventstore.StateChanged:
		if req := r.CurrentInputRequestID; req.Set {
			if req.ID == "" {
				ss.question = ""
				// Answered (here or elsewhere): an editor still asked
				// has nothing left to answer.
				for id, cancel := range ss.asking {
					cancel()
					delete(ss.asking, id)
				}
			} else if p, ok := ss.inputs[req.ID]; ok && ss.live && askable(p) {
				ss.askLocked(p)
			}
		}
		if r.Lifecycle.Final() {
			reason := sdk.StopReasonEndTurn
			if t != nil && t.cancelled || r.Lifecycle == eventstore.LifecycleCancelled {
				reason = sdk.StopReasonCancelled
			}
			ss.endTurnLocked(t, reason, nil)
			return true
		}
		if t != nil && t.started && turnEnd(r) {
			ss.endTurnLocked(t, stopReason(t, r), nil)
		}
	}
	return false
}

// turnEnd reports the state change an agent's runtime records when a turn
// ends and the agent waits for the next message: the operator's turn,
// idle, with no input request opened.
func turnEnd(r *eventstore.StateChanged) bool {
	return r.Attention == eventstore.AttentionAwaitingOperator && r.Activity == eventstore.ActivityIdle &&
		(!r.CurrentInputRequestID.Set || r.CurrentInputRequestID.ID == "")
}

// stopReason is the ACP stop reason of an ended turn: cancelled when the
// editor cancelled it, the reason a failed turn names when ACP has it,
// end_turn otherwise.
func stopReason(t *turn, r *eventstore.StateChanged) sdk.StopReason {
	if t.cancelled {
		return sdk.StopReasonCancelled
	}
	why := t.failed + " " + r.Reason
	for _, reason := range []sdk.StopReason{sdk.StopReasonMaxTokens, sdk.StopReasonMaxTurnRequests, sdk.StopReasonRefusal} {
		if strings.Contains(why, string(reason)) {
			return reason
		}
	}
	return sdk.StopReasonEndTurn
}

// ask sends an open input request to the editor.
func (ss *session) ask(p *eventstore.NeedsInputSignal) {
	if !askable(p) {
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.askLocked(p)
}

func (ss *session) askLocked(p *eventstore.NeedsInputSignal) {
	if _, ok := ss.asking[p.RequestID]; ok {
		return
	}
	ctx, cancel := context.WithCancel(ss.ctx)
	ss.asking[p.RequestID] = cancel
	ss.srv.wg.Add(1)
	go func() {
		defer ss.srv.wg.Done()
		defer func() {
			ss.mu.Lock()
			delete(ss.asking, p.RequestID)
			ss.mu.Unlock()
			cancel()
		}()
		ss.requestPermission(ctx, p)
	}()
}

// requestPermission asks the editor to pick one of the request's options
// and records the pick as the operator's answer. A cancelled outcome
// leaves the request open.
func (ss *session) requestPermission(ctx context.Context, p *eventstore.NeedsInputSignal) {
	opts := options(p)
	title := p.TimelineText()
	tc := sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(p.RequestID), Title: &title,
		Meta: map[string]any{MetaKey: map[string]any{"requestId": p.RequestID, "kind": inputKind(p)}}}
	if p.Tool != nil {
		kind := sdk.ToolKindExecute
		tc.Kind = &kind
		if p.Tool.Input != nil {
			tc.RawInput = p.Tool.Input
		}
	}
	resp, err := ss.srv.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{SessionId: sdk.SessionId(ss.id), ToolCall: tc, Options: opts})
	if err != nil {
		if ctx.Err() == nil {
			ss.srv.log.Warn("session/request_permission", "execution", ss.id, "request", p.RequestID, "err", err)
		}
		return
	}
	sel := resp.Outcome.Selected
	if sel == nil {
		return
	}
	valid := false
	for _, o := range opts {
		valid = valid || o.OptionId == sel.OptionId
	}
	if !valid {
		ss.srv.log.Warn("session/request_permission: the editor picked an option not offered", "execution", ss.id, "request", p.RequestID, "option", sel.OptionId)
		return
	}
	payload, _ := json.Marshal(eventstore.MessagePayload{Text: string(sel.OptionId), RequestID: p.RequestID})
	if _, err := ss.srv.client.SendMessage(ss.ctx, ss.id, client.Message{Type: msgAnswer, Source: eventstore.SourceOperator, Payload: payload}); err != nil {
		// 409: answered meanwhile, from elsewhere.
		ss.srv.log.Warn("record the editor's answer", "execution", ss.id, "request", p.RequestID, "err", err)
	}
}

func inputKind(p *eventstore.NeedsInputSignal) string {
	if p.Kind == "" {
		return string(eventstore.InputQuestion)
	}
	return p.Kind
}

// options are the permission options of an input request: its choices,
// or allow, allow-always and deny for a permission that offers none. A
// question's choices are allow_once: ACP has no neutral kind.
func options(p *eventstore.NeedsInputSignal) []sdk.PermissionOption {
	choices := p.Choices
	if len(choices) == 0 {
		choices = []string{eventstore.AnswerAllow, eventstore.AnswerAllowAlways, eventstore.AnswerDeny}
	}
	opts := make([]sdk.PermissionOption, 0, len(choices))
	for _, c := range choices {
		o := sdk.PermissionOption{OptionId: sdk.PermissionOptionId(c), Name: c, Kind: sdk.PermissionOptionKindAllowOnce}
		if p.Kind == string(eventstore.InputPermission) {
			switch c {
			case eventstore.AnswerAllow:
				o.Name = "Allow"
			case eventstore.AnswerAllowAlways:
				o.Name, o.Kind = "Always allow", sdk.PermissionOptionKindAllowAlways
			case eventstore.AnswerDeny:
				o.Name, o.Kind = "Deny", sdk.PermissionOptionKindRejectOnce
			}
		}
		opts = append(opts, o)
	}
	return opts
}
