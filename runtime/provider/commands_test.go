package provider

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// advertised returns the command lists the events advertise.
func advertised(evs []Event) [][]Command {
	var out [][]Command
	for _, e := range evs {
		if e.Commands != nil {
			out = append(out, e.Commands.List)
		}
	}
	return out
}

// TestAdvertisedCommands: Claude Code's init slash_commands (a real
// capture) and an ACP agent's available_commands_update become one
// Commands event each, sent again only when the list changes.
func TestAdvertisedCommands(t *testing.T) {
	c := capturesByName(t, ClaudeCode)
	todo, ok := c["real/todo.jsonl"]
	if !ok {
		t.Fatal("no capture real/todo.jsonl")
	}
	// The init line read twice (Claude Code prints one per turn) is one
	// advertisement.
	got := advertised(parse(t, ClaudeCode, append([][]byte{todo[0]}, todo...)...))
	if len(got) != 1 || len(got[0]) != 44 {
		t.Fatalf("Claude Code advertised %d lists (%v), want one of 44 commands", len(got), got)
	}
	names := []string{}
	for _, c := range got[0] {
		names = append(names, c.Name)
	}
	for _, want := range []string{"compact", "context", "doctor", "security-review", "verify"} {
		if !slices.Contains(names, want) {
			t.Errorf("advertised %v lacks %q", names, want)
		}
	}

	acpLines := lines(
		`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"sess-1"}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"research","description":"Research the code base","input":{"hint":"what to research"}},{"name":"plan","description":"Make a plan"}]}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"research","description":"Research the code base","input":{"hint":"what to research"}},{"name":"plan","description":"Make a plan"}]}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"plan","description":"Make a plan"}]}}}`,
	)
	want := [][]Command{
		{{Name: "research", Description: "Research the code base", Hint: "what to research"}, {Name: "plan", Description: "Make a plan"}},
		{{Name: "plan", Description: "Make a plan"}},
	}
	if diff := cmp.Diff(want, advertised(parse(t, ACP, acpLines...))); diff != "" {
		t.Errorf("ACP advertised (-want +got):\n%s", diff)
	}
}
