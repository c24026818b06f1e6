package terminal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// testDeadline only keeps a broken test from hanging; no test asserts on
// how long anything takes.
const testDeadline = 2 * time.Minute

func newRegistry(t *testing.T) *Registry {
	t.Helper()
	r := NewRegistry(slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

func openTerminal(t *testing.T, r *Registry, o OpenOptions) *Terminal {
	t.Helper()
	term, err := r.Open(t.Context(), o)
	if err != nil {
		t.Fatalf("Open(%s %q): %v", o.Command, o.Args, err)
	}
	return term
}

func waitExit(t *testing.T, term *Terminal) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testDeadline)
	defer cancel()
	code, err := term.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return code
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readRecordingFile(t *testing.T, path string) (Header, []Event) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, events, err := ReadRecording(f)
	if err != nil {
		t.Fatalf("ReadRecording(%s): %v", path, err)
	}
	return h, events
}

func eventsWith(events []Event, code string) []Event {
	var out []Event
	for _, ev := range events {
		if ev.Code == code {
			out = append(out, ev)
		}
	}
	return out
}

func outputOf(events []Event) string {
	var b strings.Builder
	for _, ev := range eventsWith(events, CodeOutput) {
		b.WriteString(ev.Data)
	}
	return b.String()
}

func TestInputOutputExitAndRecording(t *testing.T) {
	r := newRegistry(t)
	dir := filepath.Join(t.TempDir(), "terminal-recordings")
	term := openTerminal(t, r, OpenOptions{
		AgentExecutionID: "ae-1",
		Command:          "/bin/sh",
		Args:             []string{"-c", "echo hello; read x; echo got:$x"},
		RecordingDir:     dir,
	})
	if got := term.Snapshot(); !got.Connected || got.Dead || got.ExitCode != nil {
		t.Errorf("snapshot while running: Connected=%v Dead=%v ExitCode=%v, want true false nil", got.Connected, got.Dead, got.ExitCode)
	}
	if err := r.Input(term.ID(), []byte("world\n")); err != nil {
		t.Fatalf("Input: %v", err)
	}
	if code := waitExit(t, term); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}

	snap, err := r.Snapshot(term.ID())
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Dead || snap.Connected || snap.ExitCode == nil || *snap.ExitCode != 0 || snap.ExitedAt == nil {
		t.Errorf("snapshot after exit: Dead=%v Connected=%v ExitCode=%v ExitedAt=%v, want true false 0 set", snap.Dead, snap.Connected, snap.ExitCode, snap.ExitedAt)
	}
	if !strings.Contains(snap.Recent, "got:world") {
		t.Errorf("Recent = %q, want it to contain got:world", snap.Recent)
	}
	wantPath, _ := RecordingPath(dir, "ae-1")
	if snap.RecordingPath != wantPath {
		t.Errorf("RecordingPath = %q, want %q", snap.RecordingPath, wantPath)
	}
	if snap.Cols != DefaultCols || snap.Rows != DefaultRows {
		t.Errorf("size %dx%d, want %dx%d", snap.Cols, snap.Rows, DefaultCols, DefaultRows)
	}

	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("recording dir mode: %v %v, want 0700", fi.Mode().Perm(), err)
	}
	if fi, err := os.Stat(wantPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("recording file mode: %v %v, want 0600", fi.Mode().Perm(), err)
	}

	h, events := readRecordingFile(t, wantPath)
	if h.Version != 2 || h.Width != DefaultCols || h.Height != DefaultRows || h.Env["TERM"] == "" || h.Timestamp == 0 {
		t.Errorf("header %+v, want version 2, %dx%d, a TERM and a timestamp", h, DefaultCols, DefaultRows)
	}
	if want := `/bin/sh -c 'echo hello; read x; echo got:$x'`; h.Command != want {
		t.Errorf("header command %q, want %q", h.Command, want)
	}
	out := outputOf(events)
	for _, want := range []string{"hello", "got:world"} {
		if !strings.Contains(out, want) {
			t.Errorf("recorded output %q does not contain %q", out, want)
		}
	}
	inputs := eventsWith(events, CodeInput)
	if len(inputs) != 1 || inputs[0].Data != "world\n" {
		t.Errorf("input events %+v, want one with %q", inputs, "world\n")
	}
	last := events[len(events)-1]
	if last.Code != CodeMarker || last.Data != "exit 0" {
		t.Errorf("last event %+v, want marker %q", last, "exit 0")
	}
	for i := 1; i < len(events); i++ {
		if events[i].Time < events[i-1].Time {
			t.Errorf("event %d time %v before event %d time %v", i, events[i].Time, i-1, events[i-1].Time)
		}
	}
}

