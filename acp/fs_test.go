package acp_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/acp"
	"github.com/agentjournal/agentjournal/fixtures"
)

// agentRun is the scripted ACP agent (fixtures/acpagent) run as a real
// process, with a Client in this process answering its requests in dir.
type agentRun struct {
	client *acp.Client

	mu      sync.Mutex
	said    map[string]*strings.Builder // message text by message id
	order   []string
	refused int
}

func startAgent(t *testing.T, dir string) *agentRun {
	t.Helper()
	cmd := exec.Command(fixtures.ACPAgentBinary(t))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &agentRun{said: map[string]*strings.Builder{}}
	a.client = acp.NewClient(acp.Config{
		Write: func(b []byte) error { _, err := stdin.Write(b); return err },
		Dir:   dir,
		Refused: func(method, reason string) {
			a.mu.Lock()
			a.refused++
			a.mu.Unlock()
		},
	})
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			if m, err := acp.Decode(sc.Bytes()); err == nil && m.Update != nil && m.Update.Kind == acp.UpdateAgentMessage {
				a.mu.Lock()
				b := a.said[m.Update.MessageID]
				if b == nil {
					b = &strings.Builder{}
					a.said[m.Update.MessageID] = b
					a.order = append(a.order, m.Update.MessageID)
				}
				b.WriteString(m.Update.Text)
				a.mu.Unlock()
			}
			a.client.Feed(sc.Bytes())
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		a.client.Close()
		<-read
		_ = cmd.Wait()
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := a.client.Open(ctx); err != nil {
		t.Fatal(err)
	}
	return a
}

