package storetest

import (
	"encoding/json"
	"fmt"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Ref returns a journal reference for a test execution.
func Ref(owner eventstore.OwnerEntity, ownerID, executionID string) eventstore.Reference {
	ref, err := eventstore.NewReference(owner, ownerID, executionID)
	if err != nil {
		panic(err)
	}
	return ref
}

// Header returns a minimal valid journal header.
func Header(agentID string) *eventstore.Header {
	return &eventstore.Header{
		AgentID: agentID,
		ProtocolDescriptor: eventstore.ProtocolDescriptor{
			Posture: eventstore.PostureStructuredHeadless,
			Messages: []eventstore.MessageDescriptor{{
				Type: "prompt", Label: "Prompt", Delivery: eventstore.DeliveryRequired,
				MutatesContext: true, Portability: eventstore.PortabilityCrossAgent,
			}},
			Signals:          eventstore.SurfacedSignalTypes(),
			SignalTransports: []eventstore.SignalTransport{eventstore.SignalViaStdoutMarker},
		},
		TransportState: &eventstore.TransportState{StructuredLane: eventstore.LaneStdio},
	}
}

// Message returns an accepted operator prompt with the given id.
func Message(id, text string) *eventstore.MessageAccepted {
	payload, _ := json.Marshal(map[string]string{"text": text})
	return &eventstore.MessageAccepted{
		MessageID: id, Source: eventstore.SourceOperator, MessageType: "prompt",
		Payload: payload, MutatesContext: true,
	}
}

// Progress returns an observation carrying a progress signal.
func Progress(id, summary string) *eventstore.Observation {
	return &eventstore.Observation{
		ObservationID: id, Source: eventstore.ObservedMCP, Confidence: eventstore.ConfidenceAuthoritative,
		Signal: eventstore.NewSignal(&eventstore.ProgressSignal{Summary: summary}),
	}
}

// Activity returns an activity update with an explicit record id, since
// activity updates have no natural key.
func Activity(journalID string, n int) *eventstore.ActivityUpdated {
	r := &eventstore.ActivityUpdated{Activity: eventstore.ActivityExecuting,
		Progress: &eventstore.Progress{Summary: fmt.Sprintf("step %d", n)}}
	r.RecordID = eventstore.RecordID(journalID, eventstore.KindActivity, fmt.Sprintf("test-%d", n))
	return r
}