func TestResizeReachesChild(t *testing.T) {
	r := newRegistry(t)
	dir := t.TempDir()
	term := openTerminal(t, r, OpenOptions{
		AgentExecutionID: "ae-resize",
		Command:          "sh",
		Args:             []string{"-c", "stty size; read x; stty size"},
		Cols:             80,
		Rows:             24,
		RecordingDir:     dir,
	})
	eventually(t, "the first stty size", func() bool { return strings.Contains(term.Snapshot().Recent, "24 80") })
	if err := r.Resize(term.ID(), 100, 30); err != nil {
		t.Fatalf("Resize: %v", err)
	}
	if s := term.Snapshot(); s.Cols != 100 || s.Rows != 30 {
		t.Errorf("snapshot size %dx%d, want 100x30", s.Cols, s.Rows)
	}
	if err := term.Input([]byte("\n")); err != nil {
		t.Fatalf("Input: %v", err)
	}
	if code := waitExit(t, term); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if recent := term.Snapshot().Recent; !strings.Contains(recent, "30 100") {
		t.Errorf("Recent = %q, want the child to print 30 100 after the resize", recent)
	}
	h, events := readRecordingFile(t, term.Snapshot().RecordingPath)
	if h.Width != 80 || h.Height != 24 {
		t.Errorf("header size %dx%d, want 80x24", h.Width, h.Height)
	}
	resizes := eventsWith(events, CodeResize)
	if len(resizes) != 1 || resizes[0].Data != "100x30" {
		t.Errorf("resize events %+v, want one with 100x30", resizes)
	}
	if err := term.Resize(0, 10); err == nil {
		t.Error("Resize(0, 10) succeeded, want an error")
	}
}

func TestExitCodesAndErrors(t *testing.T) {
	r := newRegistry(t)
	tests := []struct {
		name   string
		script string
		want   int
	}{
		{name: "zero", script: "exit 0", want: 0},
		{name: "non-zero", script: "exit 3", want: 3},
		{name: "killed by signal", script: "kill -TERM $$; sleep 5", want: 128 + int(syscall.SIGTERM)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			term := openTerminal(t, r, OpenOptions{Command: "sh", Args: []string{"-c", tt.script}})
			if got := waitExit(t, term); got != tt.want {
				t.Errorf("exit code %d, want %d", got, tt.want)
			}
			if s := term.Snapshot(); !s.Dead || s.ExitCode == nil || *s.ExitCode != tt.want {
				t.Errorf("snapshot Dead=%v ExitCode=%v, want true %d", s.Dead, s.ExitCode, tt.want)
			}
			if err := r.Input(term.ID(), []byte("late\n")); !errors.Is(err, ErrExited) {
				t.Errorf("Input after exit: %v, want ErrExited", err)
			}
			if err := r.Resize(term.ID(), 10, 10); !errors.Is(err, ErrExited) {
				t.Errorf("Resize after exit: %v, want ErrExited", err)
			}
			if err := term.Signal(syscall.SIGTERM); !errors.Is(err, ErrExited) {
				t.Errorf("Signal after exit: %v, want ErrExited", err)
			}
		})
	}

	if _, err := r.Attach("no-such-terminal"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Attach unknown: %v, want ErrNotFound", err)
	}
	if _, err := r.Snapshot("no-such-terminal"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Snapshot unknown: %v, want ErrNotFound", err)
	}
	if err := r.Input("no-such-terminal", []byte("x")); !errors.Is(err, ErrNotFound) {
		t.Errorf("Input unknown: %v, want ErrNotFound", err)
	}
}

