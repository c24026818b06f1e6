package runtime_test

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime"
)

var update = flag.Bool("update", false, "rewrite the list of agents in docs/agents.md")

// The list of agents in docs/agents.md sits between these lines.
const (
	agentsDocPath  = "../docs/agents.md"
	agentsDocStart = "<!-- The list of agents, generated from runtime/agents.go (go test ./runtime -run TestAgentsDoc -update). -->\n"
	agentsDocEnd   = "<!-- End of the list of agents. -->\n"
)

// agentsTable renders the registry as docs/agents.md lists it.
func agentsTable() string {
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	var b strings.Builder
	b.WriteString("| agent | protocol | parser | shapes | native resume | native fork | turns on stdin | approvals |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, a := range runtime.Agents() {
		parser, shapes, approvals := "stdout markers", "–", "–"
		if a.Provider != "" {
			parser = "`" + a.Provider + "`"
		}
		if len(a.Shapes) > 0 {
			var s []string
			for _, sh := range a.Shapes {
				s = append(s, "`"+string(sh)+"`")
			}
			shapes = strings.Join(s, ", ")
		}
		if p := a.Approvals; p != nil {
			approvals = "`" + string(p.Mode) + "`"
			if len(p.Flags) > 0 {
				approvals += " (`" + strings.Join(p.Flags, " ") + "`)"
			}
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s | %s | %s | %s |\n", a.ID, a.Protocol, parser, shapes,
			yes(a.NativeResume), yes(a.NativeFork), yes(a.TurnsOnStdin), approvals)
	}
	return b.String()
}

// TestAgentsDoc keeps the list of agents in the docs equal to the
// registry the runtime launches from.
func TestAgentsDoc(t *testing.T) {
	doc, err := os.ReadFile(agentsDocPath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, agentsDocStart)
	end := strings.Index(text, agentsDocEnd)
	if start < 0 || end < start {
		t.Fatalf("%s has no list of agents between %q and %q", agentsDocPath, agentsDocStart, agentsDocEnd)
	}
	start += len(agentsDocStart)
	want := "\n" + agentsTable() + "\n"
	if *update {
		text = text[:start] + want + text[end:]
		if err := os.WriteFile(agentsDocPath, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(want, text[start:end]); diff != "" {
		t.Fatalf("the list of agents in %s is stale; run go test ./runtime -run TestAgentsDoc -update (-code +doc):\n%s", agentsDocPath, diff)
	}
}

// TestAgentsDocListsLineTypes: docs/agents.md says, per CLI, what every
// line type its parser knows becomes; a type added to a parser must be
// added there.
func TestAgentsDocListsLineTypes(t *testing.T) {
	data, err := os.ReadFile(agentsDocPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	heading := map[string]string{"claude-code": "### Claude Code", "codex": "### Codex", "copilot": "### Copilot CLI", "acp": "### ACP agents"}
	seen := map[string]bool{}
	for _, info := range runtime.Agents() {
		p := info.Provider
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		h, ok := heading[p]
		if !ok {
			t.Errorf("no section of docs/agents.md is known for the %s parser (agent %s)", p, info.ID)
			continue
		}
		start := strings.Index(doc, h)
		if start < 0 {
			t.Fatalf("docs/agents.md has no section %q", h)
		}
		section := doc[start:]
		if end := strings.Index(section[len(h):], "\n## "); end >= 0 {
			section = section[:len(h)+end]
		}
		if next := strings.Index(section[len(h):], "\n### "); next >= 0 {
			section = section[:len(h)+next]
		}
		a, err := runtime.NewAdapter(info.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range a.LineTypes() {
			if !strings.Contains(section, "`"+typ+"`") {
				t.Errorf("docs/agents.md, %s: line type %s is not listed", h, typ)
			}
		}
	}
	if len(seen) != len(heading) {
		t.Errorf("the registry's parsers are %v, want the %d docs/agents.md has sections for", seen, len(heading))
	}
}

// TestRegistry pins the agents and what each does itself, as the API, the
// command line and fork and resume read them.
func TestRegistry(t *testing.T) {
	want := []string{"generic", "claude-code", "codex", "copilot", "codex-app", "acp", "copilot-acp", "gemini", "claude-code-acp", "codex-acp"}
	if diff := cmp.Diff(want, runtime.Adapters()); diff != "" {
		t.Fatalf("Adapters() (-want +got):\n%s", diff)
	}
	type native struct{ Fork, Resume bool }
	wantNative := map[string]native{"generic": {}, "claude-code": {true, true}, "codex": {false, true}, "codex-app": {true, true}, "copilot": {false, true},
		"acp": {false, true}, "gemini": {false, true}, "no-such-agent": {}}
	for id, w := range wantNative {
		fork, resume := runtime.Native(id)
		if got := (native{fork, resume}); got != w {
			t.Errorf("Native(%s) = %+v, want %+v", id, got, w)
		}
	}
	for _, info := range runtime.Agents() {
		a, err := runtime.NewAdapter(info.ID)
		if err != nil {
			t.Fatal(err)
		}
		var shape eventstore.SessionShape
		if len(info.Shapes) > 0 {
			shape = info.Shapes[0]
		}
		if a.ID() != info.ID || a.Provider() != info.Provider || a.NewDriver(nil, shape).TurnsOnStdin() != info.TurnsOnStdin {
			t.Errorf("Agents() says %+v of %s, which its adapter does not", info, info.ID)
		}
		if fork, resume := runtime.Native(info.ID); fork != info.NativeFork || resume != info.NativeResume {
			t.Errorf("Agents() says native fork %v, resume %v of %s; Native says %v, %v", info.NativeFork, info.NativeResume, info.ID, fork, resume)
		}
	}
	if a, err := runtime.NewAdapter(""); err != nil || a.ID() != "generic" {
		t.Errorf(`NewAdapter("") = %v, %v, want the generic adapter`, a, err)
	}
	_, err := runtime.NewAdapter("hologram")
	if err == nil || !strings.Contains(err.Error(), "generic, claude-code, codex, copilot, codex-app, acp") {
		t.Errorf("NewAdapter(hologram) = %v, want an error listing the accepted agents", err)
	}
}
