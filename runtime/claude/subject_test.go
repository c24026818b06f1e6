package claude

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/runtime/agent/agenttest"
)

// TestToolSubjects: a Skill call is told by its skill, a Task or Agent call
// by its subagent's description, in its target and in a request for
// permission to run it; the permission's choices come in the one order of
// every agent (allow, allow-always, deny).
func TestToolSubjects(t *testing.T) {
	use := func(id, name, input string) string {
		return `{"type":"assistant","message":{"id":"m` + id + `","role":"assistant","model":"claude","content":[{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":` + input + `}]},"session_id":"s"}`
	}
	ask := func(id, name, input string) string {
		return `{"type":"control_request","request_id":"` + id + `","request":{"subtype":"can_use_tool","tool_name":"` + name + `","input":` + input + `,"permission_suggestions":[{"type":"addRules"}]}}`
	}
	got := agenttest.DescribeAll(agenttest.Parse(t, Agent{}, agenttest.Lines(
		use("t1", "Skill", `{"skill":"pdf"}`),
		use("t2", "Task", `{"description":"Find the tests","prompt":"Look for every test","subagent_type":"Explore"}`),
		use("t3", "Agent", `{"description":"Review the diff","prompt":"Review it"}`),
		ask("r1", "Skill", `{"skill":"pdf"}`),
		ask("r2", "Agent", `{"description":"Review the diff","prompt":"Review it"}`),
	)...))
	want := []string{
		"session s ",
		"activity executing tool:Skill: pdf tool=Skill call=Skill:started active=true",
		"activity executing tool:Task: Find the tests tool=Task call=Task:started active=true",
		"activity executing tool:Agent: Review the diff tool=Agent call=Agent:started active=true",
		"needs permission: Allow Skill: pdf? [allow allow-always deny]",
		"needs permission: Allow Agent: Review the diff? [allow allow-always deny]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
