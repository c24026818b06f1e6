package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/journalfile"
)

// exportDemo writes a demo journal into a fresh data directory, exports it
// and returns the data directory, the execution id and the exported file.
func exportDemo(t *testing.T) (dir, id, file string) {
	t.Helper()
	dir = t.TempDir()
	id = demoID(t, dir, "export")
	out := t.TempDir()
	stdout := mustRun(t, dir, "journal", "export", id, "--out", out)
	file = filepath.Join(out, "agent-journals", id+".interaction.jsonl")
	if !strings.Contains(stdout, file) || !strings.Contains(stdout, "30 records") {
		t.Errorf("export printed %q, want the path %s and the record count", stdout, file)
	}
	return dir, id, file
}

func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	dir, id, file := exportDemo(t)
	stored := mustRun(t, dir, "journal", "cat", id, "--json")
	exported, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(stored, string(exported)); diff != "" {
		t.Errorf("exported file differs from the stored records (-stored +file):\n%s", diff)
	}

	fresh := t.TempDir()
	out := mustRun(t, fresh, "journal", "import", file)
	if !strings.Contains(out, "Imported 30 records") || !strings.Contains(out, id) {
		t.Errorf("import printed %q, want the record count and the execution id", out)
	}
	imported := mustRun(t, fresh, "journal", "cat", id, "--json")
	if diff := cmp.Diff(journalfile.MarkImported(decodeLines(t, stored)), decodeLines(t, imported)); diff != "" {
		t.Errorf("imported records differ from the originals (-want +got):\n%s", diff)
	}

	again := mustRun(t, fresh, "journal", "import", file)
	if !strings.Contains(again, "already imported") {
		t.Errorf("second import printed %q, want it to say the journal is already imported", again)
	}
	if got := mustRun(t, fresh, "journal", "cat", id, "--json"); got != imported {
		t.Errorf("a second import changed the journal")
	}
	// Importing into the data directory it came from is a no-op too.
	if out := mustRun(t, dir, "journal", "import", file); !strings.Contains(out, "already imported") {
		t.Errorf("import into the source data directory printed %q, want already imported", out)
	}
}

func TestExportRefusesToOverwrite(t *testing.T) {
	t.Parallel()
	dir, id, file := exportDemo(t)
	before, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, dir, "journal", "export", id, "--out", filepath.Dir(filepath.Dir(file)))
	if r.code != exitError || !strings.Contains(r.stderr, "refusing to overwrite") || !strings.Contains(r.stderr, file) {
		t.Errorf("second export: exit %d, stderr %q; want 1 and a refusal naming %s", r.code, r.stderr, file)
	}
	after, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Errorf("a refused export changed %s", file)
	}
	// Another journal goes into the same directory beside it.
	other := demoID(t, dir, "other")
	mustRun(t, dir, "journal", "export", other, "--out", filepath.Dir(filepath.Dir(file)))
	if _, err := os.Stat(filepath.Join(filepath.Dir(file), other+".interaction.jsonl")); err != nil {
		t.Errorf("second journal not exported: %v", err)
	}
}

func TestImportResumesAnInterruptedImport(t *testing.T) {
	t.Parallel()
	dir, id, file := exportDemo(t)
	lines := readFileLines(t, file)
	fresh := t.TempDir()
	mustRun(t, fresh, "journal", "import", writeLines(t, lines[:3]))
	out := mustRun(t, fresh, "journal", "import", file)
	if !strings.Contains(out, "remaining 27 of 30") {
		t.Errorf("import after a partial one printed %q, want it to say it wrote the remaining records", out)
	}
	want := journalfile.MarkImported(decodeLines(t, mustRun(t, dir, "journal", "cat", id, "--json")))
	got := decodeLines(t, mustRun(t, fresh, "journal", "cat", id, "--json"))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resumed import differs (-want +got):\n%s", diff)
	}
}

