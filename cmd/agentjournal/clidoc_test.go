package main

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite docs/cli.md")

// TestCLIDoc keeps docs/cli.md equal to the help the binary prints, so the
// reference cannot fall behind the commands.
func TestCLIDoc(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Command reference\n\nGenerated from `agentjournal help` (`go test ./cmd/agentjournal -run TestCLIDoc -update`). " +
		"The benchmarks are a binary of their own, `agentjournal-bench`: see [bench.md](bench.md).\n\n")
	section := func(title string, args ...string) {
		r := run(t, t.TempDir(), args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		b.WriteString("## " + title + "\n\n```\n" + strings.TrimRight(r.stdout, "\n") + "\n```\n\n")
	}
	section("agentjournal", "help")
	for _, c := range [][]string{{"serve"}, {"launch"}, {"fork"}, {"resume"}, {"send"}, {"observe"}, {"stop"}, {"queue"}, {"tail"}, {"logs"}, {"token"}, {"mcp"}, {"acp"}, {"demo"}, {"run"}, {"ls"}, {"show"}, {"timeline"}, {"search"}, {"journal", "ls"}, {"journal", "cat"}, {"journal", "export"}, {"journal", "import"}, {"log"}, {"replay"}, {"narrative"}, {"todos"}, {"approvals"}, {"sessions"}, {"session"}, {"checkpoint"}, {"cmd"}, {"graph", "export"}, {"lineage"}, {"snapshots", "ls"}, {"snapshots", "prune"}, {"rebuild"}} {
		section(strings.Join(c, " "), append([]string{"help"}, c...)...)
	}
	const path = "../../docs/cli.md"
	got := strings.TrimRight(b.String(), "\n") + "\n"
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/agentjournal -run TestCLIDoc -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Fatalf("docs/cli.md is stale; run go test ./cmd/agentjournal -run TestCLIDoc -update (-file +help):\n%s", diff)
	}
}