// prompt runs one turn of script to its end and returns the messages the
// agent said in it.
func (a *agentRun) prompt(t *testing.T, ctx context.Context, script ...string) []string {
	t.Helper()
	msgs, err := a.turn(ctx, script...)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// turn is prompt returning what failed.
func (a *agentRun) turn(ctx context.Context, script ...string) ([]string, error) {
	a.mu.Lock()
	before := len(a.order)
	a.mu.Unlock()
	res, err := a.client.Prompt(ctx, strings.Join(script, "\n"))
	if err != nil {
		return nil, fmt.Errorf("prompt: %w", err)
	}
	if res.StopReason != "end_turn" {
		return nil, fmt.Errorf("stop reason %q, want end_turn", res.StopReason)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, id := range a.order[before:] {
		out = append(out, a.said[id].String())
	}
	return out, nil
}

// threads is this process's count of OS threads.
func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

// TestFileReadsOfAFIFO: 2,000 reads of a FIFO at once are each answered
// with an error (a FIFO is not a regular file, or too many wait), none
// blocks an OS thread (the thread count stays bounded; a blocked read
// holds one, and 10,000 end the process), and the turn ends normally.
func TestFileReadsOfAFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Readers a failing client left blocked get their end of file.
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	a := startAgent(t, dir)

	const reads = 2000
	// The runtime's own threads, a slot's file calls and the race
	// detector's; a blocked read each would be thousands.
	bound := threads(t) + 48
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		peak    int
		sampled sync.WaitGroup
	)
	sampled.Go(func() {
		for ctx.Err() == nil {
			n := threads(t)
			peak = max(peak, n)
			if n > bound {
				// The turn cannot end while the reads block: stop it.
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	msgs, err := a.turn(ctx, "readmany "+strconv.Itoa(reads)+" "+fifo, "write "+fifo+" x", "say done")
	cancel()
	sampled.Wait()
	if peak > bound {
		t.Fatalf("%d OS threads at the peak, want at most %d", peak, bound)
	}
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("readmany: %d of %d failed", reads, reads)
	if len(msgs) != 3 || !strings.HasPrefix(msgs[0], want) || !strings.HasPrefix(msgs[1], "write error:") || msgs[2] != "done" {
		t.Fatalf("messages %q, want %q…, a write error and done", msgs, want)
	}
	if !strings.Contains(msgs[1], "FIFO") || !strings.Contains(msgs[1], "want a regular file") {
		t.Errorf("write error %q, want it to name the FIFO and what is accepted", msgs[1])
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.refused != reads+1 {
		t.Errorf("%d requests refused, want %d", a.refused, reads+1)
	}
}

// TestFileReadOfALargeSparseFile: a read of a file over the read bound is
// refused from its size, and reads of ranges hold at most the bound:
// memory stays far below the file's size, which a sparse file makes
// larger than memory at no cost on disk.
func TestFileReadOfALargeSparseFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	const size = 128 << 20
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	small := filepath.Join(dir, "small.txt")
	if err := os.WriteFile(small, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	msgs := a.prompt(t, ctx,
		"readsize "+big,        // the whole file
		"readsize "+big+" 1 1", // its first line: all of it, no line feed in it
		"readsize "+big+" 2 1", // a line beyond what a read goes through
		"readsize "+small+" 2 1",
		"say done")
	runtime.ReadMemStats(&after)

	if len(msgs) != 5 {
		t.Fatalf("messages %q, want 5", msgs)
	}
	for i, want := range []string{"holds 134217728 bytes", "lines asked for hold more than", "line 2 starts beyond"} {
		if !strings.HasPrefix(msgs[i], "read error:") || !strings.Contains(msgs[i], want) || !strings.Contains(msgs[i], "want") {
			t.Errorf("message %d %q, want a read error saying %q and what is accepted", i, msgs[i], want)
		}
	}
	if msgs[3] != "read 4 bytes" || msgs[4] != "done" {
		t.Errorf("messages %q, want line 2 of the small file (4 bytes) read, and done", msgs[3:])
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > size/4 {
		t.Errorf("the reads allocated %d bytes, want at most a quarter of the file's %d", got, size)
	}
}

// TestFileWritesStayInside: a write through a dangling symbolic link, or
// a directory link, that leads outside the working directory is refused
// and creates nothing outside; a write inside goes through.
func TestFileWritesStayInside(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	for name, target := range map[string]string{
		"dangling":     filepath.Join(outside, "x"),
		"dangling-rel": filepath.Join("..", filepath.Base(outside), "y"),
		"out":          outside,
	} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	a := startAgent(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	msgs := a.prompt(t, ctx,
		"write "+filepath.Join(dir, "dangling")+" escaped",
		"write "+filepath.Join(dir, "dangling-rel")+" escaped",
		"write "+filepath.Join(dir, "out", "z")+" escaped",
		"write "+filepath.Join(dir, "out", "new", "z")+" escaped",
		"write "+filepath.Join(dir, "..", filepath.Base(outside), "w")+" escaped",
		"write "+filepath.Join(dir, "sub", "ok.txt")+" fine",
		"read "+filepath.Join(dir, "dangling"),
	)
	if len(msgs) != 7 {
		t.Fatalf("messages %q, want 7", msgs)
	}
	for i, m := range msgs[:5] {
		if !strings.HasPrefix(m, "write error:") || !strings.Contains(m, "-32602") {
			t.Errorf("message %d %q, want a write error (-32602)", i, m)
		}
	}
	if !strings.Contains(msgs[0], "want a regular file inside") {
		t.Errorf("message %q, want it to say what is accepted", msgs[0])
	}
	if msgs[5] != "wrote "+filepath.Join(dir, "sub", "ok.txt") {
		t.Errorf("message %q, want the write inside done", msgs[5])
	}
	if !strings.HasPrefix(msgs[6], "read error:") || !strings.Contains(msgs[6], "-32602") {
		t.Errorf("message %q, want the read through the link refused", msgs[6])
	}
	if ents, err := os.ReadDir(outside); err != nil || len(ents) != 0 {
		t.Errorf("outside holds %d entries (%v), want none", len(ents), err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "sub", "ok.txt")); err != nil || string(b) != "fine" {
		t.Errorf("sub/ok.txt holds %q (%v), want %q", b, err, "fine")
	}
}

// TestTerminalCwdStaysInside: terminal/create runs in a directory inside
// the working directory, and refuses one outside by its name or through a
// symbolic link.
func TestTerminalCwdStaysInside(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(dir, "in")); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	msgs := a.prompt(t, ctx,
		"runin "+filepath.Join(dir, "sub")+" pwd -P",
		"runin "+filepath.Join(dir, "in")+" pwd -P",
		"runin "+outside+" pwd",
		"runin "+filepath.Join(dir, "out")+" pwd",
		"runin "+filepath.Join(dir, "sub", "missing")+" pwd",
	)
	real, err := filepath.EvalSymlinks(filepath.Join(dir, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("ran: exit 0: %q", real+"\n")
	if len(msgs) != 5 || msgs[0] != want || msgs[1] != want {
		t.Fatalf("messages %q, want %q twice, then three terminal errors", msgs, want)
	}
	for _, m := range msgs[2:] {
		if !strings.HasPrefix(m, "terminal error:") || !strings.Contains(m, "cwd") {
			t.Errorf("message %q, want a terminal error naming the cwd", m)
		}
	}
}
