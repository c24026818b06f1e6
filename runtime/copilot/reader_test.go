package copilot

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
	"github.com/agentjournal/agentjournal/runtime/agent/agenttest"
)

// TestReader runs the contract every agent's reader keeps on this one's
// captures.
func TestReader(t *testing.T) { agenttest.TestReader(t, Agent{}) }

func BenchmarkParseCopilot(b *testing.B) { agenttest.BenchmarkReader(b, Agent{}) }

func FuzzParseCopilot(f *testing.F) {
	agenttest.FuzzReader(f, Agent{},
		`{"type":"tool.execution_start","id":"x","data":{"toolCallId":"c","toolName":"bash","arguments":{"cmd":["ls","-l"]}}}`,
		`{"type":"tool.execution_start","id":"a","data":{"toolCallId":"s","toolName":"sql","arguments":{"query":"INSERT INTO todos (id, title) VALUES ('a', 'b'); UPDATE todos SET status='done' WHERE id IN ('a') OR (title = 'b' AND id != 'c')"}}}`+"\n"+
			`{"type":"tool.execution_complete","id":"b","data":{"toolCallId":"s","success":true}}`,
		`{"type":"tool.execution_start","id":"u","data":{"toolCallId":"u","toolName":"update_todo","arguments":{"todos":"- [x] a\n- [ ] b"}}}`,
		`{"type":"session.error","id":"e","data":{"message":"m"}}`+"\n"+`{"type":"result","exitCode":1,"sessionId":"s"}`,
		`{"type":"assistant.usage","id":"u","data":{"apiCallId":"c","inputTokens":5,"outputTokens":-1}}`,
		`{"type":"session.start","id":"s","data":{"sessionId":"x","copilotVersion":"1.0.102"}}`+"\n"+
			`{"type":"session.usage_record","id":"r","data":{"usage":{"inputTokens":9223372036854775807,"outputTokens":3,"accounting":{"sourceSessionId":"x","sequence":1}}}}`+"\n"+
			`{"type":"session.compaction_complete","id":"c","data":{"compactionAttemptId":"a","compactionTokensUsed":{"inputTokens":1,"outputTokens":1}}}`,
	)
}

// FuzzTodoSQL: the todos table follows any query without panicking, and
// stays within its bounds.
func FuzzTodoSQL(f *testing.F) {
	for _, q := range []string{
		"INSERT INTO todos (id, title) VALUES ('a', 'A'), ('b', 'B')",
		"UPDATE todos SET status = 'done' WHERE id IN ('a', 'b') AND (status = 'x' OR id != 'c')",
		"DELETE FROM main.todos WHERE id NOT IN ('a'); -- done",
		"INSERT OR REPLACE INTO todos VALUES ('a', 'it''s', \"d\", `s`, [x], 1.5e3) ON CONFLICT(id) DO NOTHING RETURNING *",
		"/* unterminated", "'unterminated", "((((", "INSERT INTO todos (", "UPDATE todos SET",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		var tab todoTable
		tab.apply(q)
		tab.apply(q)
		if len(tab.rows) > agent.MaxPlanItems {
			t.Fatalf("%d rows, want at most %d", len(tab.rows), agent.MaxPlanItems)
		}
		_ = tab.plan()
	})
}

// TestCopilotBounds: the sql calls waiting for their end and the todos
// table stay within bounds.
func TestCopilotBounds(t *testing.T) {
	p := agenttest.NewReader(t, Agent{})
	cp := p.(*Driver)
	for i := range maxSQLCalls + 10 {
		p.Parse(fmt.Appendf(nil, `{"type":"tool.execution_start","id":"s%d","data":{"toolCallId":"c%d","toolName":"sql","arguments":{"query":"INSERT INTO todos (id, title) VALUES ('a%d', 'x')"}}}`, i, i, i))
	}
	if n := cp.sqlCalls.Len(); n > maxSQLCalls {
		t.Errorf("%d sql calls remembered, want at most %d", n, maxSQLCalls)
	}
	var values []string
	for i := range agent.MaxPlanItems + 50 {
		values = append(values, fmt.Sprintf("('t%d', 'todo %d')", i, i))
	}
	q, _ := json.Marshal("INSERT INTO todos (id, title) VALUES " + strings.Join(values, ", "))
	evs := agenttest.Parse(t, Agent{},
		fmt.Appendf(nil, `{"type":"tool.execution_start","id":"b1","data":{"toolCallId":"big","toolName":"sql","arguments":{"query":%s}}}`, q),
		[]byte(`{"type":"tool.execution_complete","id":"b2","data":{"toolCallId":"big","success":true}}`))
	plans := agenttest.Payloads[*eventstore.PlanSignal](evs)
	if len(plans) != 1 || len(plans[0].Items) != agent.MaxPlanItems {
		t.Fatalf("got %d plans, want one of %d items", len(plans), agent.MaxPlanItems)
	}
	// A query too long to follow leaves the table unknown: no plan at all.
	long, _ := json.Marshal("UPDATE todos SET status = 'done' WHERE id = '" + strings.Repeat("x", maxSQLBytes) + "'")
	p2 := agenttest.NewReader(t, Agent{})
	p2.Parse(fmt.Appendf(nil, `{"type":"tool.execution_start","id":"l1","data":{"toolCallId":"l","toolName":"sql","arguments":{"query":%s}}}`, long))
	if !p2.(*Driver).todos.unknown {
		t.Error("a query over maxSQLBytes left the table known, want unknown")
	}
}
