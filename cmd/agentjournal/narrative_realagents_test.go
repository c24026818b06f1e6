//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/fixtures/modelserver"
	"github.com/agentjournal/agentjournal/fixtures/realagent"
	"github.com/agentjournal/agentjournal/narrative"
)

// TestRealAgentNarrative: the story of a real CLI's run against the
// scripted model server (a command that succeeds, one that fails, a
// closing Markdown message) matches its golden narrative in Markdown and
// HTML, ids, times, durations, counts and paths normalised. -update
// rewrites testdata/narrative/.
func TestRealAgentNarrative(t *testing.T) {
	t.Parallel()
	eachCLI(t, func(t *testing.T, c realCLI) {
		sc := modelserver.Scenario{Turns: []modelserver.Turn{
			{Text: "I will look first.", ToolCalls: []modelserver.ToolCall{c.shell("call_story_1", "echo story-ok")},
				Usage: modelserver.Usage{InputTokens: 200, OutputTokens: 30}},
			{ToolCalls: []modelserver.ToolCall{c.shell("call_story_2", "echo story-broken >&2; exit 3")},
				Usage: modelserver.Usage{InputTokens: 260, OutputTokens: 20}},
			{Text: "Done:\n\n- `echo story-ok` printed **story-ok**\n- the second command failed with exit status 3",
				Usage: modelserver.Usage{InputTokens: 300, OutputTokens: 40}},
		}}
		r := runScenario(t, c, sc, "Run the two commands,\nthen tell me what happened.", "--permissions", "allow")
		r.checkEnd(t, "completed")
		run, err := narrative.BuildRun(r.records)
		if err != nil {
			r.failf(t, "narrative: %v", err)
		}
		n := &narrative.Narrative{Version: narrative.Version, Subject: "execution", ID: r.id, SessionID: run.SessionID, Runs: []narrative.Run{*run}}
		for _, format := range []string{"md", "html"} {
			var doc bytes.Buffer
			if err := narrative.Render(&doc, n, format, false); err != nil {
				t.Fatal(err)
			}
			got := normaliseNarrative(doc.String(), r.id, r.work)
			path := filepath.Join("testdata", "narrative", c.agent+"."+format)
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (write it with -update)", err)
			}
			if d := cmp.Diff(string(want), got); d != "" {
				r.failf(t, "%s differs (-want +got; rewrite with -update if the change is meant):\n%s", path, d)
			}
		}
	})
}

// narrativeNoise is what differs from one run of a real CLI to the next:
// ids, event ids, times, durations, sequences and counts of records.
var narrativeNoise = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`sha256:[0-9a-f]{64}`), "sha256:EVENT"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`), "TIME"},
	{regexp.MustCompile(`after [0-9.]+(µs|ms|s|m[0-9.]*s|h[0-9m.]*s)`), "after DURATION"},
	{regexp.MustCompile(`seq \d+(–\d+)?`), "seq N"},
	{regexp.MustCompile(`\d+ records`), "N records"},
	{regexp.MustCompile(`eff-out-\d+-\d+`), "eff-ID"},
}

func normaliseNarrative(doc, id, work string) string {
	doc = strings.ReplaceAll(doc, id, "ae-ID")
	// The CLIs' path, as Markdown escapes it and as HTML shows it.
	root := filepath.Join(realagent.Root(), ".agents")
	doc = strings.ReplaceAll(doc, strings.ReplaceAll(root, "_", `\_`), "AGENTS")
	doc = strings.ReplaceAll(doc, root, "AGENTS")
	if resolved, err := filepath.EvalSymlinks(work); err == nil {
		doc = strings.ReplaceAll(doc, resolved, "WORKDIR")
	}
	doc = strings.ReplaceAll(doc, work, "WORKDIR")
	for _, n := range narrativeNoise {
		doc = n.re.ReplaceAllString(doc, n.with)
	}
	return doc
}