func TestImportRefusesADifferentJournal(t *testing.T) {
	t.Parallel()
	dir, id, file := exportDemo(t)
	lines := readFileLines(t, file)
	lines[len(lines)-1] = editRecord(t, lines[len(lines)-1], func(b *eventstore.Base) {
		b.RecordID = eventstore.RecordID(b.JournalID, eventstore.KindStateChanged, "something-else")
	})
	before := mustRun(t, dir, "journal", "cat", id, "--json")
	r := run(t, dir, "journal", "import", writeLines(t, lines))
	if r.code != exitError || !strings.Contains(r.stderr, "already has a journal") || !strings.Contains(r.stderr, "sequence 30") {
		t.Errorf("import over a different journal: exit %d, stderr %q; want 1 and the sequence that differs", r.code, r.stderr)
	}
	if after := mustRun(t, dir, "journal", "cat", id, "--json"); after != before {
		t.Errorf("a refused import changed the stored journal")
	}
}

func TestImportRejectsBadFiles(t *testing.T) {
	t.Parallel()
	_, _, file := exportDemo(t)
	good := readFileLines(t, file)
	bigText := func(n int) func(t *testing.T, lines []string) []string {
		return func(t *testing.T, lines []string) []string {
			var m map[string]any
			if err := json.Unmarshal([]byte(lines[3]), &m); err != nil {
				t.Fatal(err)
			}
			m["payload"] = map[string]string{"text": strings.Repeat("x", n)}
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			lines[3] = string(b)
			return lines
		}
	}
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, lines []string) []string
		want []string // in stderr
	}{
		{"unknown kind", func(t *testing.T, lines []string) []string {
			lines[4] = strings.Replace(lines[4], `"type":"message.delivery"`, `"type":"message.deliverd"`, 1)
			return lines
		}, []string{"line 5:", `unknown record type "message.deliverd"`, "want one of:"}},
		{"bad enum", func(t *testing.T, lines []string) []string {
			lines[4] = strings.Replace(lines[4], `"status":"delivered"`, `"status":"deliverd"`, 1)
			return lines
		}, []string{"line 5:", `"status"`, `"deliverd" is not accepted`}},
		{"sequence gap", func(t *testing.T, lines []string) []string {
			return append(lines[:8], lines[9:]...)
		}, []string{"line 9: has sequence 10, want 9"}},
		{"another journal", func(t *testing.T, lines []string) []string {
			lines[6] = editRecord(t, lines[6], func(b *eventstore.Base) {
				b.AgentExecutionID = "ae-somebody-else"
				b.JournalID = eventstore.JournalIDFor(b.Scope, b.OwnerID, b.AgentExecutionID)
			})
			return lines
		}, []string{"line 7: belongs to journal", "ae-somebody-else", "of line 1"}},
		{"line over the size limit", bigText(journalfile.MaxLine + 10), []string{"line 4: longer than", "1048576"}},
		{"record over the size limit", bigText(eventstore.DefaultMaxRecordSize), []string{"line 4: record is", "at most 1048576 bytes"}},
		{"malformed JSON", func(t *testing.T, lines []string) []string {
			lines[2] = `{"recordId": "rec-1", `
			return lines
		}, []string{"line 3:", "not a JSON object"}},
		{"blank line", func(t *testing.T, lines []string) []string {
			return append(lines[:10], append([]string{""}, lines[10:]...)...)
		}, []string{"line 11: blank"}},
		{"header not first", func(t *testing.T, lines []string) []string {
			lines[0], lines[1] = lines[1], lines[0]
			return lines
		}, []string{"line 1: is a state.changed record; the first line must be the journal.header"}},
		{"repeated record id", func(t *testing.T, lines []string) []string {
			var first struct {
				RecordID string `json:"recordId"`
			}
			if err := json.Unmarshal([]byte(lines[8]), &first); err != nil {
				t.Fatal(err)
			}
			lines[9] = editRecord(t, lines[9], func(b *eventstore.Base) { b.RecordID = first.RecordID })
			return lines
		}, []string{"line 10: repeats recordId", "of line 9"}},
		{"record id of another journal", func(t *testing.T, lines []string) []string {
			rec, err := eventstore.Decode([]byte(lines[3]))
			if err != nil {
				t.Fatal(err)
			}
			other := eventstore.RecordID("journal-00000000000000000000000a", rec.Kind(), eventstore.NaturalKey(rec))
			lines[3] = editRecord(t, lines[3], func(b *eventstore.Base) { b.RecordID = other })
			return lines
		}, []string{"line 4: recordId", "made for another journal"}},
		{"empty file", func(t *testing.T, lines []string) []string { return nil }, []string{"empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := writeLines(t, tc.edit(t, append([]string(nil), good...)))
			dir := t.TempDir()
			r := run(t, dir, "journal", "import", path)
			if r.code != exitError {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, exitError, r.stderr)
			}
			for _, want := range append(tc.want, "nothing was imported") {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr does not mention %q:\n%.2000s", want, r.stderr)
				}
			}
			if ls := mustRun(t, dir, "journal", "ls"); !strings.HasPrefix(ls, "No journals") {
				t.Errorf("a rejected import left journals behind:\n%s", ls)
			}
		})
	}
}

