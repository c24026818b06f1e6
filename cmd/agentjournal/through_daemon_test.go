package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/journalfile"
)

// outcome is what a run printed and how it exited, comparable with cmp.
type outcome struct {
	Stdout, Stderr string
	Code           int
}

func runOutcome(t *testing.T, dir string, args ...string) outcome {
	t.Helper()
	r := run(t, dir, args...)
	return outcome{Stdout: r.stdout, Stderr: r.stderr, Code: r.code}
}

// ran is what one command printed, how it exited, and the journal files
// it wrote into its "{out}" directory.
type ran struct {
	Outcome outcome
	Files   map[string]string // journal file name -> content
}

// runAll runs each command on dir. An argument "{out}" is a fresh
// directory in each run, named "{out}" in the output.
func runAll(t *testing.T, dir string, commands [][]string) []ran {
	t.Helper()
	runs := make([]ran, len(commands))
	for i, args := range commands {
		out := t.TempDir()
		args = append([]string(nil), args...)
		for j, a := range args {
			if a == "{out}" {
				args[j] = out
			}
		}
		o := runOutcome(t, dir, args...)
		o.Stdout = strings.ReplaceAll(o.Stdout, out, "{out}")
		o.Stderr = strings.ReplaceAll(o.Stderr, out, "{out}")
		runs[i] = ran{Outcome: o, Files: journalFiles(t, out)}
	}
	return runs
}

// sameRuns wants each command to have printed, exited and written the same
// without a daemon and through it.
func sameRuns(t *testing.T, commands [][]string, without, through []ran) {
	t.Helper()
	for i, args := range commands {
		if diff := cmp.Diff(without[i], through[i]); diff != "" {
			t.Errorf("agentjournal %s through the daemon differs (-without a daemon +through it):\n%s", strings.Join(args, " "), diff)
		}
	}
}

// sameThroughTheDaemon runs each command on dir without a daemon, starts a
// daemon on dir, runs each again, which then goes through the daemon (it
// holds dir locked, so nothing else could answer), and wants the same
// output, exit status and files.
func sameThroughTheDaemon(t *testing.T, dir string, commands [][]string) {
	t.Helper()
	without := runAll(t, dir, commands)
	startServe(t, dir)
	sameRuns(t, commands, without, runAll(t, dir, commands))
}

// journalFiles reads the journal files an export wrote under dir.
func journalFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	paths, err := filepath.Glob(filepath.Join(dir, "agent-journals", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(p)] = string(data)
	}
	return files
}

// TestCommandsThroughTheDaemon: every command that reads journals prints
// the same, byte for byte, and exits the same, whether it opens the data
// directory itself or the daemon that holds it serves it; unknown ids and
// bad arguments too.
func TestCommandsThroughTheDaemon(t *testing.T) {
	t.Parallel()
	dir, a, b := interleavedDemos(t)
	sameThroughTheDaemon(t, dir, [][]string{
		{"journal", "ls"},
		{"journal", "ls", "--json"},
		{"journal", "cat", a},
		{"journal", "cat", a, "--json"},
		{"journal", "cat", b, "--from-seq", "25"},
		{"journal", "cat", b, "--from-seq", "99", "--json"},
		{"journal", "cat", "ae-nosuch"},
		{"journal", "cat", strings.Repeat("x", 300)},
		{"log"},
		{"log", "--json"},
		{"log", "--from-offset", "20", "--limit", "7"},
		{"log", "--json", "--limit", "3"},
		{"log", "--from-offset", "999"},
		{"log", "--follow", "--limit", "45", "--json"},
		{"replay", a},
		{"replay", b, "--to-seq", "12", "--json"},
		{"replay", a, "--to-seq", "999"},
		{"replay", "ae-nosuch"},
		{"journal", "verify"},
		{"journal", "verify", b},
		{"journal", "verify", "ae-nosuch"},
		{"journal", "export", b, "--out", "{out}"},
		{"journal", "export", "ae-nosuch", "--out", "{out}"},
	})
}

// TestEmptyDataDirectoryThroughTheDaemon: with no journal yet, the listing
// hint, the empty log and the verify summary are the same through the
// daemon.
func TestEmptyDataDirectoryThroughTheDaemon(t *testing.T) {
	t.Parallel()
	sameThroughTheDaemon(t, t.TempDir(), [][]string{
		{"journal", "ls"},
		{"journal", "ls", "--json"},
		{"log"},
		{"log", "--json"},
		{"journal", "verify"},
	})
}

