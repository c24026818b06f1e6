package eventstore

import (
	"strings"
	"testing"
)

// TestHeaderAgentVersion: a header's agent version survives the round trip
// and is bounded; a header without one has no field.
func TestHeaderAgentVersion(t *testing.T) {
	h := validRecords()[KindHeader].(*Header)
	if data, err := Encode(h); err != nil || strings.Contains(string(data), "agentVersion") {
		t.Fatalf("header without a version encodes as %s (%v), want no agentVersion", data, err)
	}
	h.AgentVersion = "0.150.1"
	data, err := Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.(*Header).AgentVersion; got != "0.150.1" {
		t.Fatalf("decoded agentVersion %q, want 0.150.1", got)
	}
	h.AgentVersion = strings.Repeat("9", MaxAgentVersionLength+1)
	if err := Validate(h); err == nil || !strings.Contains(err.Error(), "agentVersion") {
		t.Fatalf("Validate(agentVersion of %d bytes) = %v, want a problem with agentVersion", MaxAgentVersionLength+1, err)
	}
}
