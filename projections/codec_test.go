package projections

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

func codecItems() []execution.TimelineItem {
	at := time.Date(2026, 1, 5, 9, 0, 3, 500_000_000, time.UTC)
	return []execution.TimelineItem{
		{ID: "rec-ce32bd70c5f2110643beb2ad61cc2a1a", Sequence: 2, At: at, Kind: execution.ItemState,
			Record: eventstore.KindStateChanged, Text: "lifecycle starting → running",
			Lifecycle: eventstore.LifecycleRunning, Attention: eventstore.AttentionAutonomous},
		{ID: "rec-8a3e8f8e13abc55fb0ac4008fe4c4f26", Sequence: 3, At: at.In(time.FixedZone("", 2*3600)),
			Kind: execution.ItemNeedsInput, Record: eventstore.KindObservation, Text: "go ahead?",
			Source: "mcp", Signal: eventstore.SignalNeedsInput, ObservationID: "o-1-ask", RequestID: "req-1",
			Choices: []string{"yes", "no", ""}},
		{ID: "rec-9b3e8f8e13abc55fb0ac4008fe4c4f26", Sequence: 4, At: at, Kind: execution.ItemBlocked,
			Record: eventstore.KindObservation, Text: "no credentials", Source: "mcp", Signal: eventstore.SignalBlocked,
			ObservationID: "o-2-blocked", Reason: "no credentials", Needs: "a read token for the registry"},
		{ID: "rec-9c3e8f8e13abc55fb0ac4008fe4c4f26", Sequence: 5, At: at, Kind: execution.ItemBlocked,
			Record: eventstore.KindObservation, Text: "", Signal: eventstore.SignalBlocked, Needs: "only needs"},
		// Ids not in the store's own form, strings not in the intern
		// table, the zero time, a negative offset and empty choices.
		{ID: "rec-8A3E8F8E13ABC55FB0AC4008FE4C4F26", Sequence: 1 << 40, Kind: "future-kind",
			Record: "future.kind", Text: "", Source: "somewhere-new", Signal: "new_signal",
			MessageID: "m\x00\xff", MessageType: "prompt", Action: "new-action", Lifecycle: "paused"},
		{ID: "rec-short", Sequence: 9, At: time.Unix(-1, 999_999_999).In(time.FixedZone("", -3*3600-1800)),
			Kind: execution.ItemDecision, Action: eventstore.ActionRecordOnly},
		{ID: "", Sequence: 0, At: time.Unix(0, 0).UTC()},
		// A tool call completed, one running without a target, and one
		// whose fields are all new strings.
		{ID: "rec-7d3e8f8e13abc55fb0ac4008fe4c4f26", Sequence: 12, At: at, Kind: execution.ItemTool, Record: eventstore.KindActivity,
			Text: "Bash: go test ./... — failed (exit 1) after 2.3s", Tool: &execution.ToolItem{CallID: "toolu_01", Name: "Bash",
				Status: eventstore.ToolCallFailed, Target: &eventstore.Target{Kind: eventstore.TargetCommand, Path: "go test ./..."},
				DurationMs: ptr(int64(2300)), EndSequence: 15, Error: "exit status 1", ExitCode: ptr(int64(-1)),
				Output: "--- FAIL\n… 9000 bytes left out …\nFAIL", OutputBytes: 11000}},
		{ID: "rec-6d3e8f8e13abc55fb0ac4008fe4c4f26", Sequence: 13, At: at, Kind: execution.ItemTool, Record: eventstore.KindActivity,
			Text: "Read — running", Tool: &execution.ToolItem{Name: "Read", Status: eventstore.ToolCallStarted, DurationMs: ptr(int64(0))}},
		{ID: "rec-5d3e8f8e13abc55fb0ac4008fe4c4f26", Sequence: 14, Kind: execution.ItemTool, Reason: "r",
			Tool: &execution.ToolItem{Name: "x", Status: "new-status", Target: &eventstore.Target{Kind: "planet", Label: "l"}}},
	}
}

func ptr[T any](v T) *T { return &v }

func TestItemCodecRoundTrips(t *testing.T) {
	for _, it := range codecItems() {
		v := encodeItem(nil, &it)
		got, err := decodeItem(it.Sequence, v)
		if err != nil {
			t.Fatalf("decode %s: %v", it.ID, err)
		}
		if diff := cmp.Diff(it, got); diff != "" {
			t.Errorf("item %q round trip (-want +got):\n%s", it.ID, diff)
		}
		// The API serves items as JSON: the stored form must give the same
		// text, zone offsets included.
		want, _ := json.Marshal(it)
		gotJSON, _ := json.Marshal(got)
		if !bytes.Equal(want, gotJSON) {
			t.Errorf("item %q as JSON:\n%s\nwant\n%s", it.ID, gotJSON, want)
		}
		js, _ := json.Marshal(it)
		if len(v) >= len(js) {
			t.Errorf("item %q takes %d bytes stored, %d as JSON", it.ID, len(v), len(js))
		}
	}
}

