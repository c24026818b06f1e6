package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/agentjournal/agentjournal/execution"

	"github.com/agentjournal/agentjournal/commands"
	"github.com/agentjournal/agentjournal/eventstore"
)

func (rt *Runtime) replay(ctx context.Context, ref eventstore.Reference) (*execution.State, error) {
	st := &execution.State{}
	for e, err := range rt.cfg.Store.ReadJournal(ctx, ref, 1) {
		if err != nil {
			return nil, fmt.Errorf("replay %s: %w", ref.AgentExecutionID, err)
		}
		if _, err := st.Apply(e.Record); err != nil {
			return nil, fmt.Errorf("replay %s: %w", ref.AgentExecutionID, err)
		}
	}
	return st, nil
}

// SendMessageInput is a structured message for an execution.
type SendMessageInput struct {
	// MessageID is kept when given (a retry with the same id gets the first
	// acknowledgement); one is assigned when empty.
	MessageID string
	Type      string
	Source    eventstore.MessageSource
	Payload   json.RawMessage
	// launchArgument marks the launch prompt of CLIs that take it as an
	// argument: it was delivered when the process started.
	launchArgument bool
}

// MessageAck acknowledges a message: its journal sequence and delivery.
type MessageAck struct {
	MessageID string                       `json:"messageId"`
	Sequence  uint64                       `json:"sequence"`
	Delivery  eventstore.DeliveryStatus    `json:"delivery"`
	Transport eventstore.DeliveryTransport `json:"transport"`
	Reason    string                       `json:"reason,omitempty"`
	Duplicate bool                         `json:"duplicate,omitempty"`
}

// SendMessage validates a message against the execution's descriptors,
// records it, delivers it through the adapter and records the delivery. A
// message to an execution whose process is gone is accepted and recorded
// as a failed delivery.
func (rt *Runtime) SendMessage(ctx context.Context, id string, in SendMessageInput) (MessageAck, error) {
	ref, desc, p, err := rt.resolve(ctx, id)
	if err != nil {
		return MessageAck{}, err
	}
	if _, ok := desc.Message(in.Type); !ok {
		// Not in the header: maybe a command the agent advertised.
		if st, err := rt.replay(ctx, ref); err == nil {
			desc.Messages = commands.ViewOf(st).Messages
		}
	}
	if err := rt.answerable(ref, desc, p, in); err != nil {
		return MessageAck{}, err
	}
	if in.Type == "answer" {
		in.Payload = rt.namedChoice(ctx, ref, in.Payload)
	}
	m, err := rt.accept(ctx, ref, desc, &in)
	if err != nil || m.dup != nil {
		return m.ack(), err
	}
	return rt.deliverAccepted(ctx, ref, p, m, in.launchArgument)
}

// answerable refuses an answer that no process here can take, before it
// is recorded: an accepted answer closes its request, and one closed for
// an agent that never heard the answer strands it (it waits on, and its
// real answer is refused as not open). The caller learns why, and the
// request stays open for an answer sent where the agent runs. A retried
// answer (its id recorded before) passes, to get its first
// acknowledgement; so does one whose descriptor asks for no delivery.
func (rt *Runtime) answerable(ref eventstore.Reference, desc eventstore.ProtocolDescriptor, p *process, in SendMessageInput) error {
	if in.Type != "answer" || p.alive() {
		return nil
	}
	if md, ok := desc.Message(in.Type); ok && md.Delivery == eventstore.DeliveryNoneMode {
		return nil
	}
	if in.MessageID != "" {
		if _, seen, err := rt.processed(ref, false, in.MessageID); err != nil || seen {
			return err
		}
	}
	where := "this daemon"
	if rt.cfg.Host != "" {
		where = "host " + rt.cfg.Host
	}
	return fmt.Errorf("answer to %s: %w on %s: the answer is not recorded and its request stays open", ref.AgentExecutionID, ErrNotRunning, where)
}