// TestDamageThroughTheDaemon: a record that does not decode and a journal
// that lacks records are reported the same through the daemon: log passes
// over the record, says so on stderr and exits 1; cat, replay, export and
// verify stop at the damage with the same words. The record that does not
// decode is written while the daemon runs, which reads around it (a daemon
// does not start on a journal holding one), and the commands run through
// the daemon first, then without it.
func TestDamageThroughTheDaemon(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := demoID(t, dir, "a")
	b := demoID(t, dir, "b")
	bb := fixtures.StartNATSAt(t, dir)
	s := fixtures.OpenStore(t, bb)
	refA, refB := lookupRef(t, s, a), lookupRef(t, s, b)
	// b lacks two sequences, as a damaged log file leaves a journal.
	fixtures.PublishPastTheEnd(t, bb, refB, refB.LastSequence+3)
	closeBus(t, bb)

	_, stop := startServeStop(t, dir, "--nats-listen", fmt.Sprintf("127.0.0.1:%d", fixtures.FreePorts(t, 1)[0]))
	// A foreign writer's record on a's subject, in the place of a's next
	// sequence, which no reader decodes.
	natsURL := daemonNATSURL(t, dir)
	secret, err := bus.LoadSecret(daemon.Layout{Dir: dir}.NATSSecret())
	if err != nil {
		t.Fatal(err)
	}
	cfg := bus.DefaultConfig()
	cfg.URL, cfg.Secret = natsURL, secret
	joined, err := bus.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	subj, err := refA.Subject(bus.SubjectPrefix)
	if err != nil {
		t.Fatal(err)
	}
	record := fmt.Sprintf(`{"sequence":%d,"type":"message.accepted","bogus":1}`, refA.LastSequence+1)
	if _, err := joined.JetStream().Publish(t.Context(), subj, []byte(record)); err != nil {
		t.Fatal(err)
	}
	// And a record after it, which log prints.
	after := &eventstore.MessageAccepted{MessageID: "after-the-bad-one", Source: eventstore.SourceOperator, MessageType: "prompt", Payload: []byte(`{"text":"x"}`)}
	after.Base = eventstore.Base{RecordID: eventstore.RecordID(refB.JournalID, after.Kind(), after.MessageID), Sequence: refB.LastSequence + 4,
		JournalID: refB.JournalID, AgentExecutionID: refB.AgentExecutionID, OwnerID: refB.OwnerID, Scope: refB.OwnerEntity, OccurredAt: time.Now().UTC()}
	fixtures.PublishAround(t, joined, refB, after)
	closeBus(t, joined)

	commands := [][]string{
		{"log"},
		{"log", "--json"},
		{"log", "--follow", "--limit", "62", "--json"},
		{"journal", "cat", a},
		{"journal", "cat", b, "--json"},
		{"journal", "cat", b, "--from-seq", "29"},
		{"replay", b},
		{"journal", "export", b, "--out", "{out}"},
		{"journal", "verify"},
		{"journal", "verify", a},
	}
	through := runAll(t, dir, commands)
	stop()
	without := runAll(t, dir, commands)
	sameRuns(t, commands, without, through)
	for i, want := range []string{"skipped the record at offset 62", "skipped the record at offset 62", "skipped the record at offset 62",
		"record at offset 62", "lacks sequences 31 to 32", "lacks sequences 31 to 32", "lacks sequences 31 to 32", "lacks sequences 31 to 32",
		"2 journals, 60 records read, 2 damaged", "the record at offset 62 does not decode"} {
		if got := through[i].Outcome; got.Code != exitError || !strings.Contains(got.Stdout+got.Stderr, want) {
			t.Errorf("agentjournal %s through the daemon: exit %d, output %q; want 1 and %q", strings.Join(commands[i], " "), got.Code, got.Stdout+got.Stderr, want)
		}
	}
}