// exportReworded exports the demo's journal with its decisions worded as an
// older policy worded them: a policy deciding the observations itself midway
// through an import would write today's words instead. It returns the
// execution's id, the file and its lines.
func exportReworded(t *testing.T) (id, file string, lines []string) {
	t.Helper()
	_, id, file = exportDemo(t)
	lines = readFileLines(t, file)
	for i, line := range lines {
		if strings.Contains(line, `"decision.recorded"`) {
			lines[i] = strings.Replace(line, `"reason":"`, `"reason":"as worded before: `, 1)
		}
	}
	return id, writeLines(t, lines), lines
}

func readFileLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// writeLines writes lines as a JSONL file and returns its path.
func writeLines(t *testing.T, lines []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	data := strings.Join(lines, "\n")
	if len(lines) > 0 {
		data += "\n"
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// editRecord decodes a record line, changes its base fields and encodes it
// again.
func editRecord(t *testing.T, line string, edit func(*eventstore.Base)) string {
	t.Helper()
	r, err := eventstore.Decode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	edit(r.RecordBase())
	data, err := eventstore.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestImportBesideARunningDaemon: a journal imported into the log a daemon
// serves lands whole, as one write: the daemon's policy, which decides
// every new observation, never sees part of it, so it adds nothing and the
// import never meets its decisions midway.
func TestImportBesideARunningDaemon(t *testing.T) {
	t.Parallel()
	id, file, want := exportReworded(t)
	daemonDir := t.TempDir()
	url, token, _ := startServe(t, daemonDir, "--nats-listen", fmt.Sprintf("127.0.0.1:%d", fixtures.FreePorts(t, 1)[0]))
	join := []string{"--nats-url", daemonNATSURL(t, daemonDir), "--nats-secret-file", daemon.Layout{Dir: daemonDir}.NATSSecret()}

	out := mustRun(t, t.TempDir(), append(join, "journal", "import", file)...)
	if !strings.Contains(out, fmt.Sprintf("Imported %d records", len(want))) {
		t.Fatalf("import printed %q", out)
	}
	// Once the daemon has read everything, the journal is the file.
	waitHealth(t, url, token, func(h map[string]any) bool { return h["lag"] == float64(0) })
	code, v := call(t, "GET", url+"/v1/executions/"+id, token, nil)
	if code != 200 {
		t.Fatalf("the imported execution: %d %v", code, v)
	}
	got := mustRun(t, t.TempDir(), append(join, "journal", "cat", id, "--json")...)
	if diff := cmp.Diff(journalfile.MarkImported(decodeLines(t, strings.Join(want, "\n")+"\n")), decodeLines(t, got)); diff != "" {
		t.Errorf("the daemon's log differs from the imported file (-file +log):\n%s", diff)
	}
}
