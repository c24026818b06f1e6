package benchtest

import (
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// WaitGoroutines waits up to within for the goroutines to fall back to
// before, and fails t with every goroutine's stack when they do not: a run
// that returned must have stopped everything it started.
func WaitGoroutines(t testing.TB, before int, within time.Duration) {
	t.Helper()
	WaitGoroutinesExcept(t, before, within)
}

// WaitGoroutinesExcept is WaitGoroutines not counting the goroutines whose
// stack holds one of the functions named in except: goroutines a library
// leaves behind on a path it does not clean up, that nothing of ours can
// stop. Each caller says which path that is.
func WaitGoroutinesExcept(t testing.TB, before int, within time.Duration, except ...string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := runtime.NumGoroutine()
		if len(except) > 0 {
			_, left = goroutines(except)
		}
		if left <= before {
			return
		}
		if time.Now().After(deadline) {
			stacks, left := goroutines(except)
			t.Errorf("%d goroutines left running after Run, want at most %d:\n%s", left, before, stacks)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// goroutines returns every goroutine's stack and how many there are, not
// counting those whose stack names a function in except.
func goroutines(except []string) (string, int) {
	var kept []string
	for _, g := range Stacks() {
		if !slices.ContainsFunc(except, func(fn string) bool { return strings.Contains(g, fn+"(") }) {
			kept = append(kept, g)
		}
	}
	return strings.Join(kept, "\n\n"), len(kept)
}

// Stacks returns the stack of every goroutine of the process, one string
// each, as runtime.Stack writes them.
func Stacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
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