// TestWritesThroughTheDaemon: import and demo write the same journals, and
// say the same, through the daemon as into the log itself, on two copies of
// one data directory: a new journal, the same again (nothing written), the
// rest of a journal whose first records are stored, a journal that differs
// from the stored one (refused), a malformed file (refused naming its
// lines), and a demo written and written again.
func TestWritesThroughTheDaemon(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	demoID(t, base, "stored")
	_, id, file := exportDemo(t)
	lines := readFileLines(t, file)
	_, otherID, otherFile := exportDemoSeed(t, "other")
	partial := writeLines(t, readFileLines(t, otherFile)[:3])
	differs := readFileLines(t, otherFile)
	differs[len(differs)-1] = editRecord(t, differs[len(differs)-1], func(b *eventstore.Base) {
		b.RecordID = eventstore.RecordID(b.JournalID, eventstore.KindStateChanged, "something-else")
	})
	malformed := append([]string(nil), lines...)
	malformed[2] = `{"recordId": "rec-1", `
	malformed = append(malformed[:8], malformed[9:]...)

	commands := [][]string{
		{"journal", "import", file},
		{"journal", "import", file},
		{"journal", "import", partial},
		{"journal", "import", otherFile},
		{"journal", "import", writeLines(t, differs)},
		{"journal", "import", writeLines(t, malformed)},
		{"demo", "--seed", "s1"},
		{"demo", "--seed", "s1", "--json"},
		{"demo", "--owner", "Mission/m-1", "--seed", "s2", "--json"},
		{"journal", "ls"},
		{"log", "--json"},
	}
	local, served := t.TempDir(), t.TempDir()
	copyDir(t, base, local)
	copyDir(t, base, served)
	startServe(t, served)
	for _, args := range commands {
		without := normalize(runOutcome(t, local, args...), local)
		through := normalize(runOutcome(t, served, args...), served)
		if diff := cmp.Diff(without, through); diff != "" {
			t.Errorf("agentjournal %s through the daemon differs (-without a daemon +through it):\n%s", strings.Join(args, " "), diff)
		}
	}
	// The commands did what they say, not the same wrong thing twice.
	ls := mustRun(t, served, "journal", "ls")
	for _, want := range []string{id, otherID} {
		if !strings.Contains(ls, want+"  ") {
			t.Errorf("journal ls through the daemon:\n%s\nwant %s", ls, want)
		}
	}
}

// exportDemoSeed is exportDemo with another seed, so its journal is
// another one.
func exportDemoSeed(t *testing.T, seed string) (dir, id, file string) {
	t.Helper()
	dir = t.TempDir()
	id = demoID(t, dir, seed)
	out := t.TempDir()
	mustRun(t, dir, "journal", "export", id, "--out", out)
	return dir, id, filepath.Join(out, "agent-journals", id+".interaction.jsonl")
}

// timestamp matches the record times and the time column. The demo stamps
// its records with the minutes before it runs, so two runs differ there
// and nowhere else.
var timestamp = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)

// normalize names the data directory DATA and every time TIME.
func normalize(o outcome, dir string) outcome {
	for _, s := range []*string{&o.Stdout, &o.Stderr} {
		*s = timestamp.ReplaceAllString(strings.ReplaceAll(*s, dir, "DATA"), "TIME")
	}
	return o
}

