package daemon

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// A part that fails is started again, and stays stopped once ctx ends.
func TestKeepRunningRestartsAfterErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs bytes.Buffer
	runs := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		keepRunning(ctx, slog.New(slog.NewTextHandler(&logs, nil)), "projector", func(ctx context.Context) error {
			runs++
			if runs <= 2 {
				return fmt.Errorf("follow log: failure %d", runs)
			}
			cancel()
			<-ctx.Done()
			return nil
		})
	}()
	<-done
	if runs != 3 {
		t.Fatalf("ran %d times, want 3 (two failures, then until ctx ended)", runs)
	}
	out := logs.String()
	for _, want := range []string{`msg="projector stopped; starting it again" err="follow log: failure 1" in=500ms`,
		`err="follow log: failure 2" in=1s`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if strings.Count(out, "starting it again") != 2 {
		t.Errorf("want two restarts logged:\n%s", out)
	}
}