// namedChoice is an answer's payload with its text made the choice it
// names, by number or by text (execution.InputRequest.Choice), when it
// answers the request asked last: the journal and the agent then hear
// "allow-always", never "2", whichever surface it was typed at and
// whatever order the agent offered its options in. Any other payload is
// returned as it is, for accept to judge.
func (rt *Runtime) namedChoice(ctx context.Context, ref eventstore.Reference, payload json.RawMessage) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(payload, &fields) != nil {
		return payload
	}
	var p eventstore.MessagePayload
	if json.Unmarshal(payload, &p) != nil || p.RequestID == "" {
		return payload
	}
	st, err := rt.replay(ctx, ref)
	if err != nil || st.LastInputRequest.RequestID != p.RequestID {
		return payload
	}
	choice := st.LastInputRequest.Choice(p.Text)
	if choice == p.Text {
		return payload
	}
	fields["text"], _ = json.Marshal(choice)
	out, err := json.Marshal(fields)
	if err != nil {
		return payload
	}
	return out
}

// alive reports a process that has not exited; false for nil.
func (p *process) alive() bool {
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// accepted is a message recorded as accepted, not delivered yet; dup is
// set instead when its id was accepted before.
type accepted struct {
	md     eventstore.MessageDescriptor
	stored *eventstore.MessageAccepted
	dup    *MessageAck
}

func (m accepted) ack() MessageAck {
	if m.dup != nil {
		return *m.dup
	}
	return MessageAck{}
}

// accept validates a message against the descriptors and records it.
func (rt *Runtime) accept(ctx context.Context, ref eventstore.Reference, desc eventstore.ProtocolDescriptor, in *SendMessageInput) (accepted, error) {
	id := ref.AgentExecutionID
	md, ok := desc.Message(in.Type)
	if !ok {
		types := make([]string, len(desc.Messages))
		for i, m := range desc.Messages {
			types[i] = m.Type
		}
		return accepted{}, fmt.Errorf("%w: %q is not a message type of %s (want one of: %s)", ErrUnknownMessageType, in.Type, id, strings.Join(types, ", "))
	}
	if in.Source == "" {
		in.Source = eventstore.SourceOperator
	}
	if in.MessageID == "" {
		in.MessageID = "msg-" + randomHex(8)
	}
	if len(in.Payload) == 0 {
		in.Payload = json.RawMessage("null")
	}
	rec := &eventstore.MessageAccepted{MessageID: in.MessageID, Source: in.Source, MessageType: in.Type,
		Payload: in.Payload, MutatesContext: md.MutatesContext}
	if req, _ := rec.RequestID(); in.Type == "answer" && req == "" {
		// Nothing could decide what it answers.
		return accepted{}, fmt.Errorf(`%w: an answer names the input request it answers: payload {"requestId": "…", "text": "…"}`, ErrBadMessage)
	}
	if seq, ok, err := rt.processed(ref, false, in.MessageID); err != nil || ok {
		if err != nil {
			return accepted{}, fmt.Errorf("send %s to %s: %w", in.Type, id, err)
		}
		ack, err := rt.firstAck(ctx, ref, in.MessageID, seq)
		return accepted{dup: &ack}, err
	}
	e, err := rt.cfg.Store.Append(ctx, ref, rec)
	if err != nil {
		return accepted{}, fmt.Errorf("send %s to %s: %w", in.Type, id, err)
	}
	stored := e.Record.(*eventstore.MessageAccepted)
	if e.Record.RecordBase().Sequence != rec.Sequence || stored != rec {
		// The id was accepted before: answer with the first acknowledgement.
		ack, err := rt.firstAck(ctx, ref, in.MessageID, e.Record.RecordBase().Sequence)
		return accepted{dup: &ack}, err
	}
	return accepted{md: md, stored: stored}, nil
}

// deliverAccepted delivers an accepted message and records the outcome.
func (rt *Runtime) deliverAccepted(ctx context.Context, ref eventstore.Reference, p *process, m accepted, launchArgument bool) (MessageAck, error) {
	// A prompt passed on the command line started the first turn with its
	// process: it starts no next turn, even when that turn has ended (and
	// the execution waits for the operator) before its delivery is
	// recorded.
	prompt := p != nil && m.stored.MessageType == "prompt" && !launchArgument
	if prompt {
		p.mu.Lock()
		if p.awaiting {
			p.nextTurn = m.stored.MessageID
		}
		p.mu.Unlock()
	}
	delivery := rt.deliver(ctx, p, m.md, m.stored, launchArgument)
	delivery.MessageID = m.stored.MessageID
	if _, err := rt.cfg.Store.Append(ctx, ref, delivery); err != nil {
		return MessageAck{}, fmt.Errorf("record delivery of %s: %w", m.stored.MessageID, err)
	}
	switch {
	case prompt && delivery.Status == eventstore.DeliveryDelivered:
		rt.turnStarted(p, m.stored.MessageID)
	case prompt:
		p.mu.Lock()
		if p.nextTurn == m.stored.MessageID {
			p.nextTurn = ""
		}
		p.mu.Unlock()
	}
	return MessageAck{MessageID: m.stored.MessageID, Sequence: m.stored.Sequence, Delivery: delivery.Status,
		Transport: delivery.Transport, Reason: delivery.Reason}, nil
}

func (rt *Runtime) deliver(ctx context.Context, p *process, md eventstore.MessageDescriptor, m *eventstore.MessageAccepted, launchArgument bool) *eventstore.MessageDelivery {
	d := &eventstore.MessageDelivery{Transport: eventstore.TransportAdapter}
	switch {
	case md.Delivery == eventstore.DeliveryNoneMode:
		d.Status, d.Transport, d.Reason = eventstore.DeliverySkipped, eventstore.TransportNone, "the descriptor asks for no delivery"
		return d
	case launchArgument:
		d.Status, d.Reason = eventstore.DeliveryDelivered, "passed on the command line at launch"
		return d
	case p == nil:
		d.Status, d.Reason = eventstore.DeliveryFailed, "the agent process is not running"
		return d
	}
	select {
	case <-p.done:
		d.Status, d.Reason = eventstore.DeliveryFailed, "the agent process has exited"
		return d
	default:
	}
	c := p.current()
	if m.MessageType == "prompt" {
		rt.snapshotSettled(p)
	}
	if !p.driver.TurnsOnStdin() && m.MessageType == "prompt" {
		return rt.startTurn(ctx, p, c, m, d)
	}
	if c == nil {
		d.Status, d.Reason = eventstore.DeliveryFailed, "no turn is running"
		return d
	}
	if m.MessageType == "interrupt" && !conversing(p.driver) {
		if err := c.signal(syscall.SIGINT); err != nil {
			d.Status, d.Reason = eventstore.DeliveryFailed, "signal: "+err.Error()
			return d
		}
		d.Status, d.Reason = eventstore.DeliveryDelivered, "SIGINT"
		return d
	}
	data, ok, err := encode(p.driver, m, c.term() != nil)
	switch {
	case err != nil:
		d.Status, d.Reason = eventstore.DeliveryFailed, err.Error()
		return d
	case !ok:
		d.Status, d.Transport, d.Reason = eventstore.DeliverySkipped, eventstore.TransportNone, p.adapter.ID()+" takes no input while it runs"
		return d
	}
	d.Transport, err = c.write(data)
	if err != nil {
		d.Status, d.Reason = eventstore.DeliveryFailed, "write to the agent: "+err.Error()
		if p.shape == eventstore.ShapeOneShot {
			d.Reason = "a one-shot execution takes no message after its turn: " + err.Error()
		}
		return d
	}
	d.Status = eventstore.DeliveryDelivered
	return d
}

// startTurn delivers a prompt to a CLI that takes one turn per process:
// it starts the process of the next turn, resuming the provider session.
func (rt *Runtime) startTurn(ctx context.Context, p *process, c *child, m *eventstore.MessageAccepted, d *eventstore.MessageDelivery) *eventstore.MessageDelivery {
	if c != nil {
		// The last turn's result is in but its process has not exited
		// yet: the next turn starts when it has.
		p.mu.Lock()
		ended := c.turnEnd != nil
		p.mu.Unlock()
		if ended {
			select {
			case <-c.exited:
				c = p.current()
			case <-time.After(rt.cfg.StopGrace):
			case <-ctx.Done():
			}
		}
	}
	p.mu.Lock()
	session, turns := p.sessionID, p.turns
	p.mu.Unlock()
	switch {
	case c != nil:
		d.Status, d.Reason = eventstore.DeliveryFailed, "a turn is running; send the next prompt when it has ended"
		return d
	case p.shape == eventstore.ShapeOneShot:
		d.Status, d.Reason = eventstore.DeliveryFailed, "a one-shot execution takes no prompt after its turn"
		return d
	case turns > 0 && session == "":
		d.Status, d.Reason = eventstore.DeliveryFailed, "the agent never said its session id, so its session cannot be resumed"
		return d
	}
	pl, err := m.DecodePayload()
	if err != nil {
		d.Status, d.Reason = eventstore.DeliveryFailed, err.Error()
		return d
	}
	program, args, err := p.driver.Start(pl.Text, session)
	if err == nil {
		err = rt.startPipes(p, program, args, false)
	}
	if err != nil {
		d.Status, d.Reason = eventstore.DeliveryFailed, "start the next turn: "+err.Error()
		return d
	}
	d.Status, d.Reason = eventstore.DeliveryDelivered, "started a process for the turn"
	if session != "" {
		d.Reason = "resumed session " + session + " in a new process"
	}
	return d
}

// turnStarted records that a delivered prompt started the next turn of a
// conversation that was waiting for it, unless the turn's end recorded its
// start already.
func (rt *Runtime) turnStarted(p *process, messageID string) {
	p.turnMu.Lock()
	defer p.turnMu.Unlock()
	rt.recordTurnStart(p, messageID)
}

// recordTurnStart records the start of the turn messageID starts, once; the
// caller holds p.turnMu.
func (rt *Runtime) recordTurnStart(p *process, messageID string) {
	p.mu.Lock()
	if !p.awaiting || p.nextTurn != messageID {
		p.mu.Unlock()
		return
	}
	p.awaiting, p.nextTurn = false, ""
	n := p.turns + 1
	p.mu.Unlock()
	// In order behind the previous turn's output, if that is held for
	// the log.
	if err := rt.journalState(p, fmt.Sprintf("turn:%d:start", n), &eventstore.StateChanged{Attention: eventstore.AttentionAutonomous,
		Reason: fmt.Sprintf("turn %d started by message %s", n, messageID)}); err != nil && !errors.Is(err, errHeld) {
		rt.cfg.Logger.Error("record turn start", "execution", p.ref.AgentExecutionID, "err", err)
	}
}

// firstAck rebuilds the acknowledgement of a message accepted before.
func (rt *Runtime) firstAck(ctx context.Context, ref eventstore.Reference, messageID string, seq uint64) (MessageAck, error) {
	ack := MessageAck{MessageID: messageID, Sequence: seq, Duplicate: true, Delivery: eventstore.DeliveryAttempted, Transport: eventstore.TransportNone}
	for e, err := range rt.cfg.Store.ReadJournal(ctx, ref, seq) {
		if err != nil {
			return ack, err
		}
		if d, ok := e.Record.(*eventstore.MessageDelivery); ok && d.MessageID == messageID {
			ack.Delivery, ack.Transport, ack.Reason = d.Status, d.Transport, d.Reason
			break
		}
	}
	return ack, nil
}
