package supervisor_test

import (
	"context"
	"io"
	"iter"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/supervisor"
)

// benchBytes is what the agent prints per run: enough that starting the
// processes weighs little.
const benchBytes = 256 << 20

// BenchmarkSpool compares the agent's output reaching a reader through a
// supervisor's spool with the same bytes read from a plain pipe, as the
// runtime reads them today. Each op runs both; the times run from starting
// the agent (and, for the spool, its supervisor) to the last byte read.
func BenchmarkSpool(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cfg := testConfig(b)
	args := []string{"-c", strconv.Itoa(benchBytes), "/dev/zero"}
	var pipeTime, spoolTime time.Duration
	i := 0
	for b.Loop() {
		t0 := time.Now()
		cmd := exec.Command("head", args...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		n, err := io.CopyBuffer(io.Discard, out, make([]byte, 64<<10))
		if err != nil || n != benchBytes {
			b.Fatalf("pipe: read %d bytes, %v; want %d", n, err, benchBytes)
		}
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
		pipeTime += time.Since(t0)

		i++
		t0 = time.Now()
		dir := filepath.Join(b.TempDir(), strconv.Itoa(i)+".sup")
		h, err := supervisor.Start(ctx, cfg, dir, supervisor.Spec{Program: "head", Args: args})
		if err != nil {
			b.Fatal(err)
		}
		var got int64
		for f, err := range h.Output(ctx, 0) {
			if err != nil {
				b.Fatal(err)
			}
			got += int64(len(f.Data))
		}
		spoolTime += time.Since(t0)
		if got != benchBytes {
			b.Fatalf("spool: read %d bytes, want %d", got, benchBytes)
		}
		if _, err := h.Wait(ctx); err != nil {
			b.Fatal(err)
		}
		if err := h.Remove(); err != nil {
			b.Fatal(err)
		}
	}
	mb := float64(benchBytes*i) / (1 << 20)
	b.ReportMetric(mb/pipeTime.Seconds(), "pipe-MB/s")
	b.ReportMetric(mb/spoolTime.Seconds(), "spool-MB/s")
	b.ReportMetric(pipeTime.Seconds()/spoolTime.Seconds(), "spool/pipe")
}

// BenchmarkInputEcho is the round trip of a line through a supervisor:
// Input to a cat-like agent, and its echo read back from the spool. It
// shows what polling the spool costs in latency.
func BenchmarkInputEcho(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h, err := supervisor.Start(ctx, testConfig(b), filepath.Join(b.TempDir(), "cat.sup"), supervisor.Spec{Program: "cat", Stdin: true})
	if err != nil {
		b.Fatal(err)
	}
	defer stopAll(b, h)
	next, stop := iter.Pull2(h.Output(ctx, 0))
	defer stop()
	line := []byte("ping\n")
	for b.Loop() {
		if err := h.Input(ctx, line); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < len(line); {
			f, err, ok := next()
			if !ok || err != nil {
				b.Fatalf("read the echo: %v", err)
			}
			got += len(f.Data)
		}
	}
}