func TestDecisionCodecRoundTrips(t *testing.T) {
	for _, d := range []execution.DecisionRef{
		{DecisionID: "dec-msg-answer-11", Action: eventstore.ActionUpdateState, Reason: "operator answered req-10", Sequence: 172},
		{DecisionID: "rec-8a3e8f8e13abc55fb0ac4008fe4c4f26", Action: "unknown-action"},
		{},
	} {
		got, err := decodeDecision(encodeDecision(nil, d))
		if err != nil {
			t.Fatalf("decode %+v: %v", d, err)
		}
		if got != d {
			t.Errorf("round trip of %+v gave %+v", d, got)
		}
	}
}

func TestCodecRefusesDamage(t *testing.T) {
	item := encodeItem(nil, &codecItems()[1])
	dec := encodeDecision(nil, execution.DecisionRef{DecisionID: "d", Action: eventstore.ActionReject, Reason: "r", Sequence: 3})
	for name, v := range map[string][]byte{
		"empty":            {},
		"json":             []byte(`{"id":"x"}`),
		"truncated":        item[:len(item)-1],
		"trailing":         append(slices.Clone(item), 0),
		"bad id form":      append([]byte{itemFormat, 7}, item[2:]...),
		"past intern":      {itemFormat, 0, 0xff, 0x7f},
		"string too long":  {itemFormat, 0, 0x7e, 'a'},
		"bad time form":    {itemFormat, 0, 0, 9},
		"bad nanoseconds":  {itemFormat, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"too many choices": {itemFormat, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0x01},
	} {
		if _, err := decodeItem(1, v); err == nil {
			t.Errorf("item %s: decoded", name)
		}
	}
	for name, v := range map[string][]byte{
		"empty":     {},
		"json":      []byte(`{"decisionId":"d"}`),
		"truncated": dec[:len(dec)-1],
		"trailing":  append(slices.Clone(dec), 1),
	} {
		if _, err := decodeDecision(v); err == nil {
			t.Errorf("decision %s: decoded", name)
		}
	}
}

// Every enumerated value an item or decision carries today is interned; a
// new one still round-trips (TestItemCodecRoundTrips) but takes more room
// until it is appended to internTable.
func TestInternTableCoversTheEnums(t *testing.T) {
	var want []string
	add := func(vs ...string) { want = append(want, vs...) }
	for _, k := range eventstore.Kinds() {
		add(string(k))
	}
	for _, s := range eventstore.SignalTypes() {
		add(string(s))
		if spec, ok := eventstore.LookupSignal(s); ok && spec.Timeline != eventstore.TimelineNone {
			add(string(spec.Timeline))
		}
	}
	for _, l := range eventstore.Lifecycles {
		add(string(l))
	}
	for _, a := range eventstore.Attentions {
		add(string(a))
	}
	add(string(execution.ItemMessage), string(execution.ItemDelivery), string(execution.ItemDecision),
		string(execution.ItemState), string(execution.ItemOwnerEffect))
	add(string(eventstore.ActionReject), string(eventstore.ActionRecordOnly), string(eventstore.ActionEmitMessage),
		string(eventstore.ActionUpdateState), string(eventstore.ActionRouteOwnerEffect))
	add(string(eventstore.SourceOperator), string(eventstore.SourceDaemon), string(eventstore.SourceSystem), string(eventstore.SourceOwner))
	for _, s := range want {
		if _, ok := internIndex[s]; !ok {
			t.Errorf("%q is not in internTable", s)
		}
	}
}

func FuzzDecodeItem(f *testing.F) {
	for _, it := range codecItems() {
		f.Add(encodeItem(nil, &it))
	}
	f.Add(encodeDecision(nil, execution.DecisionRef{DecisionID: "d", Action: "reject", Sequence: 1}))
	f.Fuzz(func(t *testing.T, v []byte) {
		// Whatever decodes must encode back to the same bytes, or at
		// least to bytes that decode to the same item.
		if it, err := decodeItem(7, v); err == nil {
			again, err := decodeItem(7, encodeItem(nil, &it))
			if err != nil {
				t.Fatalf("re-decode: %v", err)
			}
			if diff := cmp.Diff(it, again); diff != "" {
				t.Fatalf("item changed on re-encoding (-first +second):\n%s", diff)
			}
		}
		if d, err := decodeDecision(v); err == nil {
			again, err := decodeDecision(encodeDecision(nil, d))
			if err != nil || again != d {
				t.Fatalf("decision %+v re-decoded as %+v, %v", d, again, err)
			}
		}
	})
}
