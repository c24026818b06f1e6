package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/narrative"
)

// TestNarrativeOfAnInterruptedSession: a run interrupted by its daemon
// stopping, resumed under the next daemon, tells one session of two runs
// with the interruption between them; the command prints the same through
// the daemon and on the data directory.
func TestNarrativeOfAnInterruptedSession(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, _, stop := startServe(t, dir)
	agent := fixtures.AgentBinary(t)
	first := launched(t, dir, "--prompt", "start the work", "--", agent,
		"echo:1", `signal:{"type":"message","payload":{"text":"working"}}`, "sleep:3s")
	awaitState(t, dir, first, "working", func(st execution.State) bool { return hasText(st, "working") })
	if r := stop(); r.code != exitOK {
		t.Fatalf("serve exited %d: %s", r.code, r.stderr)
	}

	_, _, stop = startServe(t, dir)
	resumed := strings.TrimSpace(mustRun(t, dir, "resume", first, "--prompt", "go on"))
	awaitFinal(t, dir, resumed)

	var n narrative.Narrative
	viaDaemon := mustRun(t, dir, "narrative", resumed, "--session", "--format", "json")
	if err := json.Unmarshal([]byte(viaDaemon), &n); err != nil {
		t.Fatalf("narrative --format json: %v\n%s", err, viaDaemon)
	}
	if n.Subject != "session" || n.SessionID != first || len(n.Runs) != 2 || n.Runs[0].ExecutionID != first || n.Runs[1].ExecutionID != resumed {
		t.Fatalf("session narrative %s with runs %d, want session %s of %s then %s", n.SessionID, len(n.Runs), first, first, resumed)
	}
	if n.Runs[1].Resumes != first || n.Runs[1].Lifecycle != "completed" {
		t.Errorf("second run resumes %q, ended %q; want it to resume %s and complete", n.Runs[1].Resumes, n.Runs[1].Lifecycle, first)
	}
	var interrupted bool
	for _, l := range n.Runs[0].Section(narrative.Interruption) {
		interrupted = interrupted || l.Marker == narrative.Observed && l.Kind == "interruption.recorded" && strings.Contains(l.Text, "shutdown")
	}
	if !interrupted {
		t.Errorf("first run's interruptions %+v, want the shutdown observed", n.Runs[0].Section(narrative.Interruption))
	}
	if len(n.Between) != 1 || n.Between[0].Marker != narrative.Inferred || !strings.Contains(n.Between[0].Text, "was interrupted: interrupted: shutdown") ||
		!strings.Contains(n.Between[0].Text, "resumed by "+resumed) || n.Between[0].From == nil || n.Between[0].From.ExecutionID != first {
		t.Errorf("between the runs %+v, want the inferred link from the interruption of %s to %s", n.Between, first, resumed)
	}
	for _, prompt := range []string{"start the work", "go on"} {
		if !strings.Contains(viaDaemon, prompt) {
			t.Errorf("the narrative lacks the prompt %q", prompt)
		}
	}

	md := mustRun(t, dir, "narrative", first)
	if !strings.Contains(md, "# Narrative of execution "+first) || !strings.Contains(md, "interrupted: shutdown") || strings.Contains(md, resumed) {
		t.Errorf("narrative of %s alone:\n%s", first, md)
	}
	if !strings.Contains(md, "### Turn 1") || strings.Contains(md, "**observed**") {
		t.Errorf("narrative of %s is not told as a story:\n%s", first, md)
	}
	if audit := mustRun(t, dir, "narrative", first, "--audit"); !strings.Contains(audit, "**observed**") || !strings.Contains(audit, "### What was requested") {
		t.Errorf("narrative --audit of %s is not the line form:\n%s", first, audit)
	}
	page := filepath.Join(t.TempDir(), "session.html")
	if out := mustRun(t, dir, "narrative", first, "--session", "--format", "html", "--out", page); out != "" {
		t.Errorf("with --out printed %q", out)
	}
	html, err := os.ReadFile(page)
	if err != nil || !strings.HasPrefix(string(html), "<!DOCTYPE html>") || !strings.Contains(string(html), "Between runs 1 and 2") {
		t.Errorf("--out %s: %v, %.200s", page, err, html)
	}

	if r := stop(); r.code != exitOK {
		t.Fatalf("serve exited %d: %s", r.code, r.stderr)
	}
	if onDisk := mustRun(t, dir, "narrative", resumed, "--session", "--format", "json"); onDisk != viaDaemon {
		t.Errorf("without the daemon the narrative differs:\n%s\nthrough it:\n%s", onDisk, viaDaemon)
	}
	if r := run(t, dir, "narrative", first, "--format", "pdf"); r.code != exitUsage || !strings.Contains(r.stderr, "md, html or json") {
		t.Errorf("--format pdf: exit %d %q, want a usage error", r.code, r.stderr)
	}
	if r := run(t, dir, "narrative", "ae-000000000000000000000000"); r.code != exitError || !strings.Contains(r.stderr, "no journal") {
		t.Errorf("unknown id: exit %d %q, want no journal", r.code, r.stderr)
	}
}