func TestOpenValidatesAndRegisters(t *testing.T) {
	r := newRegistry(t)
	if _, err := r.Open(t.Context(), OpenOptions{}); err == nil || !strings.Contains(err.Error(), "command is empty") {
		t.Errorf("Open without a command: %v, want an error naming the command", err)
	}
	_, err := r.Open(t.Context(), OpenOptions{Command: "true", RecordingDir: t.TempDir(), ScrollbackBytes: -1})
	if err == nil || !strings.Contains(err.Error(), "agent execution id") || !strings.Contains(err.Error(), "scrollback") {
		t.Errorf("Open with two problems: %v, want both reported", err)
	}
	if _, err := r.Open(t.Context(), OpenOptions{Command: "/no/such/program"}); err == nil {
		t.Error("Open of a missing program succeeded, want an error")
	}

	a := openTerminal(t, r, OpenOptions{ID: "lane-a", Command: "cat"})
	if _, err := r.Open(t.Context(), OpenOptions{ID: "lane-a", Command: "cat"}); !errors.Is(err, ErrExists) {
		t.Errorf("Open with a used id: %v, want ErrExists", err)
	}
	b := openTerminal(t, r, OpenOptions{Command: "cat"})
	if !strings.HasPrefix(b.ID(), "term-") || len(b.ID()) != len("term-")+16 {
		t.Errorf("generated id %q, want term- and 16 hex digits", b.ID())
	}
	if got, err := r.Attach("lane-a"); err != nil || got != a {
		t.Errorf("Attach(lane-a) = %p, %v, want %p", got, err, a)
	}
	if a.Pid() <= 0 {
		t.Errorf("Pid = %d, want a process id", a.Pid())
	}
	list := r.List()
	if len(list) != 2 || list[0].ID != "lane-a" || list[1].ID != b.ID() {
		t.Errorf("List ids = %v, want [lane-a %s]", ids(list), b.ID())
	}
	if err := r.Remove("lane-a"); !errors.Is(err, ErrRunning) {
		t.Errorf("Remove of a running terminal: %v, want ErrRunning", err)
	}
	if err := a.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	if code := waitExit(t, a); code != 128+int(syscall.SIGKILL) {
		t.Errorf("exit code after SIGKILL %d, want %d", code, 128+int(syscall.SIGKILL))
	}
	if err := r.Remove("lane-a"); err != nil {
		t.Errorf("Remove: %v", err)
	}
	if _, err := r.Attach("lane-a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Attach after Remove: %v, want ErrNotFound", err)
	}
}

func ids(list []Snapshot) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.ID
	}
	return out
}

