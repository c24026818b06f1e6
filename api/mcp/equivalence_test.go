package mcp

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/runtime/marker"
)

// TestMarkerEquivalence sends every surfaced signal, in turn, through MCP
// into one execution and as a stdout marker into another with the same
// header, and compares the two journals record by record: observations are
// equal but for their id, source and raw text, and the policy's decisions
// and follow-up records are equal but for ids.
func TestMarkerEquivalence(t *testing.T) {
	e := newEnv(t) // MCP signals go to A
	const execMarker = "exec-marker"
	e.refs[execMarker] = e.ensure(t, execMarker)
	const nonce = "0123456789abcdef0123456789abcdef"

	cs := connect(t, e.url, tokenA, nil)
	for i, p := range surfaced {
		res, _ := call(t, cs, &sdk.CallToolParams{Name: ToolName(p.SignalType()), Arguments: args(t, p)})
		viaMCP := result(t, res).Decision

		line, err := marker.Format(nonce, eventstore.NewSignal(p))
		if err != nil {
			t.Fatal(err)
		}
		parsed := marker.Parse(line, nonce)
		if parsed.Result != marker.Signal {
			t.Fatalf("%s: marker parsed as %v (%v), want a signal", p.SignalType(), parsed.Result, parsed.Err)
		}
		o := marker.Observation(parsed, line, fmt.Sprintf("stdout-%d", i+1), eventstore.ObservedProviderOutput)
		viaMarker, err := e.rec.RecordObservation(t.Context(), execMarker, o)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(viaMarker, viaMCP, cmpopts.IgnoreFields(Decision{}, "DecisionID")); diff != "" {
			t.Errorf("%s: decision (-marker +mcp):\n%s", p.SignalType(), diff)
		}
	}

	mcpRecords, markerRecords := e.records(t, execA), e.records(t, execMarker)
	if len(mcpRecords) != len(markerRecords) {
		t.Fatalf("MCP journal has %d records, marker journal %d, want the same", len(mcpRecords), len(markerRecords))
	}
	var observations, decisions, followUps int
	for i := range mcpRecords {
		m, k := mcpRecords[i], markerRecords[i]
		switch m.(type) {
		case *eventstore.Observation:
			observations++
			mo, ko := m.(*eventstore.Observation), k.(*eventstore.Observation)
			if mo.Source != eventstore.ObservedMCP || ko.Source != eventstore.ObservedProviderOutput {
				t.Errorf("sources %s and %s, want mcp and provider-output", mo.Source, ko.Source)
			}
		case *eventstore.Decision:
			decisions++
		case *eventstore.Header:
		default:
			followUps++
		}
		if diff := cmp.Diff(k, m, ignoreIDs); diff != "" {
			t.Errorf("record %d (-marker +mcp):\n%s", i+1, diff)
		}
	}
	if observations != len(surfaced) || decisions != len(surfaced) || followUps == 0 {
		t.Errorf("compared %d observations, %d decisions, %d follow-up records; want %d, %d and some",
			observations, decisions, followUps, len(surfaced), len(surfaced))
	}

	// The replayed states agree on everything the records mean.
	mcpState, err := execution.Replay(mcpRecords)
	if err != nil {
		t.Fatal(err)
	}
	markerState, err := execution.Replay(markerRecords)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(markerState, mcpState,
		cmpopts.IgnoreFields(execution.State{}, "ID", "SessionID", "Journal", "CreatedAt", "UpdatedAt", "ProcessedObservations", "Decisions"),
		cmpopts.IgnoreFields(execution.Latest{}, "At"),
		cmpopts.IgnoreFields(execution.TimelineItem{}, "ID", "At", "Source", "ObservationID"),
	); diff != "" {
		t.Errorf("replayed state (-marker +mcp):\n%s", diff)
	}
}

// ignoreIDs leaves out of a record comparison what differs between two
// journals and two transports by construction: the base fields naming the
// journal and time, the observation's id, source and raw text, and ids
// derived from the observation id.
var ignoreIDs = cmp.Options{
	cmpopts.IgnoreFields(eventstore.Base{}, "RecordID", "JournalID", "AgentExecutionID", "OccurredAt"),
	cmpopts.IgnoreFields(eventstore.Observation{}, "ObservationID", "Source", "RawText"),
	cmpopts.IgnoreFields(eventstore.Decision{}, "DecisionID", "ObservationID"),
	cmpopts.IgnoreFields(eventstore.OwnerEffect{}, "EffectID", "ObservationID"),
}
