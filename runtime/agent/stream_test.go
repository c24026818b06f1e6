package agent_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/internal/textclip"

	"github.com/agentjournal/agentjournal/runtime/agent"
	"github.com/agentjournal/agentjournal/runtime/agent/agenttest"
	"github.com/agentjournal/agentjournal/runtime/claude"
	"github.com/agentjournal/agentjournal/runtime/codex"
)

func TestNewStream(t *testing.T) {
	for _, prefix := range []string{"", strings.Repeat("p", agent.MaxPrefixLength+1)} {
		if _, err := agent.NewStream(agent.Codex, prefix); !errors.Is(err, agent.ErrInvalidPrefix) {
			t.Errorf("NewStream with a %d byte prefix = %v, want ErrInvalidPrefix", len(prefix), err)
		}
		if err := (codex.Agent{}).NewDriver(nil, "").(agent.Reader).Output(prefix); !errors.Is(err, agent.ErrInvalidPrefix) {
			t.Errorf("Output with a %d byte prefix = %v, want ErrInvalidPrefix", len(prefix), err)
		}
	}
	// The longest prefix still gives ids within the limit on a long stream.
	d := codex.Agent{}.NewDriver(nil, "").(*codex.Driver)
	if err := d.Output(strings.Repeat("p", agent.MaxPrefixLength)); err != nil {
		t.Fatal(err)
	}
	agent.SetLine(d.Stream, 1<<64-2)
	for _, e := range d.Parse([]byte("garbage")) {
		if err := agenttest.CheckEvent(2, e); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBounds: a hostile stream cannot grow the parser's memory.
func TestBounds(t *testing.T) {
	p := agenttest.NewReader(t, claude.Agent{})
	s := p.(*claude.Driver).Stream
	for i := range agent.MaxOpenToolCalls + 500 {
		p.Parse(fmt.Appendf(nil, `{"type":"assistant","uuid":"u%d","message":{"id":"m%d","content":[{"type":"tool_use","id":"t%d","name":"Read","input":{"file_path":"f"}}],"usage":{"output_tokens":1}}}`, i, i, i))
	}
	m := agent.Remembered(s)
	if m.Open != agent.MaxOpenToolCalls {
		t.Errorf("%d open calls tracked, want %d", m.Open, agent.MaxOpenToolCalls)
	}
	if m.Steps > agent.MaxRemembered {
		t.Errorf("%d step usages remembered, want at most %d", m.Steps, agent.MaxRemembered)
	}
	if m.Closed > agent.MaxRemembered {
		t.Errorf("%d closed calls remembered, want at most %d", m.Closed, agent.MaxRemembered)
	}
	if m.Seen > agent.MaxRemembered {
		t.Errorf("%d event ids remembered, want at most %d", m.Seen, agent.MaxRemembered)
	}
	// The oldest call was forgotten: its result is ignored.
	if evs := p.Parse([]byte(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t0"}]}}`)); len(evs) != 0 {
		t.Errorf("result of a forgotten call gave %v, want nothing", agenttest.DescribeAll(evs))
	}
	// Unknown types are remembered within bounds too.
	for i := range agent.MaxRemembered + 10 {
		p.Parse(fmt.Appendf(nil, `{"type":"unknown-%d"}`, i))
	}
	if n := agent.Remembered(s).Unknowns; n > agent.MaxRemembered {
		t.Errorf("%d unknown types remembered, want at most %d", n, agent.MaxRemembered)
	}
	// So are the todo lists of TodoWrite calls that have not ended.
	for i := range agent.MaxPendingPlans + 10 {
		p.Parse(fmt.Appendf(nil, `{"type":"assistant","message":{"id":"p%d","content":[{"type":"tool_use","id":"todo%d","name":"TodoWrite","input":{"todos":[{"content":"x","status":"pending"}]}}]}}`, i, i))
	}
	if n := agent.Remembered(s).Plans; n > agent.MaxPendingPlans {
		t.Errorf("%d pending plans remembered, want at most %d", n, agent.MaxPendingPlans)
	}
	// A huge tool id is bounded as a key.
	long := strings.Repeat("k", 100_000)
	p.Parse(fmt.Appendf(nil, `{"type":"assistant","message":{"content":[{"type":"tool_use","id":%q,"name":"Bash"}]}}`, long))
	for _, id := range agent.Remembered(s).OpenKeys {
		if len(id) > agent.MaxKeyBytes {
			t.Fatalf("an open call is keyed by %d bytes, want at most %d", len(id), agent.MaxKeyBytes)
		}
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly ten", 11, "exactly ten"},
		{"abcdefghij", 6, "abc…"},
		{"ééééé", 6, "é…"}, // never cuts a rune in half
		{"a\xffb", 10, "a\uFFFDb"},
	}
	for _, tt := range tests {
		got := textclip.Fit(tt.in, tt.max)
		if got != tt.want {
			t.Errorf("textclip.Fit(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
		if len(got) > tt.max && len(tt.in) > tt.max {
			t.Errorf("textclip.Fit(%q, %d) is %d bytes", tt.in, tt.max, len(got))
		}
	}
}
