package agent_test

import (
	"testing"

	"github.com/agentjournal/agentjournal/runtime/agent"
)

func TestParseVersion(t *testing.T) {
	for out, want := range map[string]string{
		"2.1.328 (Claude Code)\n":    "2.1.328",
		"codex-cli 0.169.0\n":        "0.169.0",
		"0.1.0-alpha.3":              "0.1.0-alpha.3",
		"GitHub Copilot CLI 1.0.102": "1.0.102",
		"usage: tool [flags]":        "",
	} {
		if got := agent.ParseVersion(out); got != want {
			t.Errorf("ParseVersion(%q) = %q, want %q", out, got, want)
		}
	}
}

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"0.150.1", "0.151.0", -1},
		{"0.169.0", "0.151.0", 1},
		{"2.1.263", "2.1.263", 0},
		{"2.1", "2.1.0", 0},
		{"2.1.10", "2.1.9", 1},
		{"1.0.0-beta", "1.0.0", 0},
	} {
		if got := agent.CompareVersions(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	if agent.InRange("", "", "") {
		t.Error("an unknown version is in a range")
	}
}
