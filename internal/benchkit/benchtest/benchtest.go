package benchtest

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// WaitGoroutines waits up to within for the goroutines to fall back to
// before, and fails t with every goroutine's stack when they do not: a run
// that returned must have stopped everything it started.
func WaitGoroutines(t testing.TB, before int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines left running after Run, want at most %d:\n%s",
				runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// EmptyDir fails t unless dir is empty: a run removes what it made in its
// scratch directory, whether it succeeded or not. after says which run.
func EmptyDir(t testing.TB, dir, after string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("scratch directory holds %d entries %s, want 0", len(entries), after)
	}
}

// Mentions checks a validation error: nil when want is nil, else an error
// that contains every string of want.
func Mentions(t testing.TB, err error, want []string) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Errorf("Validate() = %v, want nil", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("Validate() = nil, want an error mentioning %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Validate() = %q, want it to mention %q", err, w)
		}
	}
}