func TestSubscribeDeliversLiveOutput(t *testing.T) {
	r := newRegistry(t)
	term := openTerminal(t, r, OpenOptions{Command: "sh", Args: []string{"-c", `read x; echo "$x-done"`}})
	var mu sync.Mutex
	var got strings.Builder
	unsubscribe := term.Subscribe(func(data []byte) {
		mu.Lock()
		got.Write(data)
		mu.Unlock()
	})
	defer unsubscribe()
	if err := term.Input([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	waitExit(t, term)
	eventually(t, "the subscriber to see ping-done", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(got.String(), "ping-done")
	})

	// A subscriber arriving after the end is never called.
	late := term.Subscribe(func([]byte) { t.Error("late subscriber called") })
	late()
}

func TestOnOutputSeesEveryChunk(t *testing.T) {
	r := newRegistry(t)
	var mu sync.Mutex
	var got []byte
	term := openTerminal(t, r, OpenOptions{
		Command: "printf",
		Args:    []string{"%s", strings.Repeat("0123456789", 10000)},
		OnOutput: func(data []byte) {
			mu.Lock()
			got = append(got, data...)
			mu.Unlock()
		},
		ScrollbackBytes: 1000,
	})
	waitExit(t, term)
	mu.Lock()
	defer mu.Unlock()
	if want := strings.Repeat("0123456789", 10000); string(got) != want {
		t.Errorf("OnOutput saw %d bytes, want %d", len(got), len(want))
	}
	if recent := term.Snapshot().Recent; recent != strings.Repeat("0123456789", 100) {
		t.Errorf("Recent has %d bytes (%.20q…), want the last 1000", len(recent), recent)
	}
}

// TestFloodWithSlowSubscriber checks that a child printing 50 MB is never
// held back by a slow subscriber, that memory stays bounded while it does,
// and that the recording keeps every byte.
func TestFloodWithSlowSubscriber(t *testing.T) {
	const total = 50_000_000
	const maxGrowth = 64 << 20
	r := newRegistry(t)
	dir := t.TempDir()

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()

	term := openTerminal(t, r, OpenOptions{
		AgentExecutionID: "ae-flood",
		Command:          "sh",
		Args:             []string{"-c", "head -c 50000000 /dev/zero | tr '\\0' x"},
		RecordingDir:     dir,
	})
	var delivered atomic.Int64
	unsubscribe := term.Subscribe(func(data []byte) {
		delivered.Add(int64(len(data)))
		time.Sleep(5 * time.Millisecond)
	})
	defer unsubscribe()

	if code := waitExit(t, term); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	close(stopSampling)
	<-sampled
	if growth := int64(peak.Load()) - int64(base); growth > maxGrowth {
		t.Errorf("heap in use grew by %d MiB during the flood, want under %d MiB", growth>>20, maxGrowth>>20)
	}
	t.Logf("heap growth %d KiB; slow subscriber got %d of %d bytes", (int64(peak.Load())-int64(base))>>10, delivered.Load(), total)

	_, events := readRecordingFile(t, term.Snapshot().RecordingPath)
	n := 0
	for _, ev := range eventsWith(events, CodeOutput) {
		n += len(ev.Data)
		if strings.Trim(ev.Data, "x") != "" {
			t.Fatalf("output event holds %.40q, want only x", ev.Data)
		}
	}
	if n != total {
		t.Errorf("recorded %d output bytes, want %d", n, total)
	}
}

func TestRecordingKeepsRunesSplitAcrossReads(t *testing.T) {
	r := newRegistry(t)
	dir := t.TempDir()
	want := strings.Repeat("aé€𝄞", 60_000) // 1, 2, 3 and 4 byte runes
	file := filepath.Join(t.TempDir(), "runes.txt")
	if err := os.WriteFile(file, []byte(want), 0o600); err != nil {
		t.Fatal(err)
	}
	// Where the PTY's reads end is up to the kernel and the scheduler: a
	// run whose reads all happen to end between runes exercises nothing,
	// so the output is printed again, up to five times, until one does.
	var splits atomic.Int64
	var term *Terminal
	for attempt := 0; attempt < 5 && splits.Load() == 0; attempt++ {
		term = openTerminal(t, r, OpenOptions{
			AgentExecutionID: fmt.Sprintf("ae-utf8-%d", attempt),
			Command:          "cat",
			Args:             []string{file},
			RecordingDir:     dir,
			OnOutput: func(data []byte) {
				if completeLen(data) < len(data) {
					splits.Add(1)
				}
			},
		})
		waitExit(t, term)
	}
	if splits.Load() == 0 {
		t.Error("in five runs no read ended inside a rune; the test did not exercise the carry")
	}

	raw, err := os.ReadFile(term.Snapshot().RecordingPath)
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(raw) {
		t.Error("recording is not valid UTF-8")
	}
	_, events := readRecordingFile(t, term.Snapshot().RecordingPath)
	outputs := eventsWith(events, CodeOutput)
	if got := outputOf(events); got != want {
		t.Errorf("recorded output differs: %d bytes, want %d", len(got), len(want))
	}
	if strings.ContainsRune(outputOf(events), utf8.RuneError) {
		t.Error("recorded output holds U+FFFD, want every split rune carried over whole")
	}
	t.Logf("%d output events, %d reads ended inside a rune", len(outputs), splits.Load())
}

func TestSecondRecordingOfAnExecution(t *testing.T) {
	r := newRegistry(t)
	dir := t.TempDir()
	const id = "mission/../ae 7"
	first := openTerminal(t, r, OpenOptions{AgentExecutionID: id, Command: "true", RecordingDir: dir})
	second := openTerminal(t, r, OpenOptions{AgentExecutionID: id, Command: "true", RecordingDir: dir})
	waitExit(t, first)
	waitExit(t, second)
	wantFirst, err := RecordingPath(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	wantSecond := filepath.Join(dir, "mission%2F%2E%2E%2Fae%207.2.terminal.jsonl")
	if got := first.Snapshot().RecordingPath; got != wantFirst {
		t.Errorf("first recording %q, want %q", got, wantFirst)
	}
	if got := second.Snapshot().RecordingPath; got != wantSecond {
		t.Errorf("second recording %q, want %q", got, wantSecond)
	}
	for _, p := range []string{wantFirst, wantSecond} {
		_, events := readRecordingFile(t, p)
		if len(events) == 0 || events[len(events)-1].Data != "exit 0" {
			t.Errorf("%s: events %+v, want a final exit 0 marker", p, events)
		}
	}
}

func TestCloseKillsAndLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	r := NewRegistry(slog.New(slog.NewTextHandler(t.Output(), nil)))
	r.KillGrace = 300 * time.Millisecond
	dir := t.TempDir()

	polite, err := r.Open(t.Context(), OpenOptions{AgentExecutionID: "ae-polite", Command: "sleep", Args: []string{"60"}, RecordingDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	stubborn, err := r.Open(t.Context(), OpenOptions{
		AgentExecutionID: "ae-stubborn",
		Command:          "sh",
		Args:             []string{"-c", `trap "" TERM; echo ready; sleep 60`},
		RecordingDir:     dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	unsubscribe := stubborn.Subscribe(func([]byte) {})
	defer unsubscribe()
	eventually(t, "the trap to be set", func() bool { return strings.Contains(stubborn.Snapshot().Recent, "ready") })

	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for _, tc := range []struct {
		term *Terminal
		want int
	}{
		{polite, 128 + int(syscall.SIGTERM)},
		{stubborn, 128 + int(syscall.SIGKILL)},
	} {
		select {
		case <-tc.term.Done():
		default:
			t.Fatalf("%s not done after Close", tc.term.ID())
		}
		s := tc.term.Snapshot()
		if !s.Dead || s.ExitCode == nil || *s.ExitCode != tc.want {
			t.Errorf("%s: Dead=%v ExitCode=%v, want true %d", s.ID, s.Dead, s.ExitCode, tc.want)
		}
		_, events := readRecordingFile(t, s.RecordingPath)
		if last := events[len(events)-1]; last.Code != CodeMarker || last.Data != ExitMarkerPrefix+strconv.Itoa(tc.want) {
			t.Errorf("%s: last event %+v, want the exit marker", s.ID, last)
		}
		if err := syscall.Kill(tc.term.Pid(), 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s: process %d still exists (kill 0: %v)", s.ID, tc.term.Pid(), err)
		}
	}
	if _, err := r.Open(t.Context(), OpenOptions{Command: "true"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Open after Close: %v, want ErrClosed", err)
	}

	eventually(t, "goroutines to return", func() bool { return runtime.NumGoroutine() <= before+2 })
}

// TestChildrenLeftOnTheTerminalAreKilled starts a child that ignores
// SIGHUP and outlives its parent while holding the terminal: the lane
// still ends, and the child with it.
func TestChildrenLeftOnTheTerminalAreKilled(t *testing.T) {
	r := newRegistry(t)
	term := openTerminal(t, r, OpenOptions{Command: "sh", Args: []string{"-c", `trap "" HUP; sleep 60 & echo "child=$!"`}})
	if code := waitExit(t, term); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	recent := term.Snapshot().Recent
	_, after, ok := strings.Cut(recent, "child=")
	if !ok {
		t.Fatalf("Recent = %q, want the child's pid", recent)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(after))
	if err != nil {
		t.Fatalf("child pid in %q: %v", recent, err)
	}
	eventually(t, "the child to be gone", func() bool { return processGone(pid) })
}

// processGone reports a pid that no longer names a live process (absent,
// or a zombie waiting for a parent that may never reap it).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return strings.HasPrefix(rest, "Z") || strings.HasPrefix(rest, "X")
}