// copyDir copies the data directory src, which no process holds, into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, info.Mode().Perm())
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestImportThroughTheDaemonIsAtomic: a journal imported through the
// daemon that serves the data directory lands whole, in one write: the
// daemon's policy, which decides every new observation, never sees part of
// it, so the journal is the file, decisions worded as an older policy
// worded them included. A conflicting or malformed file changes nothing.
func TestImportThroughTheDaemonIsAtomic(t *testing.T) {
	t.Parallel()
	id, file, want := exportReworded(t)
	dir := t.TempDir()
	url, token, _ := startServe(t, dir)

	if out := mustRun(t, dir, "journal", "import", file); out != fmt.Sprintf("Imported %d records of agent execution %s (Task/demo-task)\n", len(want), id) {
		t.Fatalf("import through the daemon printed %q", out)
	}
	waitHealth(t, url, token, func(h map[string]any) bool { return h["lag"] == float64(0) })
	got := mustRun(t, dir, "journal", "cat", id, "--json")
	if diff := cmp.Diff(journalfile.MarkImported(decodeLines(t, strings.Join(want, "\n")+"\n")), decodeLines(t, got)); diff != "" {
		t.Errorf("the daemon's log differs from the imported file (-file +log):\n%s", diff)
	}
	if out := mustRun(t, dir, "journal", "import", file); !strings.Contains(out, "already imported") {
		t.Errorf("a second import printed %q, want already imported", out)
	}

	before := mustRun(t, dir, "log", "--json")
	differs := append([]string(nil), want...)
	differs[len(differs)-1] = editRecord(t, differs[len(differs)-1], func(b *eventstore.Base) {
		b.RecordID = eventstore.RecordID(b.JournalID, eventstore.KindStateChanged, "something-else")
	})
	r := run(t, dir, "journal", "import", writeLines(t, differs))
	if r.code != exitError || !strings.Contains(r.stderr, "already has a journal (30 records) that differs at sequence 30") || !strings.Contains(r.stderr, "nothing was written") {
		t.Errorf("a conflicting import through the daemon: exit %d, stderr %q; want 1 naming the sequence", r.code, r.stderr)
	}
	malformed := append([]string(nil), want...)
	malformed[4] = strings.Replace(malformed[4], `"status":"delivered"`, `"status":"deliverd"`, 1)
	malformed[6] = "   "
	r = run(t, dir, "journal", "import", writeLines(t, malformed))
	if r.code != exitError || !strings.Contains(r.stderr, "nothing was imported: 2 problems:") ||
		!strings.Contains(r.stderr, "line 5:") || !strings.Contains(r.stderr, "line 7: blank") {
		t.Errorf("a malformed import beside the daemon: exit %d, stderr %q; want 1 naming lines 5 and 7", r.code, r.stderr)
	}
	if after := mustRun(t, dir, "log", "--json"); after != before {
		t.Errorf("refused imports changed the log")
	}
}

// TestLogFollowThroughTheDaemon: log --follow through the daemon prints the
// log, then each record as it is appended, until interrupted, and exits 0;
// what it printed is the log, as log --json and a follow without the
// daemon print it.
func TestLogFollowThroughTheDaemon(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	demoID(t, dir, "first")
	_, stop := startServeStop(t, dir)

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	fctx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		m := Main{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
		done <- m.Run(fctx, []string{"--data", dir, "log", "--follow", "--json"})
	}()
	waitLines := func(n int) {
		t.Helper()
		for strings.Count(stdout.String(), "\n") < n {
			select {
			case code := <-done:
				t.Fatalf("log --follow ended: exit %d, stderr %q", code, stderr.String())
			case <-ctx.Done():
				t.Fatalf("log --follow printed %d lines, want %d; stderr %q", strings.Count(stdout.String(), "\n"), n, stderr.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	waitLines(30)
	mustRun(t, dir, "demo", "--seed", "second")
	waitLines(60)
	interrupt()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("log --follow interrupted: exit %d, want 0; stderr %q", code, stderr.String())
		}
	case <-ctx.Done():
		t.Fatal("log --follow did not end when interrupted")
	}
	followed := stdout.String()
	if log := mustRun(t, dir, "log", "--json"); followed != log {
		t.Errorf("log --follow through the daemon printed other lines than log --json (-follow +log):\n%s", cmp.Diff(followed, log))
	}
	stop()
	if local := mustRun(t, dir, "log", "--follow", "--limit", "60", "--json"); followed != local {
		t.Errorf("log --follow differs through the daemon (-through +without):\n%s", cmp.Diff(followed, local))
	}
}

// startServeStop is startServe returning the function that stops the
// daemon, for a test that goes on without it.
func startServeStop(t *testing.T, dir string, args ...string) (url string, stop func()) {
	t.Helper()
	url, _, stopServe := startServe(t, dir, args...)
	return url, func() {
		if r := stopServe(); r.code != exitOK {
			t.Fatalf("serve stopped: exit %d\n%s", r.code, r.stderr)
		}
	}
}

// daemonNATSURL returns the NATS URL daemon.json names for the daemon
// serving dir, which it has when started with --nats-listen.
func daemonNATSURL(t *testing.T, dir string) string {
	t.Helper()
	info, err := daemon.Layout{Dir: dir}.ReadInfo()
	if err != nil || info.NATSURL == "" {
		t.Fatalf("daemon.json of %s: %+v, %v; want the NATS URL", dir, info, err)
	}
	return info.NATSURL
}
