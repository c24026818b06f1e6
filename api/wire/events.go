package wire

import "github.com/agentjournal/agentjournal/eventstore"

// Event names of GET /v1/events (spec 001). Clients listen for them by
// name: never rename one.
const (
	EventStarted    = "execution.started"
	EventUpdated    = "execution.updated"
	EventCompleted  = "execution.completed"
	EventFailed     = "execution.failed"
	EventCancelled  = "execution.cancelled"
	EventTerminated = "execution.terminated"
	EventMessage    = "execution.message"
	// EventTerminal is a terminal lane's change: not a journal record, and
	// its id is not a position to resume from.
	EventTerminal = "terminal"
	// EventDataChanged is the last event of every record.
	EventDataChanged = "data.changed"
	// EventOverflow is the last event of a stream that fell too far
	// behind; its data (Overflow) names the lastEventId to resume from.
	EventOverflow = "overflow"
)

// EventData is the data of every event of GET /v1/events but overflow.
type EventData struct {
	ExecutionID string `json:"executionId"`
	// Offset is the log offset of the record, also the event's id. A
	// terminal event carries the offset of the last record published.
	Offset   uint64          `json:"offset"`
	Sequence uint64          `json:"sequence,omitempty"`
	Record   eventstore.Kind `json:"record,omitempty"`
	// Signal is the signal type of an observation's record (progress,
	// plan, needs_input, …), so that a client keeping a view of the
	// execution knows which part of it changed without reading it all
	// again. Empty for other records.
	Signal eventstore.SignalType `json:"signal,omitempty"`
	// State is the execution's summary. A replayed event (one sent
	// because of Last-Event-ID) carries it as of its record: the journal
	// folded up to that sequence. A live event carries the read model's
	// when the event is sent, which holds the record's effect and maybe
	// later ones. Either way State.LastSequence is the sequence it is as
	// of. Nil (null) when there is none (the read model does not hold the
	// execution, or its journal has no header).
	State *Summary `json:"state"`
	// Message is the operator-visible text of an execution.message.
	Message *eventstore.MessageSignal `json:"message,omitempty"`
	// Terminal is the lane of a terminal event.
	Terminal *Terminal `json:"terminal,omitempty"`
}

// Overflow is the data of the overflow event: the stream fell too far
// behind and is closed; a reader resumes after LastEventID.
type Overflow struct {
	LastEventID uint64 `json:"lastEventId"`
	Message     string `json:"message"`
}
