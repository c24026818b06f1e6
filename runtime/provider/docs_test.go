package provider

import (
	"os"
	"strings"
	"testing"
)

// TestAgentsDocListsLineTypes: docs/agents.md says, per CLI, what every line
// type the parser knows becomes; a type added to a parser must be added
// there.
func TestAgentsDocListsLineTypes(t *testing.T) {
	data, err := os.ReadFile("../../docs/agents.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	heading := map[string]string{ClaudeCode: "### Claude Code", Codex: "### Codex", Copilot: "### Copilot CLI", ACP: "### ACP agents"}
	for _, p := range Providers() {
		start := strings.Index(doc, heading[p])
		if start < 0 {
			t.Fatalf("docs/agents.md has no section %q", heading[p])
		}
		section := doc[start:]
		if end := strings.Index(section[len(heading[p]):], "\n## "); end >= 0 {
			section = section[:len(heading[p])+end]
		}
		if next := strings.Index(section[len(heading[p]):], "\n### "); next >= 0 {
			section = section[:len(heading[p])+next]
		}
		for _, typ := range KnownLineTypes(p) {
			if !strings.Contains(section, "`"+typ+"`") {
				t.Errorf("docs/agents.md, %s: line type %s is not listed", heading[p], typ)
			}
		}
	}
}
