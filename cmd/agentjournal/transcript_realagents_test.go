//go:build unix

package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/fixtures/modelserver"
	"github.com/agentjournal/agentjournal/fixtures/realagent"
	"github.com/agentjournal/agentjournal/transcript"
)

// The transcripts of the real CLIs' runs: each CLI plans, runs a command
// that succeeds and one that fails, and answers in Markdown, against the
// scripted model server; the transcript of its journal is held to a golden
// file under testdata/transcripts (go test -run TestRealAgentTranscript
// -update rewrites them), and run must have printed that transcript as it
// went, instead of the CLI's JSON.

// transcriptAnswer is the last turn's text: Markdown the transcript renders.
const transcriptAnswer = "# Done\n\nThe **command** printed `hello-from-tool`; the [log](https://example.com/log) has more.\n\n- one\n- two\n\n```\ncode block\n```\n"

// geminiCLI is Gemini CLI over ACP, the fourth CLI of the transcripts.
var geminiCLI = realCLI{agent: "gemini", name: "gemini", env: realagent.GeminiEnv,
	shell: func(id, command string) modelserver.ToolCall {
		return modelserver.ToolCall{ID: id, Name: "run_shell_command", Input: map[string]any{"command": command, "description": "Run the command"}}
	}}

func TestRealAgentTranscript(t *testing.T) {
	t.Parallel()
	for _, c := range append(realCLIs[:len(realCLIs):len(realCLIs)], geminiCLI) {
		t.Run(c.agent, func(t *testing.T) {
			t.Parallel()
			var turns []modelserver.Turn
			calls, plans := planCalls[c.agent]
			if plans {
				turns = append(turns, modelserver.Turn{Text: "Planning.", ToolCalls: []modelserver.ToolCall{calls[0]}, Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 20}})
			}
			turns = append(turns,
				modelserver.Turn{Text: "I will run a command.", ToolCalls: []modelserver.ToolCall{c.shell("call_shell_1", "echo hello-from-tool")},
					Usage: modelserver.Usage{InputTokens: 200, OutputTokens: 30}},
				modelserver.Turn{ToolCalls: []modelserver.ToolCall{c.shell("call_fail_1", "echo broken-tool >&2; exit 3")},
					Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 20}})
			if plans {
				turns = append(turns, modelserver.Turn{ToolCalls: []modelserver.ToolCall{calls[1]}, Usage: modelserver.Usage{InputTokens: 150, OutputTokens: 20}})
			}
			turns = append(turns, modelserver.Turn{Text: transcriptAnswer, Usage: modelserver.Usage{InputTokens: 260, OutputTokens: 12}})
			flags := []string{"--permissions", "allow"}
			if c.agent == "claude-code" {
				flags = append(flags, "--env", "CLAUDE_CODE_ENABLE_TODO_TOOLS=1", "--env", "CLAUDE_CODE_ENABLE_TASKS=0")
			}
			r := runScenario(t, c, modelserver.Scenario{Turns: turns}, "Plan and run", flags...)
			if r.res.code != exitOK {
				r.failf(t, "run exit %d, want 0", r.res.code)
			}
			var text bytes.Buffer
			if err := transcript.Render(&text, transcript.Entries(r.records), transcript.Options{}); err != nil {
				t.Fatal(err)
			}
			// run printed the transcript as the journal grew: the same
			// lines, in the same order, the CLI's plain output (its
			// stderr) between them, and none of the CLI's JSON.
			if missing := linesInOrder(r.res.stdout, text.String()); missing != "" {
				r.failf(t, "run's output does not hold the journal's transcript, in order, from %q on:\n%s\nwant, within it:\n%s", missing, r.res.stdout, text.String())
			}
			for _, line := range strings.Split(r.res.stdout, "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "{") {
					r.failf(t, "run printed the CLI's protocol %q:\n%s", line, r.res.stdout)
				}
			}
			checkGolden(t, filepath.Join("testdata", "transcripts", c.agent+".txt"), normalizeTranscript(text.String(), r.id, r.work))
		})
	}
}

var (
	// transcriptTimes are the durations a transcript says: how long a
	// tool call, a turn or the execution took.
	transcriptTimes = regexp.MustCompile(`\b\d+(\.\d+)?(ms|s)\b|\b\d+m\d+(\.\d+)?s\b`)
	// requestIDs are the ids CLIs give their permission requests.
	requestIDs = regexp.MustCompile(`\(request [^)]+\)`)
)

// normalizeTranscript replaces what differs from run to run in a
// transcript: times, request ids, the execution's id and the directories
// of the run.
func normalizeTranscript(s, id string, dirs ...string) string {
	for _, d := range dirs {
		s = strings.ReplaceAll(s, d, "DIR")
	}
	s = strings.ReplaceAll(s, id, "ID")
	s = requestIDs.ReplaceAllString(s, "(request REQUEST)")
	// A time too short to say is left out: the time goes, with its
	// brackets or its comma.
	s = transcriptTimes.ReplaceAllString(s, "TIME")
	return strings.NewReplacer(" (TIME)", "", ", TIME)", ")").Replace(s)
}

// linesInOrder returns "" when every line of want is a line of got, in
// the same order, other lines between them allowed; else the first line
// of want not found after the ones before it.
func linesInOrder(got, want string) string {
	lines := strings.Split(got, "\n")
	for _, w := range strings.Split(strings.TrimSuffix(want, "\n"), "\n") {
		i := slices.Index(lines, w)
		if i < 0 {
			return w
		}
		lines = lines[i+1:]
	}
	return ""
}
